"""Finds the interpreter to probe and asks it (in a subprocess, via the
preflight script) which Python, torch and CUDA it has."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import threading

from torchtrap.probe.catalog import PREFLIGHT_SCRIPT
from torchtrap.probe.errors import ProbeError, TorchMissing
from torchtrap.probe.process import last_json_line, run_script
from torchtrap.probe.report import Interpreter

MIN_PYTHON = (3, 7)


def resolve_python(python: str | None) -> str:
    """An absolute path to an executable; symlinks are kept (a venv's python
    is a symlink, and resolving it would lose the venv's site-packages)."""
    if python is None:
        if not sys.executable:
            raise ProbeError("cannot tell which Python this is; pass --python PATH")
        return sys.executable
    text = python.strip()
    if not text:
        raise ProbeError("--python needs a path to a Python interpreter")
    candidate = os.path.expanduser(text)
    if os.sep in candidate or (os.altsep and os.altsep in candidate) or os.path.exists(candidate):
        path = os.path.abspath(candidate)
        if not os.path.exists(path):
            raise ProbeError(f"no Python interpreter at {path}")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise ProbeError(f"{path} is not an executable Python interpreter")
        return path
    found = shutil.which(candidate)
    if found is None:
        raise ProbeError(f"no Python interpreter named {text!r} on PATH")
    return os.path.abspath(found)


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _cuda_note(info: dict[str, object]) -> str:
    torch_version = info.get("torch_version")
    if info.get("cuda_available"):
        return f"{info.get('cuda_devices')} CUDA device(s), CUDA {info.get('cuda_build')}"
    if info.get("cuda_error"):
        return f"torch.cuda.is_available() failed: {info['cuda_error']}"
    if not info.get("cuda_build"):
        return f"torch {torch_version} is a CPU-only build"
    return (
        f"torch {torch_version} (CUDA {info.get('cuda_build')}) sees no GPU:"
        " torch.cuda.is_available() is False"
    )


def torch_missing_message(path: str, version: str, tool: str = "the probe") -> str:
    """What the user reads when `path` has no torch (the probe, `torchtrap run`)."""
    return (
        f"torch is not installed in {path} (Python {version}).\n"
        f"Install it with: {shlex.quote(path)} -m pip install torch\n"
        f"or point {tool} at the interpreter that has it: --python PATH"
    )


def inspect_interpreter(
    python: str | None, timeout: float = 60.0, cancel: threading.Event | None = None
) -> Interpreter:
    """Raises ProbeError (TorchMissing when torch is absent) with a message
    meant for the user, never a traceback."""
    path = resolve_python(python)
    try:
        # Cancellable: importing torch can take a minute on a cold disk.
        run = run_script(path, PREFLIGHT_SCRIPT, timeout, cancel)
    except OSError as exc:
        raise ProbeError(f"cannot run {path}: {exc.strerror or exc}") from None
    if run.cancelled:
        raise ProbeError("cancelled while the interpreter was being inspected")
    if run.timed_out:
        raise ProbeError(f"{path} did not answer within {timeout:g} s (importing torch)")
    info = last_json_line(run.stdout)
    if info is None or "python_version" not in info:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        why = lines[-1].strip() if lines else f"exit code {run.returncode}"
        if "SyntaxError" in why:  # the preflight uses Python 3.6+ syntax
            raise ProbeError(f"{path} is too old a Python; the probe needs Python 3.7 or newer")
        raise ProbeError(f"{path} did not run as a Python interpreter: {why}")
    version = str(info["python_version"])
    if _version_tuple(version) < MIN_PYTHON:
        raise ProbeError(f"{path} is Python {version}; the probe needs Python 3.7 or newer")
    if info.get("torch_error") == "missing":
        raise TorchMissing(torch_missing_message(path, version))
    if info.get("torch_error"):
        raise ProbeError(f"torch fails to import in {path}: {info.get('detail')}")
    return Interpreter(
        path=path,
        python_version=version,
        torch_version=str(info.get("torch_version")),
        cuda_build=None if info.get("cuda_build") is None else str(info["cuda_build"]),
        cuda_available=bool(info.get("cuda_available")),
        cuda_note=_cuda_note(info),
    )
