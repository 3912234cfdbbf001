"""Runs `torchtrap run` the way a user does: the CLI in a subprocess, the
script in an interpreter whose torch it uses, the JSON report from --output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).parent / "scripts"
SERVER = Path(__file__).resolve().parents[2] / "server"


def torchtrap_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)  # what the launcher sets or not is under test
    env["PYTHONSAFEPATH"] = "1"  # as the editor starts the server
    # The checkout under test, not whichever one the environment installed (a git
    # worktree shares the main checkout's editable install); the launcher keeps it
    # off the script's own path.
    env["PYTHONPATH"] = str(SERVER)
    env.update(extra)
    return env


def run_cli(
    target: str | Path,
    *args: str,
    cwd: Path = SCRIPTS,
    options: tuple[str, ...] = (),
    out: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 180,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    report = out or cwd / ".." / f".report-{os.getpid()}.json"
    report = report.resolve()
    command = [
        sys.executable,
        "-m",
        "torchtrap",
        "run",
        "--format",
        "json",
        "-o",
        str(report),
        *options,
        str(target),
        *args,
    ]
    try:
        proc = subprocess.run(
            command,
            cwd=cwd,
            env=env or torchtrap_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        doc = None
        if report.exists() and "--format" not in options:  # ours: JSON
            doc = json.loads(report.read_text(encoding="utf-8"))
    finally:
        if out is None and report.exists():
            report.unlink()
    return proc, doc


def line_of(script: Path, text: str) -> int:
    for number, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {script}")


def found(doc: dict[str, Any]) -> list[tuple[str, int, str]]:
    return sorted((f["code"], f["range"]["start"]["line"], f["object"]) for f in doc["findings"])
