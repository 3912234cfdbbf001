"""Helpers shared by the experiment scripts. Each script runs in the user's
interpreter, where torchtrap is not installed; the probe starts it with this
folder put on ``sys.path`` explicitly (probe/process.py), whatever the
caller's ``-P``/``PYTHONSAFEPATH``, so the scripts import this by name."""

from __future__ import annotations


def error_line(exc: BaseException) -> str:
    """One line for an exception; for an error re-raised from a DataLoader
    worker, the worker's own last line ("Caught X in DataLoader worker...")."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Caught "):
        return f"in worker: {lines[-1]}"[:300]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]
