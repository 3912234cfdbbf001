"""``torchtrap check | rule | probe | run | lsp``: a thin front end over the engine."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchtrap import __version__
from torchtrap.checker import check_file
from torchtrap.discovery import ConfigLookup, iter_python_files
from torchtrap.output import FORMATS, FileReport, failing, hide_hints
from torchtrap.rules import Rule

if TYPE_CHECKING:
    pass

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"\rChecking {done}/{total} files…")
    if done == total:
        sys.stderr.write("\r\x1b[K")
    sys.stderr.flush()


def cmd_check(args: argparse.Namespace) -> int:
    from torchtrap.output import github, json_report, sarif, text

    overrides: dict[str, object] = {}
    if args.select:
        overrides["select"] = args.select
    if args.extend_select:
        overrides["extend_select"] = args.extend_select
    if args.ignore:
        overrides["ignore"] = args.ignore
    if args.torch_version:
        overrides["torch_version"] = args.torch_version
    if args.show_hints:
        overrides["show_hints"] = True
    # Only JSON and SARIF print a fix's edits (--fix and --diff apply fixes
    # through fix_source, which builds them anyway).
    overrides["fix_edits"] = args.format in ("json", "sarif")
    configs = ConfigLookup(overrides)

    stdin_text = None
    paths = args.paths or ["."]
    jobs = args.jobs or os.cpu_count() or 1
    if paths == ["-"]:
        stdin_text = sys.stdin.read()
        config = configs(Path.cwd())
        _print_warnings(configs.warnings)
        task = (
            args.stdin_filename or "-",
            config,
            stdin_text,
            args.fix,
            args.unsafe_fixes,
            args.diff,
        )
        reports = [hide_hints(check_file(task), config)]
    else:
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            for p in missing:
                print(f"torchtrap: error: {p}: no such file or folder", file=sys.stderr)
            return EXIT_ERROR
        reports = _check_project(args, paths, configs, jobs)

    if stdin_text is not None and args.fix and not args.diff:
        # `check --fix -` is a filter: fixed text out, findings to stderr.
        sys.stdout.write(reports[0].source or stdin_text)
        out = sys.stderr
    else:
        out = sys.stdout

    findings = [f for r in reports for f in r.findings]
    if args.diff:
        diffs = [r.diff for r in reports if r.diff]
        out.write("".join(diffs))
        fixable = len(diffs)
        print(
            f"Would fix {sum(1 for _ in diffs)} {'file' if fixable == 1 else 'files'}."
            if diffs
            else "No fixes available.",
            file=sys.stderr,
        )
        return EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN

    if args.format == "json":
        out.write(json_report.render(reports))
    elif args.format == "sarif":
        out.write(sarif.render(reports))
    elif args.format == "github":
        out.write(github.render(reports))
    else:
        color = _use_color(args.color, out)
        style = text.Style(color)
        if args.statistics:
            out.write(text.statistics(reports))
        else:
            rendered = text.render(reports, style)
            if rendered:
                out.write(rendered + "\n")
        out.write(text.summary(reports, style, fix_mode=args.fix, unsafe=args.unsafe_fixes))
    if args.exit_zero:
        return EXIT_CLEAN
    # Hints (modernisation, not bugs) never fail the run, shown or not.
    return EXIT_FINDINGS if failing(findings) else EXIT_CLEAN


def _check_project(
    args: argparse.Namespace, paths: list[str], configs: ConfigLookup, jobs: int
) -> list[FileReport]:
    """Index the files (and their projects' other modules), then lint."""
    from torchtrap import checker
    from torchtrap.project.cache import Cache

    files: list[Path] = []
    arg_roots: dict[Path, Path] = {}
    for raw in paths:
        folder = Path(raw) if os.path.isdir(raw) else Path(raw).parent
        for file in iter_python_files([raw], configs, force_exclude=args.force_exclude):
            if file not in arg_roots:
                arg_roots[file] = Path(os.path.abspath(folder))
                files.append(file)
    warnings: list[str] = []
    walked = {Path(os.path.abspath(raw)) for raw in paths if os.path.isdir(raw)}
    items = checker.project_items(files, configs, arg_roots, warnings.append, walked)
    cache = None if args.no_cache else Cache()
    if cache is not None:
        cache.load()
    show_progress = sys.stderr.isatty() and len(files) >= 200 and args.format == "text"
    options = checker.Options(
        fix=args.fix,
        unsafe=args.unsafe_fixes,
        diff=args.diff,
        jobs=jobs,
        cache=cache,
        progress=_progress if show_progress else None,
    )
    reports = checker.run(items, options)
    # What the run leaves (summaries, findings) lives until the process ends:
    # moved out of the collector's reach, the young pass that the collector,
    # on again after the run, makes next, and the full one at exit, do not walk it
    # (0.15 s of a 1,550-file check).
    gc.freeze()
    if cache is not None:
        cache.save()
        warnings.extend(cache.warnings)
    _print_warnings([*configs.warnings, *warnings, *options.warnings])
    return reports


def _print_warnings(warnings: Sequence[str]) -> None:
    for warning in dict.fromkeys(warnings):
        print(f"torchtrap: warning: {warning}", file=sys.stderr)


def cmd_clean(args: argparse.Namespace) -> int:
    from torchtrap.project.cache import clean, default_folder

    folder = default_folder()
    if clean(folder):
        print(f"Removed {folder}", file=sys.stderr)
    return EXIT_CLEAN


def _use_color(choice: str, stream: object) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def cmd_rule(args: argparse.Namespace) -> int:
    from torchtrap.rules import ALL_RULES, get_rule

    if args.code:
        rule = get_rule(args.code)
        if rule is None:
            known = ", ".join(r.code for r in ALL_RULES)
            print(f"torchtrap: error: unknown rule {args.code!r} (known: {known})", file=sys.stderr)
            return EXIT_ERROR
        if args.format == "json":
            print(json.dumps(_rule_json(rule), indent=2, ensure_ascii=False))
        else:
            print(rule.markdown())
        return EXIT_CLEAN
    if args.format == "json":
        print(json.dumps([_rule_json(r) for r in ALL_RULES], indent=2, ensure_ascii=False))
    elif args.all:
        print("\n".join(r.markdown() for r in ALL_RULES))
    else:
        for rule in ALL_RULES:
            print(f"{rule.code}  {rule.name:<34} {rule.default_severity.value:<8} {rule.summary}")
    return EXIT_CLEAN


def _rule_json(rule: type[Rule]) -> dict[str, object]:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "default_severity": rule.default_severity.value,
        "markdown": rule.markdown(),
    }


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's arguments; with ``command`` (the first word of the
    command line, when it names one), only that command's: `check` then
    does not import the probe's and `run`'s modules it never uses."""

    def wanted(name: str) -> bool:
        return command not in _COMMANDS or command == name

    parser = argparse.ArgumentParser(
        prog="torchtrap",
        description="Find the silent PyTorch bugs that corrupt training without an error.",
    )
    parser.add_argument("--version", action="version", version=f"torchtrap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="lint files or folders", description="Lint Python files.")
    check.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: .); - reads stdin"
    )
    check.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these codes or prefixes (comma-separated)",
    )
    check.add_argument(
        "--extend-select", action="append", metavar="CODES", help="add to the selection"
    )
    check.add_argument(
        "--ignore", action="append", metavar="CODES", help="skip these codes or prefixes"
    )
    check.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff: apply unsafe fixes too"
    )
    check.add_argument(
        "--diff", action="store_true", help="show the fixes as a diff; change no file"
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument(
        "--show-hints",
        action="store_true",
        help="also report hint-level findings (modernisation, not bugs; they never fail check)",
    )
    check.add_argument(
        "--statistics", action="store_true", help="counts per rule instead of each finding"
    )
    check.add_argument(
        "-j", "--jobs", type=int, default=0, metavar="N", help="parallel processes (default: cores)"
    )
    check.add_argument(
        "--torch-version", metavar="X.Y", help="the project's torch version (overrides detection)"
    )
    check.add_argument(
        "--no-cache", action="store_true", help="neither read nor write .torchtrap_cache/"
    )
    check.add_argument("--stdin-filename", metavar="PATH", help="the file name to report for stdin")
    check.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply `exclude` to files named on the command line too (for pre-commit)",
    )
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.set_defaults(func=cmd_check)

    clean = sub.add_parser(
        "clean",
        help="remove the cache",
        description="Remove .torchtrap_cache/ (or $TORCHTRAP_CACHE_DIR) in this folder.",
    )
    clean.set_defaults(func=cmd_clean)

    rule = sub.add_parser("rule", help="explain a rule", description="Show a rule's documentation.")
    rule.add_argument("code", nargs="?", help="rule code or name (e.g. TT101); omit to list all")
    rule.add_argument("--all", action="store_true", help="print every rule's documentation")
    rule.add_argument("--format", choices=("text", "json"), default="text")
    rule.set_defaults(func=cmd_rule)

    probe = sub.add_parser(
        "probe",
        help="confirm the pitfalls on this machine's torch/GPU",
        description="Run TorchTrap's own experiments in a subprocess.",
    )
    try:
        if wanted("probe"):
            from torchtrap.probe.command import add_arguments as probe_arguments
            from torchtrap.probe.command import run as probe_run

            probe_arguments(probe)
            probe.set_defaults(func=probe_run)
    except ImportError:  # pragma: no cover - the probe package ships with torchtrap
        probe.set_defaults(func=lambda a: _unavailable("probe"))

    run = sub.add_parser(
        "run",
        help="run your script with runtime checks",
        description="Run your script with observation hooks.",
        add_help=False,
    )
    if wanted("run"):
        from torchtrap.run.command import add_arguments as run_arguments
        from torchtrap.run.command import run as run_command

        run_arguments(run)
        run.set_defaults(func=run_command)

    graph = sub.add_parser(
        "graph",
        help="print the resolved call graph",
        description="Print the call graph TorchTrap's core resolves for the files given.",
    )
    graph.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    graph.add_argument(
        "--root", help="folder module names are relative to (default: the project root)"
    )
    graph.add_argument("--format", choices=("text", "json", "pycg"), default="text")
    graph.set_defaults(func=cmd_graph)

    lsp = sub.add_parser(
        "lsp", help="run the language server", description="Language server (stdio)."
    )
    try:
        if wanted("lsp"):
            from torchtrap.lsp import add_arguments as lsp_arguments
            from torchtrap.lsp import run as lsp_run

            lsp_arguments(lsp)
            lsp.set_defaults(func=lsp_run)
    except ImportError as err:
        lsp.set_defaults(func=lambda a, err=err: _unavailable(f"lsp ({err})"))
    return parser


_COMMANDS = ("check", "clean", "rule", "probe", "run", "graph", "lsp")


def cmd_graph(args: argparse.Namespace) -> int:
    from torchtrap.core import analyse_paths, render
    from torchtrap.project.layout import find_root

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"torchtrap: error: no such file or folder: {missing[0]}", file=sys.stderr)
        return EXIT_ERROR
    root = args.root or str(find_root(Path(os.path.abspath(args.paths[0]))) or os.getcwd())
    analysis = analyse_paths(args.paths, root)
    show = {"pycg": render.pycg, "json": render.as_json, "text": render.text}[args.format]
    print(show(analysis))
    for path, reason in analysis.solver.program.skipped:
        if args.format != "text":
            print(f"torchtrap: skipped {path}: {reason}", file=sys.stderr)
    return EXIT_CLEAN


def _unavailable(what: str) -> int:
    print(f"torchtrap: error: {what} is not available in this installation", file=sys.stderr)
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["run"]:
        # The script's own options follow the script: argparse would claim them.
        from torchtrap.run.command import main as run_main

        return run_main(words[1:])
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_ERROR
    if args.command == "check" and args.unsafe_fixes and not (args.fix or args.diff):
        args.fix = False  # --unsafe-fixes alone only widens what the summary counts
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `torchtrap check | head`
        return EXIT_CLEAN
