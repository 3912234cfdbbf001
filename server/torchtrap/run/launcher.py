"""Starts the user's script with the hooks, through the probe's launcher
(probe/process.py: its own process group, the environment a script gets,
no orphans), and collects what the hooks wrote.

The hooks package is copied into a fresh temporary folder, which also
receives the hooks' event files; the folder is removed when the run ends,
so that nothing is left behind but the report the user asked for. Nothing
outlives this process either: the script dies with it (a parent-death
signal, Linux), a watchdog kills the script's process group and removes the
folder when this process is killed (POSIX), and a run removes the folders
of earlier runs whose process is gone (the folder's name holds its pid)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from torchtrap.probe.errors import ProbeError, TorchMissing
from torchtrap.probe.interpreter import resolve_python, torch_missing_message
from torchtrap.probe.process import Sink, Watchdog, run_attached, script_env
from torchtrap.run.report import RunReport, build_report
from torchtrap.run.target import Target

__all__ = ["Target", "remove_stale_folders", "run_checked"]

HOOKS_SOURCE = Path(__file__).resolve().parents[1] / "runtime_hooks"
HOOKS_PACKAGE = "_torchtrap_run_hooks"
TORCH_MISSING_EXIT = 97  # runtime_hooks/boot.py

BOOTSTRAP = (
    f"import sys; sys.path.insert(0, sys.argv[1]); from {HOOKS_PACKAGE}.boot import main; main()"
)


def _check_target(target: Target, cwd: Path) -> None:
    if target.module:
        if not target.value or target.value.startswith("."):
            raise ProbeError(f"-m needs a module name, got {target.value!r}")
        return
    path = cwd / target.value
    if not path.exists():
        raise ProbeError(f"{target.value}: no such file")
    if path.is_dir() and not (path / "__main__.py").exists():
        raise ProbeError(f"{target.value} is a folder without __main__.py")


FOLDER_PREFIX = "torchtrap-run-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: leave its folder alone
    return True


def remove_stale_folders(parent: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the run folders (`torchtrap-run-<pid>-*`) of this user whose
    process is gone: left by a run killed together with its watchdog."""
    removed: list[Path] = []
    if os.name != "posix":  # pragma: no cover - os.kill(pid, 0) is no liveness test there
        return removed
    base = Path(parent or tempfile.gettempdir())
    try:
        entries = list(base.glob(FOLDER_PREFIX + "*-*"))
    except OSError:
        return removed
    for entry in entries:
        pid_text = entry.name[len(FOLDER_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            if not entry.is_dir() or entry.is_symlink():
                continue
            if hasattr(os, "getuid") and entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if not _alive(int(pid_text)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _events(folder: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for file in sorted(folder.glob("events-*.jsonl")):
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            if isinstance(value, dict):
                found.append(value)
    return found


def run_checked(
    target: Target,
    args: list[str] | tuple[str, ...] = (),
    python: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stop_after_steps: int = 0,
    sink: Sink | None = None,
    cancel: threading.Event | None = None,
) -> RunReport:
    """Run `target args` in `python` (this interpreter when None) from `cwd`
    with the hooks, its output on this process's stdout/stderr (or handed to
    `sink`), and return what was found. Raises ProbeError when it cannot
    start (no such interpreter or script; TorchMissing without torch)."""
    interpreter = resolve_python(python)
    folder = Path(cwd or os.getcwd()).resolve()
    _check_target(target, folder)
    if stop_after_steps < 0:
        raise ProbeError("--stop-after-steps must be positive")
    # The script checks that this process is its parent after asking for the
    # parent-death signal (we may have died in between).
    options = {"stop_after_steps": stop_after_steps, "parent": os.getpid()}
    remove_stale_folders()
    temp = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
    watchdog = None
    try:
        watchdog = Watchdog(temp)
        hooks_parent = Path(temp) / "lib"
        shutil.copytree(
            HOOKS_SOURCE,
            hooks_parent / HOOKS_PACKAGE,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        results = Path(temp) / "events"
        results.mkdir()
        command = [
            interpreter,
            "-c",
            BOOTSTRAP,
            str(hooks_parent),
            str(results),
            json.dumps(options),
            "module" if target.module else "file",
            target.value,
            *args,
        ]
        # Output through a pipe (the editor) is shown as it comes; a terminal or a
        # file gets the buffering it gets without `run` (an unbuffered stdout writes
        # print()'s text and its newline apart: two processes' lines interleave).
        env = script_env(unbuffered=sink is not None)
        try:
            run = run_attached(
                command, cwd=folder, env=env, cancel=cancel, sink=sink, watchdog=watchdog
            )
        except OSError as exc:
            raise ProbeError(f"cannot run {interpreter}: {exc.strerror or exc}") from None
        events = _events(results)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        if watchdog is not None:
            watchdog.done()
    missing = next((e for e in events if e.get("kind") == "torch_missing"), None)
    if missing is not None and run.returncode == TORCH_MISSING_EXIT:
        version = str(missing.get("python", "?"))
        raise TorchMissing(torch_missing_message(interpreter, version, "torchtrap run"))
    if not events and run.returncode not in (0, None) and not (run.interrupted or run.cancelled):
        raise ProbeError(
            f"{interpreter} did not run the script (exit code {run.returncode});"
            " is it a Python 3.7+ interpreter?"
        )
    return build_report(
        events,
        target=target,
        args=list(args),
        python=interpreter,
        cwd=str(folder),
        run=run,
        stop_after_steps=stop_after_steps,
    )
