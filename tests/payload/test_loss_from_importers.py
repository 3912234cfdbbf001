"""TT213 through the files that import the linted one (issue 34, B023's
shape): the criterion is installed by train.py (``model.add_loss_op(...)``),
the prediction is ``self.__call__(x)``, the model is wrapped in
``nn.DataParallel``; each with a near-miss twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

MODEL = """\
import torch.nn as nn


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.softmax = nn.{last}

    def add_loss_op(self, loss_op):
        self.loss_op = loss_op

    def forward(self, x):
        return self.softmax(self.fc(x))

    def run_epoch(self, batches):
        for x, y in batches:
            y_pred = self.__call__(x)
            loss = self.loss_op(y_pred, y)
            loss.backward()
"""
TRAIN = """\
import torch.nn as nn
from model import TextCNN


def main(batches):
    model = TextCNN()
    model.add_loss_op(nn.{loss}())
    model.run_epoch(batches)
"""
WRAPPED = """\
import torch.nn as nn
from model import TextCNN


def step(x, y):
    net = nn.DataParallel(TextCNN())
    loss = nn.{loss}()(net(x), y)
    loss.backward()
"""


def _lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], **files: str) -> list[str]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT213"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return sorted(f"{Path(f['path']).name}:{f['range']['start']['line']}" for f in found)


def test_criterion_installed_by_the_importer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _lines(
        tmp_path,
        capsys,
        model=MODEL.format(last="Softmax(dim=1)"),
        train=TRAIN.format(loss="NLLLoss"),
    )
    assert found == ["model.py:19"]


@pytest.mark.parametrize(
    ("last", "loss"),
    [("Softmax(dim=1)", "MSELoss"), ("LogSoftmax(dim=1)", "NLLLoss")],
)
def test_criterion_installed_by_the_importer_near_misses(
    tmp_path: Path, last: str, loss: str, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _lines(tmp_path, capsys, model=MODEL.format(last=last), train=TRAIN.format(loss=loss))
    assert found == []


def test_a_data_parallel_wrapper_returns_the_modules_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = MODEL.format(last="Softmax(dim=1)")
    assert _lines(tmp_path, capsys, model=model, step=WRAPPED.format(loss="NLLLoss")) == [
        "step.py:7"
    ]


def test_a_data_parallel_wrapper_near_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = MODEL.format(last="LogSoftmax(dim=1)")
    assert _lines(tmp_path, capsys, model=model, step=WRAPPED.format(loss="NLLLoss")) == []


SEQUENTIAL = """\
import torch.nn as nn


class CharCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 3), {last})

    def add_loss_op(self, loss_op):
        self.loss_op = loss_op

    def forward(self, x):
        return self.fc(x)

    def run_epoch(self, batches):
        for x, y in batches:
            loss = self.loss_op(self.__call__(x), y)
            loss.backward()
"""


@pytest.mark.parametrize(
    ("last", "expected"), [("nn.Softmax()", ["model.py:17"]), ("nn.ReLU()", [])]
)
def test_a_sequential_that_ends_in_softmax(
    tmp_path: Path, last: str, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    model = SEQUENTIAL.format(last=last)
    train = TRAIN.format(loss="CrossEntropyLoss").replace("TextCNN", "CharCNN")
    assert _lines(tmp_path, capsys, model=model, train=train) == expected
