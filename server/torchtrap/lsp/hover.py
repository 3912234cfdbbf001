"""Hover: a few lines about a rule on a finding's range, and on a rule code
written in a suppression comment (``# torchtrap: ignore[TT101]``,
``# noqa: TT101``). The editor already shows the diagnostic's message, so
the hover does not repeat it: the rule's one-sentence why, its measured
fact, the fixes on offer and a link to the full doc (which Explain Rule
also shows), and the path its value took: each related place as a link
(``data.py:31``: "the DataLoader is built from here, with 4 workers"), so a
finding that rests on another file says where. Built from rule metadata
and the finding, so a new rule gets it for free."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import unquote

from lsprotocol import types

from torchtrap.findings import Finding, Position, Range
from torchtrap.lsp.diagnostics import related_locations
from torchtrap.lsp.positions import from_client_character, to_lsp_range
from torchtrap.lsp.settings import Settings
from torchtrap.lsp.workspace import LintResult
from torchtrap.rules import get_rule
from torchtrap.suppressions import COMMENT_RE

_CODE_RE = re.compile(r"[A-Za-z]+[0-9]+")


def rule_markdown(code: str, settings: Settings, fixes: Sequence[str] = ()) -> str | None:
    rule = get_rule(code)
    if rule is None:
        return None
    parts = [f"**{rule.code}** `{rule.name}`: {rule.why()}"]
    if rule.fact:
        parts.append(rule.fact)
    if fixes:
        parts.append("Fixes: " + "; ".join(fixes))
    parts.append(f"[{rule.code} documentation]({settings.docs_url(rule.code)})")
    return "\n\n".join(parts)


def code_in_comment(line: str, column: int) -> tuple[str, int, int] | None:
    """The rule code under ``column`` inside a suppression comment."""
    if "#" not in line:
        return None
    for match in COMMENT_RE.finditer(line):
        for group in ("tt_codes", "noqa_codes"):
            if match.group(group) is None:
                continue
            start = match.start(group)
            for code in _CODE_RE.finditer(match.group(group)):
                if start + code.start() <= column <= start + code.end():
                    return code.group(0).upper(), start + code.start(), start + code.end()
    return None


def hover(
    result: LintResult | None,
    uri: str,
    lines: list[str],
    position: types.Position,
    settings: Settings,
    encoding: str,
) -> types.Hover | None:
    line = lines[position.line] if position.line < len(lines) else ""
    column = from_client_character(line, position.character, encoding)
    in_comment = code_in_comment(line, column)
    if in_comment is not None:
        code, start, end = in_comment
        text = rule_markdown(code, settings)
        if text is None:
            return None
        rng = Range(Position(position.line + 1, start), Position(position.line + 1, end))
        return _hover(text, to_lsp_range(lines, rng, encoding))
    if result is None:
        return None
    here = result.to_unit(uri, Position(position.line + 1, column))
    if here is None:
        return None
    hit: Range | None = None
    fixes: dict[str, list[str]] = {}  # code -> fix titles, in order
    paths: dict[str, list[str]] = {}  # code -> value path rows, in order
    for finding in result.findings:
        if finding.is_syntax_error or not finding.range.start <= here <= finding.range.end:
            continue
        hit = hit or finding.range
        titles = fixes.setdefault(finding.code, [])
        titles += [f.title for f in finding.fixes if f.title not in titles]
        rows = paths.setdefault(finding.code, [])
        rows += [r for r in _value_path(result, finding, encoding) if r not in rows]
    parts = []
    for code, titles in fixes.items():
        text = rule_markdown(code, settings, titles)
        if text is None:
            continue
        if paths.get(code):
            text += "\n\nWhere it comes from:\n" + "\n".join(paths[code])
        parts.append(text)
    if not parts or hit is None:
        return None
    located = result.locate(hit)
    rng_lsp = to_lsp_range(result.lines[located[0]], located[1], encoding) if located else None
    return _hover("\n\n---\n\n".join(parts), rng_lsp)


def _value_path(result: LintResult, finding: Finding, encoding: str) -> list[str]:
    """``- [data.py:31](file:///…/data.py#L31): the DataLoader is built from
    here, with 4 workers``: one markdown row per related place (the editor
    opens the link at the line)."""
    rows = []
    for location, note in related_locations(result, finding, encoding):
        line = location.range.start.line + 1
        cell = result.cell_number(location.uri) if result.module is not None else None
        if cell is not None:  # a notebook cell's URI has its own fragment
            rows.append(f"- [cell {cell}, line {line}]({location.uri}): {note}")
            continue
        name = unquote(location.uri.rstrip("/").rsplit("/", 1)[-1]) or location.uri
        rows.append(f"- [{_escape(name)}:{line}]({location.uri}#L{line}): {note}")
    return rows


def _escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]()])", r"\\\1", text)


def _hover(markdown: str, rng: types.Range | None) -> types.Hover:
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown), range=rng
    )
