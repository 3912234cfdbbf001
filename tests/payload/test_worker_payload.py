"""The worker payload on the whole program (issue 33's probes): what a
DataLoader's workers receive through helpers, other files, owned objects,
bound methods and factories. Each case has a near-miss twin that differs
in one place and must stay silent."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from torchtrap import cli
from torchtrap.findings import Applicability

RAYS = """\
import torch
from config import DEVICE


def make_rays(n, device):
    return torch.randn(n, 3).to(device)


class Jitter:
    def __init__(self):
        self.table = make_rays(4, DEVICE)
"""
DATA = """\
from torch.utils.data import DataLoader, Dataset

from rays import Jitter


class Rays(Dataset):
    def __init__(self):
        self.aug = Jitter()

    def __getitem__(self, i):
        return self.aug.table[i]

    def __len__(self):
        return 4


def build_loader(ds, workers):
    return DataLoader(ds, num_workers=workers)


train = build_loader(Rays(), {workers})
"""
LITERAL = """\
from torch.utils.data import DataLoader

from data import Rays

loader = DataLoader(Rays(), batch_size=2, num_workers=4)
"""
DEFAULT = """\
from torch.utils.data import DataLoader

from data import Rays


def batches(ds, workers=0):
    return DataLoader(ds, num_workers=workers)


loader = batches(Rays(){extra})
"""
MODELS = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""
PREP = """\
from models import Net


class Prefetch:
    def __init__(self, fn):
        self.fn = fn


class Detector:
    def __init__(self):
        self.net = Net()

    def pre_process(self, x):
        return x
"""
DETECT = """\
from torch.utils.data import DataLoader, Dataset

from prep import Detector, Prefetch


class Images(Dataset):
    def __init__(self, prep):
        self.prep = prep

    def __getitem__(self, i):
        return self.prep.fn(i)

    def __len__(self):
        return 10


if __name__ == "__main__":
    det = Detector()
    loader = DataLoader(Images(Prefetch({fn})), num_workers=2)
"""


def _check(tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str], *more: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", *more])
    report = json.loads(capsys.readouterr().out)
    return [
        (Path(f["path"]).name, f["range"]["start"]["line"], f["code"], f)
        for f in report["findings"]
    ]


def _codes(found: list[tuple[str, int, str, dict]]) -> set[tuple[str, int, str]]:
    return {(name, line, code) for name, line, code, _ in found}


@pytest.mark.parametrize(("device", "expected"), [("cuda", True), ("cpu", False)])
def test_cuda_tensor_from_a_helper_with_the_device_in_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str, expected: bool
) -> None:
    files = {
        "config.py": f'DEVICE = "{device}"\n',
        "rays.py": RAYS,
        "data.py": DATA.format(workers=4),
    }
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    assert (("data.py", 18, "TT103") in _codes(found)) is expected, found
    if expected:
        finding = next(f for name, _, _, f in found if name == "data.py")
        assert "num_workers=4" in finding["message"]
        notes = [(r["path"] and Path(r["path"]).name, r["message"]) for r in finding["related"]]
        assert ("rays.py", "the CUDA tensor made here") in notes
        assert any("built from here, with 4 workers" in m for _, m in notes)
        # The count comes from the caller: changing it here would change every caller's.
        assert finding["fixes"] == []


def test_two_calls_of_one_factory_keep_their_worker_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"config.py": 'DEVICE = "cuda"\n', "rays.py": RAYS, "data.py": DATA.format(workers=0)}
    assert _check(tmp_path, files, capsys, "--select", "TT103") == []


@pytest.mark.parametrize(("extra", "expected"), [("", False), (", workers=2", True)])
def test_a_worker_count_from_a_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, expected: bool
) -> None:
    files = {
        "config.py": 'DEVICE = "cuda"\n',
        "rays.py": RAYS,
        "data.py": DATA.format(workers=0),
        "loaders.py": DEFAULT.format(extra=extra),
    }
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    assert (("loaders.py", 7, "TT103") in _codes(found)) is expected, found


def test_the_unsafe_fix_sets_a_literal_count_to_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "config.py": 'DEVICE = "cuda"\n',
        "rays.py": RAYS,
        "data.py": DATA.format(workers=0),
        "train.py": LITERAL,
    }
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    finding = next(f for name, _, _, f in found if name == "train.py")
    # A worker count is the program's speed: never changed by a safe fix.
    assert [fix["applicability"] for fix in finding["fixes"]] == [Applicability.UNSAFE.value]
    assert "(unsafe: loading is no longer parallel" in finding["fixes"][0]["title"]
    cli.main(["check", str(tmp_path), "--no-cache", "--select", "TT103", "--fix"])
    assert (tmp_path / "train.py").read_text() == LITERAL  # check --fix leaves it
    fixes = ["--fix", "--unsafe-fixes"]
    cli.main(["check", str(tmp_path), "--no-cache", "--select", "TT103", *fixes])
    fixed = (tmp_path / "train.py").read_text()
    ast.parse(fixed)
    assert "num_workers=0" in fixed
    assert _check(tmp_path, files | {"train.py": fixed}, capsys, "--select", "TT103") == []
    cli.main(["check", str(tmp_path), "--no-cache", "--select", "TT103", *fixes])
    assert (tmp_path / "train.py").read_text() == fixed  # idempotent


@pytest.mark.parametrize(("fn", "expected"), [("det.pre_process", True), ("len", False)])
def test_a_bound_method_whose_owner_holds_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fn: str, expected: bool
) -> None:
    files = {"models.py": MODELS, "prep.py": PREP, "detect.py": DETECT.format(fn=fn)}
    found = _check(tmp_path, files, capsys, "--select", "TT104")
    assert (("detect.py", 19, "TT104") in _codes(found)) is expected, found
    if expected:
        finding = next(f for _, _, _, f in found)
        assert "`Net`" in finding["message"]
        assert finding["severity"] == "warning"
