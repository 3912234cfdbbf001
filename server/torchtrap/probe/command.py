"""`torchtrap probe`: argument parsing and output, for the main CLI.

cli.py calls `add_arguments(subparser)` and then `run(args)`."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from torchtrap.probe.catalog import EXPERIMENT_IDS
from torchtrap.probe.errors import ProbeError
from torchtrap.probe.runner import DEFAULT_TIMEOUT_S

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = parser.description or (
        "Run small experiments in the interpreter that holds your torch and report which"
        " of TorchTrap's rules really bite on this machine (one subprocess per experiment,"
        " only the probe's own scripts, no network)."
    )
    parser.add_argument(
        "--json", action="store_true", help="print the JSON document instead of the report"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help=f"time limit for the whole probe in seconds (default {DEFAULT_TIMEOUT_S:g});"
        " each experiment also has its own",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help=f"run only these experiments: {', '.join(EXPERIMENT_IDS)}",
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="the Python interpreter whose torch to probe (default: this one)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the JSON document to FILE",
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _progress(name: str, done: int, total: int) -> None:
    if name != "done":
        print(f"torchtrap probe: [{done + 1}/{total}] {name}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the probe ran (whatever it found), 2 when it could not."""
    from torchtrap.probe import render_markdown, run_probe

    timeout = getattr(args, "timeout", None)
    if timeout is not None and not timeout > 0:
        print(f"torchtrap probe: --timeout must be positive, got {timeout:g}", file=sys.stderr)
        return EXIT_ERROR
    output = getattr(args, "output", None)
    if output and not Path(output).resolve().parent.is_dir():
        # Checked first: a probe can take minutes, its result should not be lost.
        print(f"torchtrap probe: cannot write {output}: no such directory", file=sys.stderr)
        return EXIT_ERROR
    # SIGTERM (e.g. from `timeout`) must unwind like Ctrl-C, so that the runner
    # kills the running experiment's process group instead of orphaning it.
    previous = None
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = run_probe(
            python=getattr(args, "python", None),
            timeout=timeout,
            only=getattr(args, "only", None),
            progress=_progress,
        )
    except ProbeError as exc:
        print(f"torchtrap probe: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("torchtrap probe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    doc = report.to_json()
    text = json.dumps(doc, indent=2)
    if output:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"torchtrap probe: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
    print(text if getattr(args, "json", False) else render_markdown(doc))
    return EXIT_OK
