"""Issue 34: TT207 follows the model through calls across files. The epoch
loop in train.py passes its own parameter to ``evaluate(model, loader)`` in
utils.py (a ``no_grad`` pass, no backward); the model is built in main().
Near-miss twins: the caller sets eval, evaluate sets it, no Dropout/BatchNorm,
a caller that rebinds the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

MODEL = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.dropout = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.dropout(self.fc1(x).relu()))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x)
"""
UTILS = """\
import torch


def evaluate(model, loader):
    correct = 0
    total = 0
    with torch.no_grad():
        for images, labels in loader:
            outputs = model(images)
            correct += (outputs.argmax(1) == labels).sum().item()
            total += labels.size(0)
    return correct / total
"""
UTILS_SETS_EVAL = UTILS.replace("    correct = 0\n", "    model.eval()\n    correct = 0\n", 1)
TRAIN = """\
import torch
import torch.nn.functional as F

from model import Net
from utils import evaluate


def train(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        acc = evaluate(model, val_loader)
        print(f"epoch {epoch}: val acc {acc:.3f}")


def main(train_loader, val_loader):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train(model, train_loader, val_loader, optimizer, 10)


if __name__ == "__main__":
    main([], [])
"""
TRAIN_SETS_EVAL = TRAIN.replace(
    "        acc = evaluate(model, val_loader)\n",
    "        model.eval()\n        acc = evaluate(model, val_loader)\n",
)
TRAIN_PLAIN = TRAIN.replace("import Net", "import Plain").replace("Net()", "Plain()")
TRAIN_REBOUND = TRAIN.replace(
    "        acc = evaluate(model, val_loader)\n",
    "        model = model.module\n        acc = evaluate(model, val_loader)\n",
)
TRAIN_CYCLE = TRAIN.replace(
    '        print(f"epoch {epoch}: val acc {acc:.3f}")\n',
    '        print(f"epoch {epoch}: val acc {acc:.3f}")\n'
    "        train(model, train_loader, val_loader, optimizer, epochs - 1)\n",
)
TRAIN_METHOD = """\
import torch
import torch.nn.functional as F

from model import Net
from utils import evaluate


class Trainer:
    def __init__(self, epochs):
        self.epochs = epochs

    def fit(self, model, train_loader, val_loader, optimizer):
        for epoch in range(self.epochs):
            model.train()
            for images, labels in train_loader:
                optimizer.zero_grad()
                F.cross_entropy(model(images), labels).backward()
                optimizer.step()
            acc = evaluate(model, val_loader)
            print(epoch, acc)


def main(train_loader, val_loader):
    model = Net()
    trainer = Trainer(10)
    trainer.fit(model, train_loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1))


if __name__ == "__main__":
    main([], [])
"""


def _tt207(tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> list:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in {"model.py": MODEL, **files}.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT207"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    return [(Path(f["path"]).name, f["range"]["start"]["line"]) for f in findings]


@pytest.mark.parametrize("train", [TRAIN, TRAIN_METHOD], ids=["function", "method"])
def test_evaluate_called_from_the_epoch_loop_of_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], train: str
) -> None:
    found = _tt207(tmp_path, {"train.py": train, "utils.py": UTILS}, capsys)
    assert found == [("utils.py", 9)]


@pytest.mark.parametrize(
    ("train", "utils", "note"),
    [
        (TRAIN_SETS_EVAL, UTILS, "the caller sets eval before the call"),
        (TRAIN, UTILS_SETS_EVAL, "evaluate sets eval itself"),
        (TRAIN_PLAIN, UTILS, "the model has neither Dropout nor BatchNorm"),
        (TRAIN_REBOUND, UTILS, "the caller rebinds the model: unknown"),
        (TRAIN_CYCLE, UTILS, "a caller that calls itself: bounded, unknown"),
    ],
)
def test_near_misses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], train: str, utils: str, note: str
) -> None:
    assert _tt207(tmp_path, {"train.py": train, "utils.py": utils}, capsys) == [], note
