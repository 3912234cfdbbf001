"""TT101-TT103 beyond their own examples: ranges, related locations, fix
applicability and names, and a measurement that TT101's fix gives every
worker and every epoch its own streams."""

from __future__ import annotations

import ast
import json
import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchtrap.config import from_table
from torchtrap.engine import fix_source, lint
from torchtrap.findings import Applicability, Finding, Severity
from torchtrap.fixes.apply import apply_edits
from torchtrap.rules import get_rule


def _lint(code: str, rule: str, config: dict[str, str] | None = None) -> list[Finding]:
    cls = get_rule(rule)
    assert cls is not None
    source = textwrap.dedent(code)
    return [
        f for f in lint(source, "t.py", from_table(config or {}), rules=[cls]) if f.code == cls.code
    ]


def _fixed(code: str, rule: str, index: int = 0, config: dict[str, str] | None = None) -> str:
    findings = _lint(code, rule, config)
    assert findings
    return apply_edits(textwrap.dedent(code), findings[0].fixes[index].edits)


DATASET = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return index + self.rng.normal()
"""


# -- TT101 -------------------------------------------------------------------


def test_tt101_range_is_the_assignment_and_related_is_the_dataloader() -> None:
    code = DATASET + "\n\nloader = DataLoader(Noisy(), num_workers=4)\n"
    [finding] = _lint(code, "TT101")
    assert (finding.range.start.line, finding.range.start.column) == (7, 8)
    assert (finding.range.end.line, finding.range.end.column) == (7, 43)
    # Related information is the DataLoader only; the consequence is the message.
    (related,) = finding.related
    assert finding.message.endswith(
        "is copied into 4 DataLoader workers: all draw the same numbers"
    )
    assert (related.range.start.line, related.range.start.column) == (16, 9)
    assert related.message == "DataLoader with num_workers=4 copies the dataset into each worker"
    assert finding.fixes[0].applicability is Applicability.SAFE


def test_tt101_generator_in_a_base_class_is_reported_once() -> None:
    code = """\
        import random
        from torch.utils.data import DataLoader, Dataset


        class Base(Dataset):
            def __init__(self):
                self.rng = random.Random(0)


        class Flip(Base):
            def __len__(self):
                return 8

            def __getitem__(self, index):
                return index if self.rng.random() < 0.5 else -index


        class Flop(Base):
            def __len__(self):
                return 8

            def __getitem__(self, index):
                return self.rng.random()


        a = DataLoader(Flip(), num_workers=2)
        b = DataLoader(Flop(), num_workers=2)
        """
    [finding] = _lint(code, "TT101")
    assert finding.range.start.line == 7
    assert finding.severity is Severity.ERROR


def test_tt101_dataset_inside_a_subset_is_flagged_without_a_fix() -> None:
    code = DATASET + (
        "\n\nfrom torch.utils.data import Subset\n"
        "loader = DataLoader(Subset(Noisy(), range(8)), num_workers=2)\n"
    )
    [finding] = _lint(code, "TT101")
    assert finding.severity is Severity.ERROR
    assert finding.fixes == ()  # get_worker_info().dataset would be the Subset


def test_tt101_fix_picks_a_free_name_and_module_level_imports() -> None:
    code = """\
        import torch.utils.data as tud

        seed_worker = 3


        class Noisy(tud.Dataset):
            def __init__(self):
                from numpy.random import default_rng

                self.rng = default_rng(0)

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return self.rng.normal()


        loader = tud.DataLoader(Noisy(), num_workers=2)
        """
    fixed = _fixed(code, "TT101")
    ast.parse(fixed)
    assert "import numpy as np\n" in fixed  # the function-level import does not count
    assert "def _torchtrap_seed_worker(worker_id: int) -> None:" in fixed
    assert "info = tud.get_worker_info()" in fixed
    assert "info.dataset.rng = np.random.default_rng(info.seed)" in fixed
    assert "worker_init_fn=_torchtrap_seed_worker)" in fixed


def test_tt101_several_generators_get_distinct_seeds() -> None:
    code = DATASET.replace(
        "self.rng = np.random.default_rng(0)",
        "self.rng = np.random.default_rng(0)\n        self.rng2 = np.random.default_rng(1)",
    ).replace("self.rng.normal()", "self.rng.normal() + self.rng2.normal()") + (
        "\n\nloader = DataLoader(Noisy(), num_workers=2)\n"
    )
    findings = _lint(code, "TT101")
    assert [f.range.start.line for f in findings] == [7, 8]
    fixed, _ = fix_source(textwrap.dedent(code), "t.py", from_table({}), rules=[get_rule("TT101")])
    assert "info.dataset.rng = np.random.default_rng([info.seed, 0])" in fixed
    assert "info.dataset.rng2 = np.random.default_rng([info.seed, 1])" in fixed
    assert fixed.count("def seed_worker") == 1


@pytest.mark.parametrize(
    ("loader", "applicability"),
    [
        ("DataLoader(Noisy(), num_workers=2)", Applicability.SAFE),
        ("DataLoader(Noisy(), num_workers=2, worker_init_fn=init)", Applicability.UNSAFE),
        ("DataLoader(Noisy(), num_workers=2, **kwargs)", Applicability.UNSAFE),
        ("DataLoader(Noisy(), num_workers=2, worker_init_fn=lambda w: init(w))", None),
        ("DataLoader(Subset(Noisy(), [0]), num_workers=2)", None),
    ],
)
def test_tt101_fix_applicability(loader: str, applicability: Applicability | None) -> None:
    code = DATASET + f"\n\ndef init(worker_id):\n    pass\n\n\nloader = {loader}\n"
    [finding] = _lint(code, "TT101")
    if applicability is None:
        assert finding.fixes == ()
    else:
        assert [f.applicability for f in finding.fixes] == [applicability]
        fixed = apply_edits(textwrap.dedent(code), finding.fixes[0].edits)
        ast.parse(fixed)
        if "worker_init_fn=init" in code:
            assert "    init(worker_id)\n" in fixed  # chained, not dropped


def test_tt101_conditional_and_local_name_generators() -> None:
    code = """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self, seed=None):
                rng = np.random.default_rng(seed) if seed is not None else np.random.default_rng()
                self.rng = rng

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return self.rng.normal()


        loader = DataLoader(Noisy(), num_workers=2)
        """
    [finding] = _lint(code, "TT101")
    assert finding.range.start.line == 8


# -- TT102 -------------------------------------------------------------------

SEED_004 = """\
import numpy as np
from torch.utils.data import Dataset, DataLoader


