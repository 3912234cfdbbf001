"""The hooks in .pre-commit-hooks.yaml, run by pre-commit itself on a
temporary git repository. Offline: each hook is copied into a ``repo: local``
config as ``language: system`` (the published ``language: python`` would make
pre-commit pip-install this repository), with this interpreter's
``torchtrap`` first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
BUGGY = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, dim=1))\n"
FIXED = "import torch\n\n\ndef f(x):\n    return torch.log_softmax(x, dim=1)\n"

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or os.name == "nt", reason="needs git and a POSIX shell"
)


def _env(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "torchtrap"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchtrap "$@"\n')
    shim.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "server"),
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def _repo(tmp: Path, hook_id: str) -> Path:
    hook = dict(next(h for h in HOOKS if h["id"] == hook_id), language="system")
    repo = tmp / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]})
    )
    (repo / "pyproject.toml").write_text('[tool.torchtrap]\nexclude = ["vendored/*"]\n')
    (repo / "train.py").write_text(BUGGY)
    (repo / "vendored").mkdir()
    (repo / "vendored" / "lib.py").write_text(BUGGY)
    (repo / "README.md").write_text("torch.log(torch.softmax(x))\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    return repo


def _pre_commit(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hooks_are_declared() -> None:
    manifest = str(ROOT / ".pre-commit-hooks.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", manifest],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {h["id"] for h in HOOKS} == {"torchtrap-check", "torchtrap-fix"}
    for hook in HOOKS:
        assert hook["entry"].startswith("torchtrap check") and "--force-exclude" in hook["entry"]
        assert hook["language"] == "python"


def test_check_hook_fails_on_a_pitfall_and_respects_exclude(tmp_path: Path) -> None:
    env = _env(tmp_path)
    repo = _repo(tmp_path, "torchtrap-check")
    proc = _pre_commit(repo, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:5:12: TT201" in proc.stdout
    assert "vendored" not in proc.stdout  # excluded in pyproject, though named by pre-commit
    assert (repo / "train.py").read_text() == BUGGY

    (repo / "train.py").write_text(FIXED)
    proc = _pre_commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_fix_hook_rewrites_the_file_then_passes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    repo = _repo(tmp_path, "torchtrap-fix")
    proc = _pre_commit(repo, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "files were modified by this hook" in proc.stdout
    assert (repo / "train.py").read_text() == FIXED
    assert (repo / "vendored" / "lib.py").read_text() == BUGGY
    proc = _pre_commit(repo, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
