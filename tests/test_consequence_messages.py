"""Messages state what happens, in the user's terms, within 120 characters;
related information points at other lines (the DataLoader, the softmax),
never at the flagged code with prose a Problems panel cuts off."""

from __future__ import annotations

import textwrap

from torchtrap.config import Config
from torchtrap.engine import lint
from torchtrap.findings import Finding, Severity
from torchtrap.rules import RULES_BY_CODE


def _one(code: str, source: str, config: Config | None = None) -> Finding:
    rules = [RULES_BY_CODE[code]]
    (finding,) = lint(textwrap.dedent(source), "train.py", config, rules=rules)
    assert len(finding.message) <= 120, finding.message
    return finding


def _related_lines(finding: Finding) -> list[tuple[int, str]]:
    return [(r.range.start.line, r.message) for r in finding.related]


DATASET = """
    import torch
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Data(Dataset):
        def __init__(self):
            self.table = torch.zeros(10).cuda()
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.table[i] + self.rng.random() + np.random.randint(5)

    loader = DataLoader(Data(), num_workers=4)
"""


def test_tt103_says_crash_under_fork_and_zeros_under_spawn() -> None:
    finding = _one("TT103", DATASET)
    assert finding.message == (
        "`self.table` is put on the GPU (`.cuda()`) in a Dataset: "
        "DataLoader workers crash under fork, may read zeros under spawn"
    )
    assert _related_lines(finding) == [
        (17, "DataLoader with num_workers=4 copies the dataset into each worker")
    ]


def test_tt101_and_tt102_point_only_at_the_dataloader() -> None:
    tt101 = _one("TT101", DATASET)
    assert tt101.message.endswith("copied into 4 DataLoader workers: all draw the same numbers")
    assert [line for line, _ in _related_lines(tt101)] == [17]
    tt102 = _one("TT102", DATASET, Config(torch_version="1.8"))
    assert "draws the same numbers in all 4 DataLoader workers on torch" in tt102.message
    assert [line for line, _ in _related_lines(tt102)] == [17]


def test_tt106_says_the_workers_crash() -> None:
    finding = _one(
        "TT106",
        """
        from torch.utils.data import DataLoader

        loader = DataLoader(range(8), num_workers=2)
        for batch in loader:
            print(batch)
        """,
    )
    assert finding.message == (
        "DataLoader workers start outside a `__main__` guard: "
        "under spawn each worker re-runs the script and crashes"
    )
    assert _related_lines(finding) == [(4, "the DataLoader (num_workers=2)")]


def test_tt201_names_the_softmax_line_and_no_canned_numbers() -> None:
    finding = _one(
        "TT201",
        """
        import torch

        def loss(logits, target):
            probs = torch.softmax(logits, -1)
            return -torch.log(probs)[target]
        """,
    )
    assert "-inf and a NaN gradient when a probability underflows" in finding.message
    assert _related_lines(finding) == [(5, "the softmax is computed here")]
    assert not any("logits [0, 120]" in m for _, m in _related_lines(finding))


def test_tt201_and_tt213_in_a_no_grad_evaluation_name_the_metric_not_a_gradient() -> None:
    # Issue 34/35: under no_grad there is no gradient to poison.
    for header in ("@torch.no_grad()\ndef evaluate(model, x, y):", "def evaluate(model, x, y):"):
        body = "    with torch.no_grad():\n" if header.startswith("def") else "    if True:\n"
        source = (
            "import torch\nimport torch.nn.functional as F\n\n"
            + header
            + "\n"
            + body
            + "        probs = torch.softmax(model(x), -1)\n"
            + "        nll = -torch.log(probs).gather(1, y[:, None]).mean()\n"
            + "        ce = F.cross_entropy(torch.softmax(model(x), -1), y)\n"
            + "    return nll.item(), ce.item()\n"
        )
        tt201 = _one("TT201", source)
        assert tt201.message.endswith(": -inf in the metric or score when a probability underflows")
        assert "gradient" not in tt201.message
        tt213 = _one("TT213", source)
        assert tt213.message.endswith("it normalises twice and the loss value is off")


def test_tt201_and_tt213_after_model_eval_without_backward_name_the_metric() -> None:
    # Issue 35 item 3: an evaluation function (model.eval(), no backward) trains nothing.
    source = (
        "import torch\nimport torch.nn.functional as F\n\n"
        "def validate(model, x, y):\n"
        "    model.eval()\n"
        "    probs = torch.softmax(model(x), -1)\n"
        "    nll = -torch.log(probs).gather(1, y[:, None]).mean()\n"
        "    ce = F.cross_entropy(torch.softmax(model(x), -1), y)\n"
        "    return nll.item(), ce.item()\n"
    )
    assert _one("TT201", source).message.endswith(
        ": -inf in the metric or score when a probability underflows"
    )
    assert _one("TT213", source).message.endswith("the loss value is off")
    # A backward in the same function: it trains, the gradient is what breaks.
    trains = source.replace("    return", "    (nll + ce).backward()\n    return")
    assert "-inf and a NaN gradient" in _one("TT201", trains).message
    assert _one("TT213", trains).message.endswith("training stalls")


def test_tt227_inside_no_grad_says_what_holds_there() -> None:
    # Issue 35 item 3: nothing is recorded under no_grad, so "gradients are still
    # recorded" is false there.
    redundant = _one(
        "TT227",
        """
        import torch

        @torch.no_grad()
        def predict(model, x):
            torch.no_grad()
            return model(x)
        """,
    )
    assert redundant.message.endswith("harmless here, grad mode is already off")
    assert redundant.severity is Severity.HINT
    outside = _one(
        "TT227",
        """
        import torch

        def predict(model, x):
            torch.no_grad()
            return model(x)
        """,
    )
    assert outside.message.endswith("gradients are still recorded")
    assert outside.severity is Severity.ERROR
