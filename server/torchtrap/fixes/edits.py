"""Small, formatting-preserving edit builders shared by rules.

Each edit touches only the characters that must change, at ranges taken
from ``ast`` positions, so comments, quotes and layout around it survive.
"""

from __future__ import annotations

import ast

from torchtrap.findings import Edit, Position, Range
from torchtrap.source import SourceText


def replace(source: SourceText, node: ast.AST, new_text: str) -> Edit:
    return Edit(source.node_range(node), new_text)


def insert_at(position: Position, text: str) -> Edit:
    return Edit(Range(position, position), text)


def insert_before_statement(source: SourceText, stmt: ast.stmt, text: str) -> Edit:
    """Insert ``text`` (no trailing newline) at the start of ``stmt``'s own
    line, indented like it, as one or more new lines."""
    indent = source.indentation(stmt.lineno)
    nl = source.newline
    lines = [indent + line if line else line for line in text.split("\n")]
    return insert_at(Position(stmt.lineno, 0), nl.join(lines) + nl)


def insert_after_statement(source: SourceText, stmt: ast.stmt, text: str) -> Edit:
    """Insert ``text`` (no trailing newline) as new lines after ``stmt``,
    indented like its first line."""
    indent = source.indentation(stmt.lineno)
    nl = source.newline
    lines = [indent + line if line else line for line in text.split("\n")]
    end = stmt.end_lineno or stmt.lineno
    if end >= len(source.lines):  # the last line, without a newline after it
        return insert_at(Position(end, len(source.line(end))), nl + nl.join(lines))
    return insert_at(Position(end + 1, 0), nl.join(lines) + nl)


def module_insertion_line(source: SourceText, tree: ast.Module) -> int:
    """The line after the module docstring, ``__future__`` imports and the
    top import block: where a helper function goes."""
    line = 1
    for stmt in tree.body:
        if (
            isinstance(stmt, (ast.Import, ast.ImportFrom))
            or (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
                and stmt is tree.body[0]
            )
            or isinstance(stmt, ast.If)
            and _is_import_guard(stmt)
        ):
            line = (stmt.end_lineno or stmt.lineno) + 1
        else:
            break
    return line


def _is_import_guard(stmt: ast.If) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body)


def insert_module_block(source: SourceText, tree: ast.Module, block: str) -> Edit:
    """A top-level block after the imports, with PEP 8's two blank lines."""
    line = module_insertion_line(source, tree)
    nl = source.newline
    body = block.strip("\n").replace("\n", nl)
    if line > len(source.lines) or (line == len(source.lines) and not source.line(line)):
        return insert_at(Position(len(source.lines), len(source.lines[-1])), nl * 3 + body + nl)
    # Blank lines already after the insertion point count towards the two
    # that follow the block (else a usual file gets four).
    blank = 0
    while line + blank < len(source.lines) and not source.line(line + blank).strip():
        blank += 1
    after = nl * (1 + max(0, 2 - blank))
    return insert_at(Position(line, 0), nl * 2 + body + after if line > 1 else body + after)


def add_import(source: SourceText, tree: ast.Module, statement: str) -> Edit | None:
    """``import x`` after the last top-level import, unless already there."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and ast.unparse(stmt) == statement:
            return None
    last = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            last = stmt
    if last is None:
        return insert_at(
            Position(module_insertion_line(source, tree), 0), statement + source.newline
        )
    end = last.end_lineno or last.lineno
    return insert_at(Position(end + 1, 0), statement + source.newline)


def add_keyword_argument(source: SourceText, call: ast.Call, name: str, value: str) -> Edit:
    """Add ``name=value`` to a call, following its layout: one line stays one
    line; a call with one argument per line and a trailing comma gets a new
    line indented like its last argument."""
    last = _last_argument(call)
    end = source.position(call.end_lineno or call.lineno, call.end_col_offset or 0)
    close = Position(end.line, max(end.column - 1, 0))  # the ")"
    if last is None:
        return insert_at(close, f"{name}={value}")
    last_end = source.position(last.end_lineno or last.lineno, last.end_col_offset or 0)
    between = source.segment(Range(last_end, close))
    if "," in between:
        comma = source.offset(last_end) + between.index(",") + 1
        if (last.end_lineno or last.lineno) != (call.end_lineno or call.lineno):
            indent = source.indentation(last.lineno)
            pos = source.position_at(comma)
            return insert_at(pos, f"{source.newline}{indent}{name}={value},")
        return insert_at(source.position_at(comma), f" {name}={value}")
    return insert_at(last_end, f", {name}={value}")


def _last_argument(call: ast.Call) -> ast.expr | ast.keyword | None:
    nodes: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not nodes:
        return None
    return max(nodes, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))


def keyword_value_edit(source: SourceText, call: ast.Call, name: str, value: str) -> Edit:
    """Set keyword ``name`` to ``value``: replace it if present, else add it."""
    for kw in call.keywords:
        if kw.arg == name:
            return replace(source, kw.value, value)
    return add_keyword_argument(source, call, name, value)


def delete_lines(source: SourceText, stmt: ast.stmt) -> Edit:
    """Remove ``stmt``'s whole lines (with their line break); for a
    statement that is alone on its lines (see :func:`alone_on_lines`)."""
    end = stmt.end_lineno or stmt.lineno
    if end >= len(source.lines):
        # The last line: take the line break before the statement instead.
        start = (
            Position(stmt.lineno - 1, len(source.line(stmt.lineno - 1)))
            if stmt.lineno > 1
            else Position(1, 0)
        )
        return Edit(Range(start, Position(end, len(source.line(end)))), "")
    return Edit(Range(Position(stmt.lineno, 0), Position(end + 1, 0)), "")


def alone_on_lines(source: SourceText, stmt: ast.stmt) -> bool:
    """Nothing but ``stmt`` (and a trailing comment) on its lines: no
    ``a; b``, no ``if x: stmt``."""
    if source.position(stmt.lineno, stmt.col_offset).column != len(source.indentation(stmt.lineno)):
        return False
    end = stmt.end_lineno or stmt.lineno
    tail = source.line(end)[source.position(end, stmt.end_col_offset or 0).column :]
    return not tail.strip() or tail.strip().startswith("#")
