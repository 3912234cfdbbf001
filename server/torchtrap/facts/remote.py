"""DataLoaders in other files, as the dataset rules see local ones.

A DataLoader found through the project index (``ctx.project``) becomes a
:class:`DataLoaderCall` built from its summary: its arguments are parsed
back from their text, and its node carries the other file's location
(``REMOTE_ATTR``), which ``Context.related`` turns into a related location
in that file. Fixes never edit another file: :func:`is_remote` tells. Which of the
project's DataLoaders load a class is a question for the value layer
(:mod:`torchtrap.values.remote`): this module knows no project.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Protocol

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.findings import Range


class Span(Protocol):
    """Where something is in another file (``torchtrap.project.Span``)."""

    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_col(self) -> int: ...
    def range(self) -> Range: ...


REMOTE_ATTR = "_tt_remote"


def parsed_expr(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return ast.Name("unknown", ast.Load())


def remote_node(path: str, span: Span, where: str, name: str = "remote") -> ast.Call:
    """A stand-in node for code in another file: ``Context.related`` turns
    it into a related location there; ``lineno`` is that file's line."""
    node = ast.Call(func=ast.Name(name, ast.Load()), args=[], keywords=[])
    node.lineno, node.col_offset = span.line, span.col
    node.end_lineno, node.end_col_offset = span.end_line, span.end_col
    setattr(node, REMOTE_ATTR, (path, span.range(), where))
    return node


def is_remote(loader: DataLoaderCall) -> bool:
    return hasattr(loader.node, REMOTE_ATTR)


def remote_path(loader: DataLoaderCall) -> str | None:
    """The path of the other file a DataLoader is in; None for a local one."""
    remote = getattr(loader.node, REMOTE_ATTR, None)
    return None if remote is None else str(remote[0])


def remote_where(loader: DataLoaderCall | ast.AST, here: str | None = None) -> str | None:
    """``train.py:31`` for a DataLoader (or a stand-in node) in another
    file; "line 31" when it is in ``here`` after all."""
    node = loader.node if isinstance(loader, DataLoaderCall) else loader
    remote = getattr(node, REMOTE_ATTR, None)
    if remote is None:
        return None
    if here is not None and same_file(remote[0], here):
        return f"line {remote[1].start.line}"
    return str(remote[2])


MESSAGE_LIMIT = 120  # a Problems-panel line; longer details go to related information


def with_location(message: str, loaders: list[DataLoaderCall]) -> str:
    """The message naming the other file's DataLoader line (``... DataLoader
    workers (train.py:31): ...``, else ``... (DataLoader at train.py:31)``)
    when it still fits one Problems-panel line; else the message alone (the
    related location names the line either way)."""
    where = next((remote_where(lo) for lo in loaders if is_remote(lo)), None)
    if where is None:
        return message
    match = re.search(r"DataLoader workers?", message)
    if match is not None:  # "... 4 DataLoader workers (train.py:5): ..."
        longer = f"{message[: match.end()]} ({where}){message[match.end() :]}"
    else:
        longer = f"{message} (DataLoader at {where})"
    return longer if len(longer) <= MESSAGE_LIMIT else message


def same_file(a: str, b: str) -> bool:
    return a == b or os.path.abspath(a) == os.path.abspath(b)


def mark_remote(tree: ast.AST, path: str) -> None:
    """Give every located node of another file's tree that file's location,
    so that ``Context.related`` points there (a helper followed across files)."""
    name = os.path.basename(path)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None:
            continue
        col = node.col_offset  # type: ignore[attr-defined]
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        rng = Range.of(line, col, end_line, col if end_col is None else end_col)
        setattr(node, REMOTE_ATTR, (path, rng, f"{name}:{line}"))
