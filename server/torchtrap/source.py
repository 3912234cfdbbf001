"""Decoding user files and mapping ``ast`` positions to code-point columns."""

from __future__ import annotations

import ast
import bisect
import codecs
import re
from dataclasses import dataclass, field

from torchtrap.findings import Position, Range

_CODING_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def split_lines(text: str) -> list[str]:
    """Lines without their terminators, numbered as Python's tokenizer and
    LSP number them: ``\\r\\n``, a lone ``\\r`` and ``\\n`` end a line; the
    extra separators of ``str.splitlines`` (form feed, U+2028, ...) do not."""
    if "\r" not in text:
        return text.split("\n")
    return _NEWLINE_RE.split(text)


def line_starts(text: str) -> list[int]:
    """String index at which each line (as :func:`split_lines` counts) starts."""
    if "\r" not in text:
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        return starts
    return [0, *(m.end() for m in _NEWLINE_RE.finditer(text))]


class UndecodableSource(ValueError):
    """The bytes are not text in the encoding the file declares."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def decode_source(data: bytes) -> str:
    """Decode like Python does (BOM, PEP 263 cookie, else UTF-8), with a
    message that says where the bad byte is instead of a traceback."""
    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    else:
        for first_lines in data.split(b"\n", 2)[:2]:
            match = _CODING_RE.match(first_lines)
            if match:
                encoding = match.group(1).decode("ascii", "replace")
                break
    try:
        return data.decode(encoding)
    except LookupError:
        raise UndecodableSource(f"unknown encoding {encoding!r} in coding cookie", 1, 0) from None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1)
        bad = data[err.start : err.start + 1].hex()
        raise UndecodableSource(
            f"file is not valid {encoding}: byte 0x{bad} at line {line}, column {column + 1}",
            line,
            column,
        ) from None


@dataclass
class SourceText:
    """The text of one module with cheap line access and byte→code-point
    column conversion (``ast`` reports UTF-8 byte offsets)."""

    text: str
    lines: list[str] = field(init=False)
    _starts: list[int] | None = field(default=None, init=False, repr=False)
    # line -> (byte offset of each non-ASCII character, extra bytes up to and
    # including it): a column costs a bisect, not a re-encode of the line
    # (quadratic on a minified one-line file).
    _wide: dict[int, tuple[list[int], list[int]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)

    def line(self, lineno: int) -> str:
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1]
        return ""

    def column(self, lineno: int, byte_col: int) -> int:
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        wide = self._wide.get(lineno)
        if wide is None:
            offsets, extras, extra = [], [], 0
            for match in _NON_ASCII_RE.finditer(line):
                offsets.append(match.start() + extra)
                extra += len(match.group().encode("utf-8", "surrogatepass")) - 1
                extras.append(extra)
            wide = self._wide[lineno] = (offsets, extras)
        offsets, extras = wide
        before = bisect.bisect_left(offsets, byte_col)  # characters starting before it
        if before == 0:
            return byte_col
        # Inside a character (never from ``ast``): that character's column.
        start = offsets[before - 1]
        column = byte_col - extras[before - 1]
        return max(column, start - (extras[before - 2] if before > 1 else 0) + 1)

    def position(self, lineno: int, byte_col: int) -> Position:
        return Position(lineno, self.column(lineno, byte_col))

    def node_range(self, node: ast.AST) -> Range:
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_lineno = getattr(node, "end_lineno", None) or lineno
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        return Range(self.position(lineno, col), self.position(end_lineno, end_col))

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = line_starts(self.text)
        return self._starts

    def offset(self, position: Position) -> int:
        """String index of a position (clamped to the text)."""
        if position.line < 1:
            return 0
        if position.line > len(self.lines):
            return len(self.text)
        start = self._line_starts()[position.line - 1]
        return start + max(0, min(position.column, len(self.lines[position.line - 1])))

    def position_at(self, offset: int) -> Position:
        """The position of a string index (the inverse of :meth:`offset`)."""
        starts = self._line_starts()
        line = bisect.bisect_right(starts, offset)
        return Position(line, offset - starts[line - 1])

    def segment(self, rng: Range) -> str:
        return self.text[self.offset(rng.start) : self.offset(rng.end)]

    def indentation(self, lineno: int) -> str:
        line = self.line(lineno)
        return line[: len(line) - len(line.lstrip(" \t"))]

    @property
    def newline(self) -> str:
        """The line terminator a fix inserts: the file's first one."""
        match = _NEWLINE_RE.search(self.text, 0, 10_000)
        return match.group() if match else "\n"
