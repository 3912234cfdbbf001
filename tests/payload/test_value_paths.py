"""Issue 32: a finding that rests on a value from elsewhere shows the path
the value took (related rows, and the hover): each call it came out of,
then where it is made. Each with a near-miss twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

RAYS = """\
import torch

DEVICE = {device!r}


def make_rays(n, device):
    return torch.randn(n, 3, device=device)
"""
DATA = """\
from torch.utils.data import DataLoader, Dataset

from rays import DEVICE, make_rays


class Rays(Dataset):
    def __init__(self, n):
        self.rays = make_rays(n, DEVICE)

    def __len__(self):
        return len(self.rays)

    def __getitem__(self, i):
        return self.rays[i]


loader = DataLoader(Rays(64), batch_size=8, num_workers=4)
"""
NETS = """\
import torch.nn as nn
import torch.nn.functional as F


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def pi(self, x):
        return F.softmax(self.fc(x), dim=-1)
"""
LOSSES = """\
import torch

from nets import Policy


def first(net, x):
    return torch.log(net.pi(x)).mean()


def second(net, y):
    p = net.pi(y * 2)
    return torch.log(p).sum()


first(Policy(), torch.randn(2, 3))
second(Policy(), torch.randn(2, 3))
"""


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], select: str) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", select])
    return json.loads(capsys.readouterr().out)["findings"]


def _rows(finding: dict) -> list[tuple[str | None, int, str]]:
    return [
        (Path(r["path"]).name if r["path"] else None, r["range"]["start"]["line"], r["message"])
        for r in finding["related"]
    ]


def test_a_cuda_tensor_made_in_a_helper_of_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rays.py").write_text(RAYS.format(device="cuda"))
    (tmp_path / "data.py").write_text(DATA)
    (finding,) = _check(tmp_path, capsys, "TT103")
    assert finding["path"].endswith("data.py") and finding["range"]["start"]["line"] == 17
    assert _rows(finding) == [
        (None, 8, "made inside `make_rays()`, called here"),
        ("rays.py", 7, "the CUDA tensor made here"),
    ]


def test_the_same_helper_on_the_cpu_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rays.py").write_text(RAYS.format(device="cpu"))
    (tmp_path / "data.py").write_text(DATA)
    assert _check(tmp_path, capsys, "TT103") == []


def test_each_call_of_a_factory_names_its_own_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nets.py").write_text(NETS)
    (tmp_path / "losses.py").write_text(LOSSES)
    found = sorted(_check(tmp_path, capsys, "TT201"), key=lambda f: f["range"]["start"]["line"])
    assert [f["range"]["start"]["line"] for f in found] == [7, 12]
    made = ("nets.py", 11, "the softmax is computed here")
    # Not the calls at the bottom of the file that lead into first()/second().
    assert _rows(found[0]) == [(None, 7, "made inside `net.pi()`, called here"), made]
    assert _rows(found[1]) == [(None, 11, "made inside `net.pi()`, called here"), made]


def test_a_method_that_returns_logits_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nets.py").write_text(NETS.replace("F.softmax(self.fc(x), dim=-1)", "self.fc(x)"))
    (tmp_path / "losses.py").write_text(LOSSES)
    assert _check(tmp_path, capsys, "TT201") == []
