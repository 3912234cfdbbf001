"""What `run` costs a DataLoader's workers each epoch (issue 36, item 11):
TT107's memory reads (6 ms of CPU each, smaps_rollup) happen in a loader's
first epoch only; later epochs' workers only fingerprint their generators.
The measured overhead is in docs/benchmarks.md ("Issue 36: run round 2")."""

from __future__ import annotations

from typing import Any

import pytest

from torchtrap.runtime_hooks import describe, events, loaders


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[int]:
    counted: list[int] = []

    def private_memory() -> int:
        counted.append(1)
        return 1 << 20

    monkeypatch.setattr(describe, "private_memory", private_memory)
    monkeypatch.setattr(events.STATE, "result_dir", str(tmp_path))
    monkeypatch.setattr(loaders._Worker, "rngs", {})
    monkeypatch.setattr(loaders._Worker, "items", [])
    monkeypatch.setattr(loaders._Worker, "memory", [])
    return counted


def _batches(epoch: int, n: int) -> None:
    ctx = {"loader": 1, "epoch": epoch, "workers": 2, "iterable": False}
    loaders._Worker.ctx = ctx
    loaders._Worker.batches = 0
    for _ in range(n):
        loaders._observe(ctx, [0])


def test_later_epochs_read_no_memory(reads: list[int]) -> None:
    _batches(epoch=1, n=70)
    assert reads == []


def test_twin_the_first_epoch_reads_it_at_batches_1_8_64(reads: list[int]) -> None:
    _batches(epoch=0, n=70)
    assert len(reads) == 3
