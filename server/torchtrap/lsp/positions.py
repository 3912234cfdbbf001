"""Engine positions (1-based line, code-point column) <-> LSP positions
(0-based line, column in the negotiated encoding's code units).

LSP counts UTF-16 code units unless the client and server agree on another
``positionEncoding``; the engine counts code points (Python ``str``
indices). A CJK character is 1 code point, 1 UTF-16 unit and 3 UTF-8 bytes;
an emoji outside the BMP is 1 code point, 2 UTF-16 units and 4 UTF-8 bytes;
a tab is one of each. ASCII lines (the vast majority) take a fast path.

Lines are split the way LSP (and Python's tokenizer) split them: on
``\\r\\n``, ``\\r`` and ``\\n`` only, never on the extra separators that
``str.splitlines`` knows (form feed, U+2028, ...), which would shift every
later line.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from torchtrap.findings import Position, Range

# The engine's line model, re-exported for the LSP modules.
from torchtrap.source import line_starts as line_starts
from torchtrap.source import split_lines as split_lines

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value

# Our preference: UTF-8 is what ``ast`` counts and what most non-VS Code
# clients prefer; UTF-32 equals code points; UTF-16 is the mandatory default.
PREFERENCE = (UTF8, UTF32, UTF16)


def choose_encoding(offered: Sequence[str] | None) -> str:
    """The encoding to use given the client's ``general.positionEncodings``."""
    offered_set = {str(getattr(e, "value", e)) for e in offered or ()}
    for encoding in PREFERENCE:
        if encoding in offered_set:
            return encoding
    return UTF16


def count_units(text: str, encoding: str) -> int:
    """Length of ``text`` in the encoding's code units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _units_of(char: str, encoding: str) -> int:
    code = ord(char)
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 2 if code > 0xFFFF else 1


def to_client_character(line: str, column: int, encoding: str) -> int:
    """Code-point column -> code units (clamped to the line)."""
    column = max(0, min(column, len(line)))
    if encoding == UTF32 or line.isascii():
        return column
    return count_units(line[:column], encoding)


def from_client_character(line: str, character: int, encoding: str) -> int:
    """Code units -> code-point column (clamped to the line). A position
    inside a character's units (mid surrogate pair or UTF-8 sequence) moves
    to the end of that character."""
    if character <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(character, len(line))
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        units += _units_of(char, encoding)
    return len(line)


def _line(lines: Sequence[str], index: int) -> str:
    return lines[index] if 0 <= index < len(lines) else ""


def to_lsp_position(lines: Sequence[str], position: Position, encoding: str) -> types.Position:
    line = max(position.line - 1, 0)
    if line >= len(lines):  # past the end: the end of the last line
        line = max(len(lines) - 1, 0)
        return types.Position(line, count_units(_line(lines, line), encoding))
    return types.Position(line, to_client_character(lines[line], position.column, encoding))


def to_lsp_range(lines: Sequence[str], rng: Range, encoding: str) -> types.Range:
    return types.Range(
        to_lsp_position(lines, rng.start, encoding), to_lsp_position(lines, rng.end, encoding)
    )


def from_lsp_position(lines: Sequence[str], position: types.Position, encoding: str) -> Position:
    line = position.line
    if line >= len(lines):
        last = max(len(lines) - 1, 0)
        return Position(last + 1, len(_line(lines, last)))
    return Position(line + 1, from_client_character(lines[line], position.character, encoding))


def from_lsp_range(lines: Sequence[str], rng: types.Range, encoding: str) -> Range:
    return Range(
        from_lsp_position(lines, rng.start, encoding), from_lsp_position(lines, rng.end, encoding)
    )
