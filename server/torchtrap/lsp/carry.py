"""Typing in progress: while a document does not parse, its last good
findings stay on screen instead of vanishing and coming back on every
keystroke. They are moved with the edits made since (lines inserted or
deleted above them); those on lines being edited are dropped."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from lsprotocol import types

from torchtrap.lsp.documents import LineShift


def _shift_range(rng: types.Range, delta: int) -> types.Range:
    return types.Range(
        types.Position(rng.start.line + delta, rng.start.character),
        types.Position(rng.end.line + delta, rng.end.character),
    )


def _shift_related(
    info: types.DiagnosticRelatedInformation, delta: int
) -> types.DiagnosticRelatedInformation:
    location = attrs.evolve(info.location, range=_shift_range(info.location.range, delta))
    return attrs.evolve(info, location=location)


def _moved_related(
    related: Sequence[types.DiagnosticRelatedInformation] | None,
    change: LineShift | None,
    uri: str,
) -> list[types.DiagnosticRelatedInformation] | None:
    """Related locations in the edited document ``uri`` move with the edit
    too (an import the finding points at, below lines typed above it); one
    on an edited line is dropped: where it went is not known."""
    if not related:
        return None
    out = []
    for info in related:
        rng = info.location.range
        if info.location.uri != uri:
            out.append(info)
        elif change is None:
            continue
        elif rng.end.line < change.first:
            out.append(info)
        elif rng.start.line > change.last:
            out.append(_shift_related(info, change.delta) if change.delta else info)
    return out or None


def shift(
    diagnostics: list[types.Diagnostic], change: LineShift | None, uri: str
) -> list[types.Diagnostic]:
    if change is None:
        return []
    out = []
    for diag in diagnostics:
        if diag.range.end.line < change.first:
            delta = 0
        elif diag.range.start.line > change.last:
            delta = change.delta
        else:
            continue  # on an edited line: where it went is not known
        related = _moved_related(diag.related_information, change, uri)
        out.append(
            attrs.evolve(diag, range=_shift_range(diag.range, delta), related_information=related)
        )
    return out


class CarryStore:
    """URI -> the diagnostics of its last version that parsed."""

    def __init__(self) -> None:
        self._good: dict[str, list[types.Diagnostic]] = {}

    def remember(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self._good[uri] = [d for d in diagnostics if d.code != "TT000"]

    def __contains__(self, uri: str) -> bool:
        """Whether a version of ``uri`` parsed since it was opened."""
        return uri in self._good

    def get(self, uri: str) -> list[types.Diagnostic]:
        return list(self._good.get(uri, ()))

    def moved(self, uri: str, change: LineShift | None) -> None:
        if uri in self._good:
            self._good[uri] = shift(self._good[uri], change, uri)
        # Another cell's carried findings may point into this one.
        for other, diagnostics in self._good.items():
            if other != uri and any(
                r.location.uri == uri for d in diagnostics for r in d.related_information or ()
            ):
                self._good[other] = [
                    attrs.evolve(
                        d, related_information=_moved_related(d.related_information, change, uri)
                    )
                    for d in diagnostics
                ]

    def forget(self, uri: str) -> None:
        self._good.pop(uri, None)

    def __len__(self) -> int:
        return len(self._good)
