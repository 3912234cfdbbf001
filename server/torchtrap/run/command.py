"""`torchtrap run [options] script.py [args...]` / `torchtrap run [options]
-m module [args...]`: argument parsing and output, for the main CLI.

Everything after the script (or the module) belongs to the script, so the
options are split off by hand: argparse would take the script's `--lr` for
one of ours."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from torchtrap.probe.errors import ProbeError

EXIT_FINDINGS, EXIT_ERROR = 1, 2  # as `check`'s
FORMATS = ("text", "json", "sarif")
# Our options that take a value; the first other word is the script.
_VALUED = {"--python", "--stop-after-steps", "--format", "--output", "-o", "--color"}

USAGE = "torchtrap run [options] (script.py | -m module) [args...]"
DESCRIPTION = (
    "Run your own training script in the interpreter that holds your torch, unchanged except"
    " for observation hooks, and report the bugs seen while it runs (each on the line of your"
    " code where it was seen). The script's output, exit status and signals (Ctrl+C, SIGTERM,"
    " SIGHUP, SIGUSR1/2) pass through; the report goes to --output FILE, else to stderr."
)


def options_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchtrap run", usage=USAGE, description=DESCRIPTION)
    parser.add_argument(
        "--python", metavar="PATH", help="the interpreter that holds your torch (default: this one)"
    )
    parser.add_argument(
        "--stop-after-steps",
        type=int,
        default=0,
        metavar="N",
        help="end the run after N optimizer steps (a quick check of a long training script)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="report format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument(
        "--exit-non-zero-on-findings",
        action="store_true",
        help=(
            f"for CI: exit {EXIT_FINDINGS} when the script succeeded but something was found"
            " (hints aside, as `check`); a failing script keeps its own status"
        ),
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    return parser


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(our options incl. `-m MODULE` or the script, the script's arguments)."""
    ours: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return ours + list(argv[index + 1 : index + 2]), list(argv[index + 2 :])
        if word == "-m" or word.startswith("-m") and not word.startswith("--"):
            if word == "-m":
                return ours + list(argv[index : index + 2]), list(argv[index + 2 :])
            return ours + ["-m", word[2:]], list(argv[index + 1 :])
        if word.startswith("-"):
            ours.append(word)
            if word in _VALUED:
                ours.extend(argv[index + 1 : index + 2])
                index += 1
            index += 1
            continue
        return ours + [word], list(argv[index + 1 :])
    return ours, []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    parser.description = DESCRIPTION
    parser.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _terminated(signum: int, frame: object) -> None:
    # Before the script starts or after it ended (the launcher forwards it in between):
    # end as the signal asks, with its status, and let the temporary folder go.
    raise SystemExit(128 + signum)


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _render(report: object, fmt: str, color: bool) -> str:
    import json

    from torchtrap.run import RunReport, locate

    assert isinstance(report, RunReport)
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "text" and not report.findings:  # nor import the rules (0.4 s of CPU)
        return (
            "\n".join([*(f"torchtrap run: note: {n}" for n in report.notes), report.summary()])
            + "\n"
        )
    from torchtrap.output import FileReport, sarif, text

    by_file: dict[str, FileReport] = {}
    for item in report.findings:
        path = item.finding.path
        if path not in by_file:
            by_file[path] = FileReport(path=path, source=locate.source_of(path))
        finding = item.finding
        if fmt == "text":  # as `check` prints them: relative to the working folder
            finding = dataclasses.replace(
                finding,
                path=_relative(finding.path),
                related=tuple(
                    dataclasses.replace(r, path=_relative(r.path)) if r.path else r
                    for r in finding.related
                ),
            )
        by_file[path].findings.append(finding)
    if fmt == "sarif":
        return sarif.render(list(by_file.values()))
    style = text.Style(color)
    rendered = text.render(list(by_file.values()), style)
    lines = [rendered] if rendered else []
    lines.extend(f"torchtrap run: note: {note}" for note in report.notes)
    lines.append(report.summary())
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """The script's own exit status (128 + N when a signal N ended it); 2
    when the script could not be started."""
    from torchtrap.run import Target, run_checked

    words = list(getattr(args, "words", []) or [])
    ours, script_args = split_argv(words)
    parser = options_parser()
    if "-h" in ours or "--help" in ours:
        parser.print_help()
        return 0
    options, rest = parser.parse_known_args(ours)
    if options.module is not None:
        target = Target(options.module, module=True)
        script_args = rest + script_args
    elif rest and not rest[0].startswith("-"):
        target = Target(rest[0])
        script_args = rest[1:] + script_args
    else:
        unknown = [w for w in rest if w.startswith("-")]
        problem = f"unknown option {unknown[0]}" if unknown else "name a script or -m module"
        print(f"torchtrap run: {problem}\nusage: {USAGE}", file=sys.stderr)
        return EXIT_ERROR
    output = options.output
    if output and not Path(output).resolve().parent.is_dir():
        print(f"torchtrap run: cannot write {output}: no such directory", file=sys.stderr)
        return EXIT_ERROR
    previous = None
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        report = run_checked(
            target,
            script_args,
            python=options.python,
            stop_after_steps=options.stop_after_steps,
        )
    except ProbeError as exc:
        print(f"torchtrap run: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    color = options.color == "always" or (
        options.color == "auto"
        and not output
        and not os.environ.get("NO_COLOR")
        and sys.stderr.isatty()
    )
    rendered = _render(report, options.format, color)
    if output:
        try:
            Path(output).write_text(rendered, encoding="utf-8")
        except OSError as exc:
            print(f"torchtrap run: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
        print(report.summary() + f"; report in {output}", file=sys.stderr)
    else:
        sys.stderr.write(rendered)
    code = report.exit_code
    if code is None:
        return EXIT_ERROR
    if code == 0 and options.exit_non_zero_on_findings and _failing(report):
        return EXIT_FINDINGS
    return 128 - code if code < 0 else code


def main(words: Sequence[str]) -> int:
    """`torchtrap run WORDS...` (the CLI's entry point for `run`)."""
    try:
        return run(argparse.Namespace(words=list(words)))
    except KeyboardInterrupt:
        return 130


def _failing(report: object) -> bool:
    from torchtrap.output import failing
    from torchtrap.run import RunReport

    assert isinstance(report, RunReport)
    return bool(failing([item.finding for item in report.findings]))
