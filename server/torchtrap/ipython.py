"""A notebook cell as IPython reads it, turned into Python the linter can parse.

IPython (``IPython.core.inputtransformer2``) first drops leading blank
lines and removes the first line's indentation from every line that starts
with it, then treats a first line ``%%name`` as a cell magic (the whole
cell goes to the magic), then rewrites escapes at the start of a logical
line: ``%magic``, ``!shell``, ``x = !cmd``, ``obj?``, each running on over
lines that end with a backslash. This does the same, keeping every line
where it was:

* the dedent is recorded per line (``shifts``), so a column maps back;
* an escape is replaced by a statement of the same width (``...`` padded
  with a comment), so an escape alone in a block still leaves a body;
  ``x = !cmd`` keeps ``x = `` and becomes ``x = ...``; its continuation
  lines become comments;
* a cell magic whose body is not Python (``%%bash``, ``%%writefile``) is
  blanked whole; one whose body IPython runs as Python (``%%time``) keeps
  its body.

Escapes are recognised only at the start of a logical line (not inside
brackets, strings, or after a backslash), as IPython's tokenizer does, so
``("a"\\n % b)`` stays Python.
"""

from __future__ import annotations

import ast
import bisect
import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Cell magics whose body IPython runs as Python in the notebook's namespace.
# The timing and profiling ones run it to measure it: a result thrown away
# there is the point (``CellMode.TIMED``).
_DISPLAYING_CELL_MAGICS = frozenset({"time", "capture", "debug"})
_TIMING_CELL_MAGICS = frozenset({"timeit", "prun", "memit", "snakeviz"})
_MAGIC_RE = re.compile(r"%%?|!!?")
_ASSIGN_MAGIC_RE = re.compile(r"[\w.\[\], ]+=\s*(?=[%!])")
# ``obj?``, ``??obj``, and the wildcard search ``torch.*Tensor?`` (psearch).
_HELP_RE = re.compile(r"[\w.*]*\?{1,2}\s*$|\?{1,2}[\w.*]+\s*$")
_INDENT_RE = re.compile(r"[ \t]+")


class CellMode(enum.Enum):
    PYTHON = "python"  # the last expression statement is displayed
    TIMED = "timed"  # %%timeit and the like: every statement is run to be measured
    NOT_PYTHON = "not-python"  # %%bash, %%writefile...: nothing to lint


@dataclass(frozen=True)
class PreparedCell:
    text: str  # what the linter parses; as many lines as the cell
    shifts: tuple[int, ...]  # per line: columns IPython's dedent removed
    indent: str  # the dedented prefix ("" when none)
    mode: CellMode


@dataclass(frozen=True)
class CellSpan:
    index: int  # position in the list of cells given
    first_line: int  # 1-based line of the joined module
    line_count: int
    # Per line of the cell: columns IPython's dedent removed (empty: none).
    shifts: tuple[int, ...] = ()
    indent: str = ""  # the prefix removed
    mode: CellMode = CellMode.PYTHON

    def shift(self, line: int) -> int:
        """Columns removed from the cell's 1-based ``line``."""
        return self.shifts[line - 1] if 0 < line <= len(self.shifts) else 0


def displayed_lines(
    tree: ast.Module, lines: Sequence[str], spans: Sequence[CellSpan]
) -> frozenset[int]:
    """Lines of the top-level expression statements whose value the notebook
    uses: a cell's last statement when it is an expression (Jupyter shows
    it; a trailing ``;`` hides it, then it is thrown away), and every
    expression statement of a timed cell (run to be measured)."""
    if not spans:
        return frozenset()
    firsts = [span.first_line for span in spans]
    by_cell: dict[int, list[ast.stmt]] = {}
    for stmt in tree.body:
        i = bisect.bisect_right(firsts, stmt.lineno) - 1
        if i >= 0 and stmt.lineno < spans[i].first_line + spans[i].line_count:
            by_cell.setdefault(i, []).append(stmt)
    out: set[int] = set()
    for i, stmts in by_cell.items():
        if spans[i].mode is CellMode.TIMED:
            out.update(s.lineno for s in stmts if isinstance(s, ast.Expr))
            continue
        last = stmts[-1]
        if isinstance(last, ast.Expr) and not _silenced(last, lines):
            out.add(last.lineno)
    return frozenset(out)


