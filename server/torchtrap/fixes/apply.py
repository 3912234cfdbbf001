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
    """The first applicable fix of each finding (safe ones only, unless
    ``unsafe``); fixes whose edits overlap an earlier one wait for the next round."""
    chosen: list[Fix] = []
    for finding in findings:
        for fix in finding.fixes:
            if fix.is_safe or unsafe:
                chosen.append(fix)
                break
    return chosen


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """Apply as many non-overlapping fixes as possible; returns (text, count)."""
    source = SourceText(text)
    taken: list[tuple[int, int]] = []
    edits: list[Edit] = []
    applied = 0
    for fix in fixes:
        spans = [(source.offset(e.range.start), source.offset(e.range.end)) for e in fix.edits]
        if any(s < te and ts < e or (s == e == ts == te) for s, e in spans for ts, te in taken):
            continue
        taken.extend(spans)
        edits.extend(fix.edits)
        applied += 1
    return apply_edits(text, edits), applied
