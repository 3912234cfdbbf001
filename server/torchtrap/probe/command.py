"""`torchtrap probe`: argument parsing and output, for the main CLI.

cli.py calls `add_arguments(subparser)` and then `run(args)`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torchtrap.probe.catalog import EXPERIMENT_IDS
from torchtrap.probe.errors import ProbeError
from torchtrap.probe.runner import DEFAULT_TIMEOUT_S

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
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
    doc = report.to_json()
    text = json.dumps(doc, indent=2)
    output = getattr(args, "output", None)
    if output:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"torchtrap probe: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
    print(text if getattr(args, "json", False) else render_markdown(doc))
    return EXIT_OK
