"""Suppression comments.

- ``# torchtrap: ignore[TT101, TT202]`` or bare ``# torchtrap: ignore`` on a line;
- ``# noqa: TT101`` (bare ``# noqa`` silences every code, as in flake8/ruff);
- ``# torchtrap: ignore-file`` (optionally ``[TT101]``) anywhere, on its own line.

A comment applies to the line a finding starts on and to the line it ends
on, so a comment after a multi-line call's closing parenthesis works too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchtrap.findings import Edit, Finding, Position, Range
from torchtrap.source import SourceText

_CODE = r"[A-Za-z]+[0-9]+"
COMMENT_RE = re.compile(
    r"#\s*(?:"
    r"torchtrap\s*:\s*(?P<kind>ignore-file|ignore)\b(?:\s*\[(?P<tt_codes>[^\]]*)\])?"
    r"|(?P<noqa>noqa)\b(?:\s*:\s*(?P<noqa_codes>" + _CODE + r"(?:[\s,]+" + _CODE + r")*))?"
    r")",
    re.IGNORECASE,
)


def _split(codes: str | None) -> frozenset[str] | None:
    if codes is None:
        return None
    parts = frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
    return parts or None


@dataclass
class Suppressions:
    file_codes: frozenset[str] | None = None  # None: no file-level comment
    file_all: bool = False
    lines: dict[int, frozenset[str] | None] = field(default_factory=dict)  # None = all

    def suppresses(self, finding: Finding) -> bool:
        if self.file_all or (self.file_codes and finding.code in self.file_codes):
            return True
        for line in {finding.range.start.line, finding.range.end.line}:
            if line in self.lines:
                codes = self.lines[line]
                if codes is None or finding.code in codes:
                    return True
        return False


def parse_suppressions(source: SourceText) -> Suppressions:
    result = Suppressions()
    text = source.text
    if "torchtrap" not in text and "noqa" not in text and "NOQA" not in text:
        return result
    for lineno, line in enumerate(source.lines, start=1):
        if "#" not in line:
            continue
        for match in COMMENT_RE.finditer(line):
            if match.group("kind") and match.group("kind").lower() == "ignore-file":
                codes = _split(match.group("tt_codes"))
                if codes is None:
                    result.file_all = True
                else:
                    result.file_codes = (result.file_codes or frozenset()) | codes
                continue
            codes = _split(
                match.group("tt_codes") if match.group("kind") else match.group("noqa_codes")
            )
            previous = result.lines.get(lineno, frozenset())
            if codes is None or previous is None:
                result.lines[lineno] = None
            else:
                result.lines[lineno] = previous | codes
    return result


def ignore_edit(source: SourceText, line: int, code: str) -> Edit:
    """An edit that silences ``code`` on ``line``: merged into an existing
    ``# torchtrap: ignore[...]`` or ``# noqa: ...`` comment, else appended."""
    text = source.line(line)
    for match in COMMENT_RE.finditer(text):
        kind = match.group("kind")
        if kind and kind.lower() == "ignore":
            codes_text = match.group("tt_codes")
            if codes_text is None:  # bare ignore already silences everything
                return Edit(Range(Position(line, match.end()), Position(line, match.end())), "")
            codes = [c for c in re.split(r"[\s,]+", codes_text) if c]
            if code not in codes:
                codes.append(code)
            start, end = match.span("tt_codes")
            return Edit(Range(Position(line, start), Position(line, end)), ", ".join(codes))
        if match.group("noqa"):
            codes_text = match.group("noqa_codes")
            if codes_text is None:
                return Edit(Range(Position(line, match.end()), Position(line, match.end())), "")
            codes = [c for c in re.split(r"[\s,]+", codes_text) if c]
            if code not in codes:
                codes.append(code)
            start, end = match.span("noqa_codes")
            return Edit(Range(Position(line, start), Position(line, end)), ", ".join(codes))
    stripped = text.rstrip()
    return Edit(
        Range(Position(line, len(stripped)), Position(line, len(text))),
        f"  # torchtrap: ignore[{code}]",
    )
