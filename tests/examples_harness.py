"""Running the runnable examples of examples/: each prints `RESULT: bug` as
written and, after the CLI's fixes on a copy, `RESULT: ok`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from torchtrap.engine import lint
from torchtrap.rules import get_rule

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SERVER = ROOT / "server"


def run(path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python [args] path`` with only the server on the path (no dev install)."""
    env = {"PYTHONPATH": str(SERVER), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, *args, str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=path.parent,
    )


def output(path: Path) -> str:
    """The example's stdout; it must exit 0."""
    proc = run(path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def result(text: str) -> str:
    """The `RESULT: ...` line an example ends with."""
    return text.strip().splitlines()[-1]


def fixed_copy(tmp_path: Path, example: str, *flags: str) -> Path:
    """A copy of the example after ``torchtrap check --fix [flags]``."""
    copy = tmp_path / example
    shutil.copy(EXAMPLES / example, copy)
    proc = run(copy, "-m", "torchtrap", "check", "--fix", "--exit-zero", *flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return copy


def check_bug_then_fixed(
    tmp_path: Path,
    example: str,
    code: str,
    flags: tuple[str, ...],
    after: str,
    before: str | None = None,
) -> None:
    """The example shows its bug and gets exactly one ``code`` finding; it
    holds the line ``before`` (or lacks ``after``); the CLI's fix writes the
    line ``after``, the copy re-lints clean for the rule and runs clean."""
    source = EXAMPLES / example
    shown = output(source)
    assert result(shown) == "RESULT: bug", shown
    rule = get_rule(code)
    assert rule is not None
    assert [f.code for f in lint(source.read_text(), str(source), rules=[rule])] == [code]
    lines = source.read_text().splitlines()
    assert before in lines if before is not None else after not in lines

    copy = fixed_copy(tmp_path, example, *flags)
    fixed = copy.read_text()
    assert after in fixed.splitlines(), fixed
    assert lint(fixed, str(copy), rules=[rule]) == []
    shown = output(copy)
    assert result(shown) == "RESULT: ok", shown