class RandomDataset(Dataset):
    def __getitem__(self, index):
        return np.random.randint(0, 1000, 3)

    def __len__(self):
        return 16


loader = DataLoader(RandomDataset(), batch_size=2, num_workers=4)
"""


@pytest.mark.parametrize("version", [None, "1.9", "2.0.1", "nightly"])
def test_tt102_silent_unless_torch_is_known_older_than_1_9(version: str | None) -> None:
    config = {"torch-version": version} if version else {}
    assert _lint(SEED_004, "TT102", config) == []


def test_tt102_fires_on_old_torch_with_related_and_two_fixes() -> None:
    [finding] = _lint(SEED_004, "TT102", {"torch-version": "1.8.1"})
    assert finding.severity is Severity.ERROR
    assert finding.related[0].range.start.line == 13
    assert [f.applicability for f in finding.fixes] == [Applicability.SAFE, Applicability.UNSAFE]
    assert "generator=torch.Generator().manual_seed(0)" in _fixed(
        SEED_004, "TT102", 1, {"torch-version": "1.8.1"}
    )


# -- TT103 -------------------------------------------------------------------


def test_tt103_parameter_shadows_a_module_level_cuda_device() -> None:
    code = """\
        import torch
        from torch.utils.data import DataLoader, Dataset

        device = torch.device("cuda")


        class Table(Dataset):
            def __init__(self, data, device="cpu"):
                self.data = data.to(device)

            def __len__(self):
                return len(self.data)

            def __getitem__(self, index):
                return self.data[index]


        loader = DataLoader(Table(torch.zeros(4)), num_workers=2)
        """
    assert _lint(code, "TT103") == []
    assert len(_lint(code.replace('device="cpu"', 'device="cuda"'), "TT103")) == 1


def test_tt103_only_the_loaders_with_workers_get_num_workers_0() -> None:
    code = """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Table(Dataset):
            def __init__(self):
                self.data = torch.zeros(4, device="cuda")

            def __len__(self):
                return 4

            def __getitem__(self, index):
                return self.data[index]


        ds = Table()
        debug = DataLoader(ds, num_workers=0)
        train = DataLoader(ds, num_workers=8, persistent_workers=True)
        """
    [finding] = _lint(code, "TT103")
    assert finding.severity is Severity.ERROR
    loaders = [r for r in finding.related if r.message.startswith("DataLoader")]
    assert [r.range.start.line for r in loaders] == [18]
    fixed = apply_edits(textwrap.dedent(code), finding.fixes[0].edits)
    assert "debug = DataLoader(ds, num_workers=0)\n" in fixed
    assert "train = DataLoader(ds, num_workers=0, persistent_workers=False)\n" in fixed


# -- measured: TT101's fix gives each worker and each epoch its own streams --

STREAMS = """\
import json
import random
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Streams(Dataset):
    def __init__(self):
        self.a = np.random.default_rng(0)
        self.b = np.random.RandomState(1)
        self.c = random.Random(2)
        self.d = torch.Generator().manual_seed(3)
        self.e = torch.Generator().manual_seed(4)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        worker = torch.utils.data.get_worker_info().id
        own = {
            "default_rng": int(self.a.integers(2**32)),
            "RandomState": int(self.b.randint(0, 2**32, dtype=np.uint64)),
            "Random": self.c.getrandbits(32),
            "Generator": int(torch.randint(0, 2**32, (1,), generator=self.d)),
            "Generator2": int(torch.randint(0, 2**32, (1,), generator=self.e)),
        }
        # The worker's global streams, raw 32-bit outputs.
        glob = {
            "random": random.getrandbits(32),
            "torch": int(torch.randint(0, 2**32, (1,))),
        }
        return worker, own, glob