def _silenced(stmt: ast.stmt, lines: Sequence[str]) -> bool:
    """A trailing ``;`` after the statement (IPython then displays nothing)."""
    end = (stmt.end_lineno or stmt.lineno) - 1
    if end >= len(lines):
        return False
    raw = lines[end].encode("utf-8")[stmt.end_col_offset or 0 :]
    rest = raw.decode("utf-8", "replace")
    return rest.lstrip().startswith(";")


def prepare_cell(text: str) -> PreparedCell:
    lines = text.split("\n")
    shifts = [0] * len(lines)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return PreparedCell(text, tuple(shifts), "", CellMode.PYTHON)
    indent = ""
    match = _INDENT_RE.match(lines[first])
    if match is not None:
        indent = match.group(0)
        for i in range(first, len(lines)):
            if lines[i].startswith(indent):
                lines[i] = lines[i][len(indent) :]
                shifts[i] = len(indent)
    mode = CellMode.PYTHON
    body_start = 0
    if lines[first].startswith("%%"):
        name = lines[first][2:].split(None, 1)[0] if len(lines[first]) > 2 else ""
        if name in _TIMING_CELL_MAGICS:
            mode = CellMode.TIMED
        elif name not in _DISPLAYING_CELL_MAGICS:
            blank = "\n".join("" for _ in lines)
            return PreparedCell(blank, tuple(shifts), indent, CellMode.NOT_PYTHON)
        lines[first] = _comment(lines[first])
        body_start = first + 1
    if "%" in text or "!" in text or "?" in text:
        _mask_escapes(lines, body_start)
    return PreparedCell("\n".join(lines), tuple(shifts), indent, mode)


def _comment(line: str) -> str:
    """The line as a comment of the same width."""
    stripped = line.lstrip()
    if not stripped:
        return line
    start = len(line) - len(stripped)
    return line[:start] + "#" + line[start + 1 :]


def _statement(line: str, start: int) -> str:
    """``line[start:]`` (an escape) as ``...`` padded with a comment, same width."""
    width = len(line) - start
    if width >= 3:
        filler = "..." + ("#" + "-" * (width - 4) if width > 3 else "")
    else:
        filler = "0" + "#" * (width - 1)
    return line[:start] + filler


def _escape_at(line: str) -> int | None:
    """Where the escape to replace starts, if the logical line is one."""
    stripped = line.lstrip()
    indent = len(line) - len(stripped)
    if not stripped:
        return None
    if _MAGIC_RE.match(stripped):
        return indent
    assign = _ASSIGN_MAGIC_RE.match(stripped)
    if assign is not None and "==" not in stripped[: assign.end()]:
        return indent + assign.end()
    if _HELP_RE.match(stripped):
        return indent
    return None


def _mask_escapes(lines: list[str], start: int) -> None:
    scanner = _Scanner()
    escaping = False  # inside an escape continued with a backslash
    for i in range(start, len(lines)):
        line = lines[i]
        if escaping:
            escaping = line.endswith("\\")
            lines[i] = _comment(line)
            continue
        if scanner.at_logical_start:
            at = _escape_at(line)
            if at is not None:
                escaping = line.endswith("\\")
                lines[i] = _statement(line, at)
                continue
        scanner.feed(line)


class _Scanner:
    """Just enough of Python's tokenizer to tell whether a line starts a
    logical line: open brackets, strings, backslash continuations."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open string's quote
        self.continued = False

    @property
    def at_logical_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if self.quote is not None:
                if ch == "\\":
                    if i == n - 1:
                        return  # an escaped newline: the string goes on
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                i += 1
                continue
            if ch == "#":
                break
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(self.depth - 1, 0)
            elif ch in "\"'":
                self.quote = ch * 3 if line.startswith(ch * 3, i) else ch
                i += len(self.quote)
                continue
            elif ch == "\\" and i == n - 1:
                self.continued = True
            i += 1
        if self.quote is not None and len(self.quote) == 1:
            self.quote = None  # an unterminated string: a syntax error, start afresh


__all__ = ["CellMode", "CellSpan", "PreparedCell", "displayed_lines", "prepare_cell"]
