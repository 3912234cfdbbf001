"""TT220 through the whole-program model: a bare ``model.eval`` or
``opt.zero_grad`` whose receiver is a parameter filled by a factory in
another file (helper-8's real misses were all of this shape); a class of
the project with its own ``eval`` stays silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.drop(x))


class Env:
    def eval(self):
        return 0

    def zero_grad(self):
        return 0


def build(lr):
    net = Net()
    return net, torch.optim.SGD(net.parameters(), lr=lr)
"""
TRAIN = """\
from model import Env, build


def evaluate(model):
    model.eval


def step(opt):
    opt.zero_grad


net, opt = build(0.1)
evaluate({model})
step({opt})
"""


@pytest.mark.parametrize(
    ("model", "opt", "expected"),
    [("net", "opt", {4, 8}), ("Env()", "Env()", set()), ("net", "Env()", {4})],
)
def test_bare_methods_on_receivers_made_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, opt: str, expected: set[int]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(TRAIN.format(model=model, opt=opt))
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT220"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert {f["range"]["start"]["line"] for f in found} == {line + 1 for line in expected}
    if expected:
        cli.main(["check", str(tmp_path), "--no-cache", "--select", "TT220", "--fix"])
        fixed = (tmp_path / "train.py").read_text()
        assert "model.eval()" in fixed
        capsys.readouterr()
        cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT220"])
        assert json.loads(capsys.readouterr().out)["findings"] == []