def main():
    torch.manual_seed(0)
    loader = DataLoader(
        Streams(),
        batch_size=None,
        num_workers=2,
        multiprocessing_context="fork",
    )
    epochs = []
    for _ in range(2):
        epoch = {}
        for worker, own, glob in loader:
            epoch.setdefault(str(worker), []).append([own, glob])
        epochs.append(epoch)
    json.dump(epochs, sys.stdout)


if __name__ == "__main__":
    main()
"""


def _measure(source: str, tmp_path: Path) -> dict[str, dict[str, bool]]:
    path = tmp_path / "streams.py"
    path.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    epochs = json.loads(done.stdout)
    out: dict[str, dict[str, bool]] = {}
    for kind in ("default_rng", "RandomState", "Random", "Generator", "Generator2"):

        def draws(epoch: int, worker: str, kind: str = kind) -> list[int]:
            return [own[kind] for own, _ in epochs[epoch][worker]]

        def globals_of(epoch: int, worker: str) -> set[int]:
            return {v for _, glob in epochs[epoch][worker] for v in glob.values()}

        out[kind] = {
            "distinct_across_workers": draws(0, "0") != draws(0, "1"),
            "new_next_epoch": draws(0, "0") != draws(1, "0"),
            # A stored stream that replays (or starts from the state of) a
            # global one shares raw outputs with it.
            "shares_global_outputs": any(
                set(draws(e, w)) & globals_of(e, w) for e in (0, 1) for w in ("0", "1")
            ),
        }
    return out


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="stored torch.Generator "
    "objects crash spawn workers (pytorch #146828); fork keeps the measurement portable",
)
def test_tt101_fix_measured_distinct_per_worker_and_epoch(tmp_path: Path) -> None:
    before = _measure(STREAMS, tmp_path)
    for kind, facts in before.items():
        assert not facts["distinct_across_workers"], kind
        assert not facts["new_next_epoch"], kind

    rule = get_rule("TT101")
    assert rule is not None
    fixed, count = fix_source(STREAMS, "streams.py", from_table({}), rules=[rule])
    assert count >= 1
    assert _lint(fixed, "TT101") == []
    after = _measure(fixed, tmp_path)
    for kind, facts in after.items():
        assert facts == {
            "distinct_across_workers": True,
            "new_next_epoch": True,
            "shares_global_outputs": False,
        }, (kind, fixed)


@pytest.mark.parametrize(
    ("move", "severity"),
    [
        ('.to("cuda")', Severity.ERROR),
        ('.to("cuda:0")', Severity.ERROR),
        ('.to(torch.device("cuda"))', Severity.ERROR),
        ('.to(torch.device("cuda", 0))', Severity.ERROR),
        ('.to(device="cuda", non_blocking=True)', Severity.ERROR),
        (".cuda(non_blocking=True)", Severity.ERROR),
        ('.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))', Severity.WARNING),
        ('.to("cpu")', None),
        (".to(torch.float16)", None),
        ('.to(torch.device("cpu"))', None),
        (".to(self.data.device)", None),
        (".cuda().cpu()", None),
        (".cuda().tolist()", None),
    ],
)
def test_tt103_device_spellings(move: str, severity: Severity | None) -> None:
    code = f"""\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Points(Dataset):
            def __init__(self, data):
                self.data = data

            def __len__(self):
                return len(self.data)

            def __getitem__(self, index):
                return self.data[index]{move}


        loader = DataLoader(Points(torch.randn(8, 2)), num_workers=4)
        """
    findings = _lint(code, "TT103")
    if severity is None:
        assert findings == []
        return
    [finding] = findings
    assert finding.severity is severity
    fixed = _fixed(code, "TT103", 1)  # keep it on the CPU
    assert "return self.data[index]\n" in fixed
