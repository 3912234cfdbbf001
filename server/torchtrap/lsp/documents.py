"""Open text documents (files and notebook cells), kept by the server itself.

pygls' own workspace splits lines with ``str.splitlines`` (which also breaks
on form feeds and U+2028, so an incremental edit after one lands on the
wrong line) and converts positions character by character; this store
applies changes with LSP's line rules and the negotiated encoding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.uris import to_fs_path

from torchtrap.lsp.positions import from_client_character, line_starts, split_lines


@dataclass(frozen=True)
class LineShift:
    """An edit replaced old lines ``first..last`` (0-based, inclusive) with
    ``first..last + delta``; used to move findings that are kept across a
    syntax error (see ``carry.py``). ``last < first`` when no old line was
    edited (lines inserted between two lines): those from ``first`` on move."""

    first: int
    last: int
    delta: int


@dataclass
class TextDocument:
    uri: str
    text: str
    version: int
    language_id: str = "python"
    _starts: list[int] | None = field(default=None, repr=False)
    _lines: list[str] | None = field(default=None, repr=False)

    @property
    def path(self) -> str | None:
        """Filesystem path for ``file:`` URIs, else None (untitled, cells)."""
        if not self.uri.startswith("file:"):
            return None
        return to_fs_path(self.uri)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def offset(self, position: types.Position, encoding: str) -> int:
        """String index of an LSP position (clamped to the text)."""
        if self._starts is None:
            self._starts = line_starts(self.text)
        starts = self._starts
        if position.line >= len(starts):
            return len(self.text)
        start = starts[position.line]
        end = starts[position.line + 1] if position.line + 1 < len(starts) else len(self.text)
        line = self.text[start:end].rstrip("\r\n")
        return start + from_client_character(line, position.character, encoding)

    def apply(
        self, change: types.TextDocumentContentChangeEvent, encoding: str
    ) -> LineShift | None:
        """Apply one content change; returns how lines moved (None: all of them)."""
        if isinstance(change, types.TextDocumentContentChangePartial):
            start = self.offset(change.range.start, encoding)
            end = max(self.offset(change.range.end, encoding), start)
            first, last = change.range.start.line, change.range.end.line
            old_lines = last - first
            new_lines = len(split_lines(change.text)) - 1
            # "\r" + "\n" joined by the edit into one terminator: let the
            # caller drop everything rather than guess.
            joins_crlf = (
                start > 0 and self.text[start - 1] == "\r" and change.text[:1] == "\n"
            ) or (change.text[-1:] == "\r" and self.text[end : end + 1] == "\n")
            # Lines typed above a line (Enter at its start) or below it (Enter
            # at its end) leave it intact, only moved: not an edited line.
            ends_a_line = change.text[-1:] in ("\n", "\r")
            if change.range.end.character == 0 and (
                ends_a_line if change.text else change.range.start.character == 0
            ):
                last -= 1
            at_line_end = self.text[start : start + 1] in ("\n", "\r", "")
            if change.text[:1] in ("\n", "\r") and at_line_end:
                first += 1
            self._set(self.text[:start] + change.text + self.text[end:])
            return None if joins_crlf else LineShift(first, last, new_lines - old_lines)
        shift = _diff_lines(self.lines, split_lines(change.text))
        self._set(change.text)
        return shift

    def _set(self, text: str) -> None:
        self.text = text
        self._starts = None
        self._lines = None


def _diff_lines(old: list[str], new: list[str]) -> LineShift:
    """The shift a full-text replacement amounts to: common leading and
    trailing lines stay, the middle counts as edited."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return LineShift(prefix, len(old) - 1 - suffix, len(new) - len(old))


class DocumentStore:
    """URI -> document; closing a document frees it."""

    def __init__(self) -> None:
        self._docs: dict[str, TextDocument] = {}

    def open(self, item: types.TextDocumentItem) -> TextDocument:
        doc = TextDocument(item.uri, item.text, item.version, item.language_id)
        self._docs[item.uri] = doc
        return doc

    def get(self, uri: str) -> TextDocument | None:
        return self._docs.get(uri)

    def close(self, uri: str) -> TextDocument | None:
        return self._docs.pop(uri, None)

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[TextDocument]:
        return iter(list(self._docs.values()))
