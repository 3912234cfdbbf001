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


def _imported(script: str, cwd: Any) -> set[str]:
    import subprocess
    import sys

    from tests.run.helpers import torchtrap_env

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchtrap", "run", script],
        cwd=cwd,
        env=torchtrap_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_a_clean_run_does_not_import_the_linter(tmp_path: Any) -> None:
    """The fixed start-up cost: the CLI, not the rules (0.4 s of CPU)."""
    (tmp_path / "clean.py").write_text("print('ok')\n")
    modules = _imported("clean.py", tmp_path)
    assert "torchtrap.run.launcher" in modules
    assert "torchtrap.rules" not in modules and "torchtrap.engine" not in modules


@pytest.mark.slow
def test_twin_a_run_with_findings_imports_the_rules_for_their_fixes() -> None:
    from tests.run.helpers import SCRIPTS

    assert "torchtrap.rules" in _imported("tt215_fires.py", SCRIPTS)
