"""The Dataset/DataLoader examples (TT101-TT103): they run, show what they
claim, and `torchtrap check --fix` turns the bug into `RESULT: ok`."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchtrap.config import Config, from_table
from torchtrap.engine import lint
from torchtrap.findings import Severity

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run(path: Path, timeout: float = 120) -> str:
    """The example's last stdout line (its RESULT)."""
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=path.parent,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr
    return lines[-1]


def _torchtrap(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchtrap", "check", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _codes(path: Path, config: Config | None = None) -> list[tuple[str, int, Severity]]:
    findings = lint(path.read_text(encoding="utf-8"), str(path), config or Config())
    return [(f.code, f.range.start.line, f.severity) for f in findings]


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(EXAMPLES / name, target)
    return target


def test_tt101_example_shows_the_bug_and_the_fix_removes_it(tmp_path: Path) -> None:
    example = EXAMPLES / "tt101_stored_rng.py"
    assert _run(example) == "RESULT: bug"
    assert [c for c in _codes(example) if c[0] == "TT101"] == [("TT101", 21, Severity.ERROR)]

    copy = _copy("tt101_stored_rng.py", tmp_path)
    done = _torchtrap("--fix", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert "worker_init_fn=seed_worker" in fixed
    assert [c for c in _codes(copy) if c[0] == "TT101"] == []
    assert _run(copy) == "RESULT: ok"


def test_tt102_example_is_fine_on_new_torch_and_flagged_for_old_torch(tmp_path: Path) -> None:
    example = EXAMPLES / "tt102_global_numpy_rng.py"
    assert _run(example) == "RESULT: ok"  # torch >= 1.9 seeds numpy per worker
    assert [c for c in _codes(example) if c[0] == "TT102"] == []  # installed torch 2.13

    old = from_table({"torch-version": "1.8.1"})
    assert [c for c in _codes(example, old) if c[0] == "TT102"] == [("TT102", 23, Severity.ERROR)]
    copy = _copy("tt102_global_numpy_rng.py", tmp_path)
    done = _torchtrap("--torch-version", "1.8.1", "--fix", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert "np.random.seed(torch.initial_seed() % 2**32)" in fixed
    assert [c for c in _codes(copy, old) if c[0] == "TT102"] == []
    assert _run(copy) == "RESULT: ok"  # the added worker_init_fn keeps workers distinct


def test_tt103_example_is_flagged_and_fixed_without_cuda(tmp_path: Path) -> None:
    import torch

    example = EXAMPLES / "tt103_cuda_tensor_in_dataset.py"
    findings = [
        f
        for f in lint(example.read_text(encoding="utf-8"), str(example), Config())
        if f.code == "TT103"
    ]
    assert [(f.range.start.line, f.severity) for f in findings] == [(26, Severity.ERROR)]
    # The consequence is in the message; related information is the DataLoader.
    assert "crash under fork, may read zeros under spawn" in findings[0].message
    assert [r.range.start.line for r in findings[0].related] == [42]

    result = _run(example)
    if torch.cuda.is_available():
        assert result in ("RESULT: bug", "RESULT: ok")
    else:
        assert result == "RESULT: skipped"

    copy = _copy("tt103_cuda_tensor_in_dataset.py", tmp_path)
    done = _torchtrap("--fix", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # check --fix never changes a worker count: the num_workers=0 fix is unsafe.
    assert copy.read_text(encoding="utf-8") == example.read_text(encoding="utf-8")
    done = _torchtrap("--fix", "--unsafe-fixes", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    assert "num_workers=0, multiprocessing_context=None" in fixed
    assert [c for c in _codes(copy) if c[0] == "TT103"] == []
    result = _run(copy)
    if torch.cuda.is_available():
        assert result == "RESULT: ok"  # no worker, nothing pickled
    else:
        assert result == "RESULT: skipped"


@pytest.mark.parametrize(
    "name", ["tt101_stored_rng.py", "tt102_global_numpy_rng.py", "tt103_cuda_tensor_in_dataset.py"]
)
def test_examples_start_workers_only_under_main_guard(name: str) -> None:
    tree = ast.parse((EXAMPLES / name).read_text(encoding="utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, (ast.Expr, ast.Assign)):
            assert "DataLoader(" not in ast.unparse(stmt), "workers outside __main__ guard"


def test_tt105_example_duplicates_the_stream_and_the_fix_shards_it(tmp_path: Path) -> None:
    example = EXAMPLES / "tt105_iterable_not_sharded.py"
    assert _run(example) == "RESULT: bug"
    assert [c for c in _codes(example) if c[0] == "TT105"] == [("TT105", 21, Severity.WARNING)]

    copy = _copy("tt105_iterable_not_sharded.py", tmp_path)
    done = _torchtrap("--fix", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert "itertools.islice(stream, worker.id, None, worker.num_workers)" in fixed
    assert [c for c in _codes(copy) if c[0] == "TT105"] == []
    assert _run(copy) == "RESULT: ok"


def test_tt106_example_fails_under_spawn_and_the_fix_adds_the_guard(tmp_path: Path) -> None:
    example = EXAMPLES / "tt106_main_guard.py"
    assert _run(example) == "RESULT: bug"
    assert [c for c in _codes(example) if c[0] == "TT106"] == [("TT106", 21, Severity.ERROR)]

    copy = _copy("tt106_main_guard.py", tmp_path)
    done = _torchtrap("--fix", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert fixed.endswith('if __name__ == "__main__":\n    main()\n')
    assert [c for c in _codes(copy) if c[0] == "TT106"] == []
    assert _run(copy) == "RESULT: ok"


def test_tt107_example_grows_worker_memory_and_numpy_stops_it(tmp_path: Path) -> None:
    example = EXAMPLES / "tt107_python_objects_in_workers.py"
    result = _run(example)
    if result == "RESULT: skipped":  # no /proc/<pid>/smaps_rollup
        pytest.skip("needs Linux smaps_rollup")
    assert result == "RESULT: bug"
    assert [c for c in _codes(example) if c[0] == "TT107"] == [("TT107", 28, Severity.INFO)]

    copy = _copy("tt107_python_objects_in_workers.py", tmp_path)
    done = _torchtrap("--fix", "--unsafe-fixes", "--exit-zero", str(copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = copy.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert "self.lines = np.array(fh.readlines())" in fixed
    assert [c for c in _codes(copy) if c[0] == "TT107"] == []
    assert _run(copy) == "RESULT: ok"
