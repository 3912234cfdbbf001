"""Typing in progress: while a document does not parse, its last good
findings stay on screen instead of vanishing and coming back on every
keystroke. They are moved with the edits made since (lines inserted or
deleted above them); those on lines being edited are dropped."""

from __future__ import annotations

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


def shift(
    diagnostics: list[types.Diagnostic], change: LineShift | None, uri: str
) -> list[types.Diagnostic]:
    if change is None:
        return []
    out = []
    for diag in diagnostics:
        if diag.range.end.line < change.first:
            out.append(diag)
        elif diag.range.start.line > change.last:
            if change.delta == 0:
                out.append(diag)
                continue
            related = diag.related_information
            if related:
                related = [
                    _shift_related(r, change.delta)
                    if r.location.uri == uri and r.location.range.start.line > change.last
                    else r
                    for r in related
                ]
            out.append(
                attrs.evolve(
                    diag, range=_shift_range(diag.range, change.delta), related_information=related
                )
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

    def forget(self, uri: str) -> None:
        self._good.pop(uri, None)

    def __len__(self) -> int:
        return len(self._good)
