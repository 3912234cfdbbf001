"""Apply edits to a text, the way an editor does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from torchtrap.findings import Edit, Finding, Fix
from torchtrap.source import SourceText


class OverlappingEdits(ValueError):
    pass


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    source = SourceText(text)
    spans = sorted(
        ((source.offset(e.range.start), source.offset(e.range.end), e.new_text) for e in edits),
        key=lambda s: (s[0], s[1]),
    )
    out: list[str] = []
    cursor = 0
    for start, end, new_text in spans:
        if start < cursor:
            raise OverlappingEdits(f"edit at offset {start} overlaps the previous one")
        out.append(text[cursor:start])
        out.append(new_text)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def select_fixes(findings: Sequence[Finding], unsafe: bool = False) -> list[Fix]:
    """The fixes for the next round: each finding's first safe fix; with
    ``unsafe``, once no safe fix is left, each finding's first fix. Safe fixes
    go first because one often makes another finding disappear (assigning a
    discarded clamp back also guards the log after it)."""
    safe = [next(fix for fix in f.fixes if fix.is_safe) for f in findings if _has_safe(f)]
    if safe or not unsafe:
        return safe
    return [f.fixes[0] for f in findings if f.fixes]


def _has_safe(finding: Finding) -> bool:
    return any(fix.is_safe for fix in finding.fixes)


def compatible_fixes(text: str, fixes: Sequence[Fix]) -> list[Fix]:
    """The fixes, in order, whose edits overlap no earlier chosen one (two
    insertions at the same point count as overlapping: their order would be
    arbitrary). The rest wait for the next round."""
    source = SourceText(text)
    taken: list[tuple[int, int]] = []
    chosen: list[Fix] = []
    for fix in fixes:
        spans = [(source.offset(e.range.start), source.offset(e.range.end)) for e in fix.edits]
        if any(s < te and ts < e or s == e == ts == te for s, e in spans for ts, te in taken):
            continue
        taken.extend(spans)
        chosen.append(fix)
    return chosen


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """Apply as many non-overlapping fixes as possible; returns (text, count)."""
    chosen = compatible_fixes(text, fixes)
    return apply_edits(text, [edit for fix in chosen for edit in fix.edits]), len(chosen)
