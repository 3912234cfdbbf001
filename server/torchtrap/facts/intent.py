"""What code says about itself: comments and docstrings that state an
intent a rule must respect (Monte-Carlo dropout, a module kept out of the
state dict on purpose)."""

from __future__ import annotations

import ast
import re

from torchtrap.source import SourceText

Documented = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module


def comments(source: SourceText, first: int, last: int) -> str:
    """The comment text on lines ``first``..``last`` (1-based), joined."""
    found = []
    for lineno in range(max(first, 1), last + 1):
        line = source.line(lineno)
        if "#" in line:
            found.append(line.split("#", 1)[1])
    return "\n".join(found)


def says(
    source: SourceText,
    pattern: re.Pattern[str],
    *,
    node: ast.AST | None = None,
    before: int = 1,
    documented: tuple[Documented | None, ...] = (),
) -> bool:
    """Does a comment on ``node``'s lines (and ``before`` lines above it), or
    the docstring of one of ``documented``, match ``pattern``?"""
    if node is not None:
        first = getattr(node, "lineno", 1)
        last = getattr(node, "end_lineno", None) or first
        if pattern.search(comments(source, first - before, last)):
            return True
    for owner in documented:
        if owner is None:
            continue
        doc = ast.get_docstring(owner, clean=False)
        if doc and pattern.search(doc):
            return True
    return False
