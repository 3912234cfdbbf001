"""TT216 with a model class defined in another file (coRNN's adding task,
issue 34): the whole-program model says whether the model has a layer that
behaves by mode. Linear layers only: silent; a Dropout one submodule down:
reported as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

MODEL = """\
from torch import nn


class Cell(nn.Module):
    def __init__(self, n_hid, dt):
        super().__init__()
        self.dt = dt
        self.i2h = nn.Linear(n_hid, n_hid){extra}

    def forward(self, x):
        return x + self.dt * self.i2h(x)


class Net(nn.Module):
    def __init__(self, n_hid, dt):
        super().__init__()
        self.n_hid = n_hid
        self.cell = Cell(n_hid, dt)
        self.readout = nn.Linear(n_hid, 1)

    def forward(self, x):
        return self.readout(self.cell(x))
"""
TASK = """\
import argparse

import torch
from torch import nn, optim

import model

parser = argparse.ArgumentParser()
parser.add_argument("--dt", type=float, default=0.06)
args = parser.parse_args()
model = model.Net(8, args.dt)
objective = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=0.01)


def test():
    model.eval()
    with torch.no_grad():
        return objective(model(torch.randn(4, 8)), torch.zeros(4, 1)).item()


def train():
    model.train()
    for i in range(1000):
        optimizer.zero_grad()
        loss = objective(model(torch.randn(4, 8)), torch.zeros(4, 1))
        loss.backward()
        optimizer.step()
        if i % 100 == 0:
            print(test())


if __name__ == "__main__":
    train()
"""


def _findings(tmp_path: Path, extra: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "model.py").write_text(MODEL.format(extra=extra))
    (tmp_path / "task.py").write_text(TASK)
    capsys.readouterr()
    cli.main(
        ["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT216"]
        + ["--show-hints"]
    )
    return json.loads(capsys.readouterr().out)["findings"]


def test_a_linear_only_model_from_another_file_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _findings(tmp_path, "", capsys) == []


@pytest.mark.parametrize(
    "extra",
    ["\n        self.drop = nn.Dropout(0.1)", "\n        self.norm = nn.BatchNorm1d(n_hid)"],
)
def test_a_mode_layer_one_submodule_down_is_reported(
    tmp_path: Path, extra: str, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _findings(tmp_path, extra, capsys)
    assert [(f["range"]["start"]["line"], f["severity"]) for f in found] == [(30, "warning")]
