"""Where, in the user's source, a runtime observation belongs: the line a
frame was on (with the columns Python 3.11+ records), or the statement
that assigns `self.<attr>` in the class that holds an object."""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from typing import Any

from torchtrap.findings import Range


@lru_cache(maxsize=64)
def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


@lru_cache(maxsize=64)
def _tree(path: str) -> ast.Module | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def source_of(path: str) -> str | None:
    return _read(path)


def clear() -> None:
    _read.cache_clear()
    _tree.cache_clear()


def _line_range(path: str, line: int) -> Range:
    text = _read(path)
    lines = text.splitlines() if text is not None else []
    body = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(body) - len(body.lstrip())
    return Range.of(line, start, line, max(len(body.rstrip()), start))


def site_range(site: dict[str, Any]) -> Range | None:
    """The range of a frame the hooks recorded."""
    line = site.get("line")
    path = site.get("file")
    if not isinstance(line, int) or not isinstance(path, str) or line < 1:
        return None
    col, end_line, end_col = site.get("column"), site.get("end_line"), site.get("end_column")
    if isinstance(col, int) and isinstance(end_line, int) and isinstance(end_col, int):
        # Python counts UTF-8 bytes; findings count code points.
        text = _read(path)
        lines = text.splitlines() if text is not None else []
        if 0 < line <= len(lines) and 0 < end_line <= len(lines):
            col = len(lines[line - 1].encode()[:col].decode(errors="ignore"))
            end_col = len(lines[end_line - 1].encode()[:end_col].decode(errors="ignore"))
            return Range.of(line, col, end_line, end_col)
    return _line_range(path, line)


def _class(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    scope: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        found = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found


def _self_store(node: ast.AST, attr: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def assignment_range(owner: dict[str, Any]) -> Range | None:
    """The statement that assigns `self.<attr>` in class `owner["class"]` of
    `owner["file"]`, preferring `__init__`; None when there is none."""
    path, qualname, attr = owner.get("file"), owner.get("class"), owner.get("attr")
    if not (isinstance(path, str) and isinstance(qualname, str) and isinstance(attr, str)):
        return None
    tree = _tree(os.path.abspath(path))
    klass = _class(tree, qualname) if tree is not None else None
    if klass is None:
        return None
    best: ast.stmt | None = None
    for method in klass.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = [t for target in node.targets for t in ast.walk(target)]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = [node.target]
            if any(_self_store(t, attr) for t in targets):
                assert isinstance(node, ast.stmt)
                if best is None or method.name == "__init__":
                    best = node
                break
        if best is not None and method.name == "__init__":
            break
    if best is None:
        return None
    return Range.of(
        best.lineno, best.col_offset, best.end_lineno or best.lineno, best.end_col_offset or 0
    )
