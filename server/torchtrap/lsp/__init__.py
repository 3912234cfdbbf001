"""``torchtrap lsp``: the language server (stdio by default, ``--tcp`` for
debugging). The CLI calls ``add_arguments`` and ``run``."""

from __future__ import annotations

import argparse
import gc
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)"
    )
    transport.add_argument(
        "--tcp", metavar="HOST:PORT", help="listen on a TCP socket instead (for debugging)"
    )
    parser.add_argument("--log-file", metavar="PATH", help="write the server log here")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level (default: WARNING)",
    )


def _tcp_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise SystemExit(f"torchtrap lsp: --tcp expects HOST:PORT, not {value!r}")
    return host or "127.0.0.1", int(port)


# pygls warnings about what an editor does all the time: VS Code cancels a
# hover or code-action request that has already been answered, on most
# cursor moves. Not problems: logged only at DEBUG.
PYGLS_ROUTINE = (
    'Cancel notification for unknown message id "%s"',
    "Ignoring work done progress cancel for unknown token %s",
    "Ignoring notification for unknown method %r",
)


class _QuietPygls(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("pygls") and record.msg in PYGLS_ROUTINE)


def configure_logging(handler: logging.Handler, level: str) -> None:
    """The server log at ``level``; pygls' own INFO lines ("Sending data: ..."
    with every message's JSON, "Registered builtin feature ..." fifty times at
    start) repeat the protocol trace, and its routine warnings (above) come
    on every cursor move, so pygls speaks only from WARNING, and not those,
    unless the log asks for DEBUG."""
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    numeric = root.getEffectiveLevel()
    quiet = numeric > logging.DEBUG
    logging.getLogger("pygls").setLevel(max(numeric, logging.WARNING) if quiet else logging.NOTSET)
    if quiet:
        handler.addFilter(_QuietPygls())


def run(args: argparse.Namespace) -> int:
    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8")
        if getattr(args, "log_file", None)
        else logging.StreamHandler(sys.stderr)
    )
    configure_logging(handler, getattr(args, "log_level", "WARNING"))

    from torchtrap.lsp.app import create_server
    from torchtrap.values import program

    # The whole-program model on a keystroke: only for small projects (a file
    # alone, a few modules) until the model is incremental.
    program.limit(files=8, edited_files=8)
    server = create_server()
    _tune_gc()
    tcp = getattr(args, "tcp", None)
    if tcp:
        host, port = _tcp_address(tcp)
        server.start_tcp(host, port)
        return 0
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Anything printed by accident (a rule, a library) must not corrupt the
    # protocol stream: from here on print() goes to stderr.
    sys.stdout = sys.stderr
    server.start_io(stdin, stdout)
    # stdin closed or `exit`: stop the probes and leave now, without waiting
    # for a lint thread (the client is gone; nobody reads its result).
    server.abandon()
    return 0


def _tune_gc() -> None:
    """A lint allocates a syntax tree of ~100k nodes per 1,000 lines; with
    CPython's default thresholds that triggers dozens of collections per
    lint, each also scanning every long-lived object of pygls, lsprotocol
    and cattrs (a third of a 5,000-line lint's time, and its worst tail).
    Freeze what start-up created and collect less often (as mypy does)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchtrap lsp", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


__all__ = ["add_arguments", "configure_logging", "main", "run"]
