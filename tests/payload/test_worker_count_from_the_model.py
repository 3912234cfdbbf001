"""The file's worker rules ask the whole-program model for a worker count
the file alone cannot tell (issue 33: `def batches(workers=0)` whose only
call is `batches()` was "may be > 0"). Each with its twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

DATA = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor(self.rng.random())


def batches(workers=0):
    return DataLoader(Noise(), batch_size=2, num_workers=workers)


for batch in {call}:
    print(batch)
"""


def _tt101(tmp_path: Path, call: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "data.py").write_text(DATA.format(call=call))
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT101"])
    return json.loads(capsys.readouterr().out)["findings"]


def test_the_only_call_keeps_the_default_of_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tt101(tmp_path, "batches()", capsys) == []


def test_a_call_with_four_workers_is_certain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finding,) = _tt101(tmp_path, "batches(workers=4)", capsys)
    assert finding["severity"] == "error"
    assert "all draw the same numbers" in finding["message"]
    (row,) = [r for r in finding["related"] if r["range"]["start"]["line"] == 18]
    assert (
        row["message"] == "DataLoader with num_workers=workers copies the dataset into each worker"
    )


def test_a_count_only_known_at_run_time_stays_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finding,) = _tt101(tmp_path, "batches(int(input()))", capsys)
    assert finding["severity"] == "warning"
    assert "would draw" in finding["message"]


def test_one_call_with_workers_among_others_is_certain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finding,) = _tt101(tmp_path, "[*batches(), *batches(workers=4)]", capsys)
    assert finding["severity"] == "error"


def test_two_calls_without_workers_are_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tt101(tmp_path, "[*batches(), *batches(workers=0)]", capsys) == []
