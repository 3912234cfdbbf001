"""The tensor-probability property of the value layer, step by step, with
near misses (what is only sometimes a probability, callers that disagree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.values.helpers import probes, project_probes
from torchtrap.values import Certainty, Kind


def _bare(code: str) -> list[str | None]:
    out = []
    for value in probes(code):
        prob = value.bare_probability()
        out.append(prob.kind if prob else None)
    return out


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import torch\nprobe(torch.softmax(x, 1))", ["softmax"]),
        ("import torch\np = torch.sigmoid(x)\nprobe(p.cuda().view(-1)[0])", ["sigmoid"]),
        (
            "import torch\np = torch.sigmoid(x)\nprobe(p + 1e-8)\nprobe(p.clamp(min=1e-6))",
            [None, None],
        ),
        (
            "import torch\np = torch.softmax(x, 1)\nprobe((p * onehot).sum(1))\nprobe(p * onehot)",
            ["softmax", None],
        ),
        ("import torch\np = torch.softmax(x, 1)\nprobe(p.sum(1))", [None]),
        ("probe(y / y.sum(1, keepdim=True))\nprobe(y / y.sum())", ["normalised", None]),
        (
            "import torch\np = torch.softmax(x, 1)\n"
            "probe(torch.cat((p, p), 0))\nprobe(torch.cat((p, x)))",
            ["softmax", None],
        ),
        (
            "from torch.distributions import Categorical\nprobe(Categorical(logits=z).probs)",
            ["softmax"],
        ),
        (
            "import torch.distributions as D\nimport torch\n"
            "probe(D.Binomial(10, logits=z).probs)\n"
            "probe(D.Binomial(10, torch.sigmoid(z)).probs)\n"
            "probe(D.Normal(z, 1.0).mean)",
            ["sigmoid", "sigmoid", None],
        ),
        ("import torch.nn as nn\nsm = nn.Softmax(1).cuda()\nprobe(sm(x))", ["softmax"]),
        ("import torch\np, q = torch.softmax(x, 1), x\nprobe(p)\nprobe(q)", ["softmax", None]),
        (
            "import torch\nprobe((p := torch.sigmoid(x)))\nprobe(1 - torch.sigmoid(x))",
            ["sigmoid", "sigmoid"],
        ),
        ("import torch.nn.functional as F\nprobe(F.log_softmax(x, 1))", [None]),
    ],
)
def test_one_module_steps(code: str, expected: list[str | None]) -> None:
    assert _bare(code) == expected


def test_a_branch_gives_may_and_both_branches_definite() -> None:
    one, both = probes(
        """
        import torch

        def f(x, c, q):
            if c:
                p = torch.softmax(x, 1)
            else:
                p = q
            probe(p)
            if c:
                r = torch.softmax(x, 1)
            else:
                r = torch.sigmoid(x)
            probe(r)
        """
    )
    assert one.probability is not None and one.certainty is Certainty.MAY
    assert one.bare_probability() is None
    assert both.certainty is Certainty.DEFINITE and both.probability is not None


def test_a_name_changed_in_place_is_unknown() -> None:
    (value,) = probes("import torch\np = torch.softmax(x, 1)\np.clamp_(min=1e-6)\nprobe(p)")
    assert value.probability is None


def test_log_probability_and_module_outputs() -> None:
    logp, module = probes(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Sequential(nn.Linear(4, 2), nn.Softmax(dim=1))

            def forward(self, x):
                probe(F.log_softmax(x, 1))
                probe(self.head)
        """
    )
    assert logp.log_probability is not None and logp.log_probability.kind == "log_softmax"
    assert module.kind is Kind.MODULE
    assert module.output is not None and module.output.probability is not None


def test_across_files_return_and_forward_through_a_local_name(tmp_path: Path) -> None:
    files = {
        "nets.py": """
            import torch
            import torch.nn as nn

            class Disc(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

                def forward(self, x):
                    out = self.model(x)
                    return out

            def scores(z):
                p = torch.softmax(z, -1)
                return p

            disc = Disc()
        """,
        "train.py": """
            from nets import Disc, disc, scores

            probe(disc(x))
            probe(scores(z))
            probe(Disc()(x))
        """,
    }
    values = project_probes(files, "train.py", tmp_path)
    kinds = [v.bare_probability().kind if v.bare_probability() else None for v in values]
    assert kinds == ["sigmoid", "softmax", "sigmoid"]


def test_a_parameter_is_the_join_of_its_call_sites(tmp_path: Path) -> None:
    agree = {
        "loss.py": """
            import torch

            def nll(p):
                probe(p)

            nll(torch.sigmoid(a))
            nll(torch.sigmoid(b))
        """
    }
    disagree = {
        "loss.py": """
            import torch

            def nll(p):
                probe(p)

            nll(torch.sigmoid(a))
            nll(b)
        """
    }
    (same,) = project_probes(agree, "loss.py", tmp_path)
    (mixed,) = project_probes(disagree, "loss.py", tmp_path)
    assert same.bare_probability() is not None
    assert mixed.probability is not None and mixed.certainty is Certainty.MAY
    assert "some callers" in mixed.assumed
    assert mixed.bare_probability() is None


def test_an_unresolved_import_is_unknown(tmp_path: Path) -> None:
    files = {"train.py": "from elsewhere import scores\nprobe(scores(z))\n"}
    (value,) = project_probes(files, "train.py", tmp_path)
    assert not value.known


def test_recursion_is_bounded() -> None:
    (value,) = probes(
        """
        def f(p):
            return f(p)

        x = x
        probe(f(x))
        """
    )
    assert not value.known


def test_a_tuple_returned_and_unpacked_across_files(tmp_path: Path) -> None:
    files = {
        "scores.py": """
            import torch

            def scores(x):
                p = torch.softmax(x, -1)
                return p, x.topk(1)
        """,
        "train.py": """
            import torch
            from scores import scores

            p, top = scores(x)
            probe(p)
            probe(top)
            probe(scores(x)[0])
            probe(torch.sum(p * onehot, dim=1))
        """,
    }
    values = project_probes(files, "train.py", tmp_path)
    kinds = [v.bare_probability().kind if v.bare_probability() else None for v in values]
    assert kinds == ["softmax", None, "softmax", "softmax"]
