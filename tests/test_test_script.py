"""scripts/test.sh runs every suite even when one fails, reports each one's
result and says what was skipped and why (issue 36, item 10). Run on a copy
whose tools are stubs that say they ran."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stub(path: Path, name: str, code: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "ran {name} $*" >> "$LOG"\nexit {code}\n')
    path.chmod(0o755)


def _tree(tmp_path: Path, failing: str) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test.sh", root / "scripts" / "test.sh")
    for name, where in (
        ("setup", "scripts/setup.sh"),
        ("sarif", "scripts/sarif-multitool.sh"),
        ("client", "scripts/client-test.sh"),
        ("ruff", ".venv/bin/ruff"),
        ("mypy", ".venv/bin/mypy"),
        ("python", ".venv/bin/python"),
    ):
        code = 3 if name == "sarif" else 1 if name == failing else 0
        _stub(root / where, name, code)
    return root


def _run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    log = root / "log"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTRAP_SKIP")}
    environ.update(LOG=str(log), **env)
    return subprocess.run(
        ["bash", "scripts/test.sh", "-q"],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_failing_suite_does_not_stop_the_others(tmp_path: Path) -> None:
    root = _tree(tmp_path, failing="ruff")
    proc = _run(root)
    assert proc.returncode == 1
    ran = (root / "log").read_text().splitlines()
    assert [line.split()[1] for line in ran] == [
        "setup",
        "ruff",
        "mypy",
        "python",
        "sarif",
        "python",
        "client",
    ]
    assert "ran python -m pytest -q" in ran
    summary = proc.stdout[proc.stdout.index("summary") :]
    assert "FAILED   ruff (exit 1)" in summary
    for name in ("mypy", "docs", "pytest", "VS Code extension"):
        assert f"passed   {name}" in summary
    assert "SKIPPED  SARIF Multitool validation (npm/node not found)" in summary
    assert "setting up .venv" in proc.stdout  # progress before the long set-up


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_twin_all_pass_and_a_skipped_client_is_said(tmp_path: Path) -> None:
    root = _tree(tmp_path, failing="")
    proc = _run(root, TORCHTRAP_SKIP_CLIENT="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran client" not in (root / "log").read_text()
    assert "SKIPPED  VS Code extension (unit + e2e) (TORCHTRAP_SKIP_CLIENT is set)" in proc.stdout
    assert "test.sh: all suites that ran passed" in proc.stdout
