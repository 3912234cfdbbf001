"""A finding must not depend on which other rules run: TT220's receiver
made in another file is answered by the one-expression model, and past its
bounds by the loaders' model, which the worker rules build anyway. Before,
``--select TT220`` alone lost the finding that the default rules reported
(paperSpectralTranscoder's ``self.model.eval`` in a trainer whose model
comes from another file's constructor call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli
from torchtrap.values import program

NETS = """\
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
"""
TRAINERS = """\
class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def validate(self):
        self.model.eval
        return [self.model(x) for x, _ in self.loader]
"""
MAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from nets import Env, Net
from trainers import Trainer

if __name__ == "__main__":
    data = TensorDataset(torch.randn(8, 4), torch.zeros(8))
    Trainer({model}, DataLoader(data, batch_size=4)).validate()
"""


def _lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], *select: str) -> set[int]:
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "-j", "1", "--format", "json", *select])
    found = json.loads(capsys.readouterr().out)["findings"]
    return {
        f["range"]["start"]["line"]
        for f in found
        if f["code"] == "TT220" and f["path"].endswith("trainers.py")
    }


@pytest.mark.parametrize("bound", [program.MAX_IMPORTED_BYTES, 10])
@pytest.mark.parametrize(("model", "expected"), [("Net()", {7}), ("Env()", set())])
def test_select_alone_finds_what_the_default_rules_find(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    bound: int,
    model: str,
    expected: set[int],
) -> None:
    # bound 10: the one-expression model refuses every file, as on a large project
    monkeypatch.setattr(program, "MAX_IMPORTED_BYTES", bound)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "nets.py").write_text(NETS)
    (tmp_path / "trainers.py").write_text(TRAINERS)
    (tmp_path / "main.py").write_text(MAIN.format(model=model))
    alone = _lines(tmp_path, capsys, "--select", "TT220")
    everything = _lines(tmp_path, capsys)
    assert alone == everything == expected
