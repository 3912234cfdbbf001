"""Findings -> LSP diagnostics (per document; a notebook's go to its cells)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from torchtrap.findings import Finding, Severity
from torchtrap.lsp.positions import to_lsp_range
from torchtrap.lsp.settings import Settings
from torchtrap.lsp.workspace import LintResult

SOURCE = "torchtrap"

SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}

# While the user types, most syntax errors are transient and the editor's
# Python support already reports them; TT000 is information unless the
# user sets a severity for it (see docs/editors.md).
SYNTAX_ERROR_SEVERITY = Severity.INFO


def finding_severity(finding: Finding, settings: Settings) -> Severity:
    if finding.is_syntax_error:
        override = dict(settings.severity)
        return override.get(finding.code, SYNTAX_ERROR_SEVERITY)
    return finding.severity  # already rule default -> pyproject -> editor


def related_locations(
    result: LintResult, finding: Finding, encoding: str
) -> list[tuple[types.Location, str]]:
    """A finding's related places (where its value is made, the call it
    travels through) as LSP locations with their notes."""
    found = []
    for loc in finding.related:
        if loc.path is not None:
            # Another file: its text is not at hand, so columns stay code
            # points (exact for ASCII lines).
            rel_uri = from_fs_path(loc.path) or loc.path
            rel = types.Location(
                rel_uri,
                types.Range(
                    types.Position(max(loc.range.start.line - 1, 0), loc.range.start.column),
                    types.Position(max(loc.range.end.line - 1, 0), loc.range.end.column),
                ),
            )
        else:
            loc_located = result.locate(loc.range)
            if loc_located is None:
                continue
            rel = types.Location(
                loc_located[0],
                to_lsp_range(result.lines.get(loc_located[0], []), loc_located[1], encoding),
            )
        found.append((rel, loc.message))
    return found


def to_diagnostic(
    result: LintResult,
    index: int,
    settings: Settings,
    encoding: str,
    confirmed: Mapping[str, str],
) -> tuple[str, types.Diagnostic] | None:
    finding = result.findings[index]
    located = result.locate(finding.range)
    if located is None:
        return None
    uri, rng = located
    lines = result.lines.get(uri, [])
    message = finding.message
    if finding.is_syntax_error:
        message = f"TorchTrap cannot parse this code ({finding.message})"
    elif finding.code in confirmed:
        # By the probe; its evidence: related information.
        message += " (confirmed on this machine)"
    if result.module is not None:
        # The Problems panel lists a notebook's rows under the notebook, not
        # the cell: the row itself must say which cell.
        number = result.cell_number(uri)
        if number is not None:
            message = f"cell {number}: {message}"
    related = [
        types.DiagnosticRelatedInformation(location, note)
        for location, note in related_locations(result, finding, encoding)
    ]
    lsp_range = to_lsp_range(lines, rng, encoding)
    if not finding.is_syntax_error and finding.code in confirmed:
        evidence = f"the probe on this machine: {confirmed[finding.code]}"
        related.append(types.DiagnosticRelatedInformation(types.Location(uri, lsp_range), evidence))
    diagnostic = types.Diagnostic(
        range=lsp_range,
        message=message,
        severity=SEVERITIES[finding_severity(finding, settings)],
        code=finding.code,
        code_description=(
            None
            if finding.is_syntax_error
            else types.CodeDescription(href=settings.docs_url(finding.code))
        ),
        source=SOURCE,
        related_information=related or None,
        data={"index": index, "version": result.version, "name": finding.name},
    )
    return uri, diagnostic


def syntax_error_shown(
    diagnostic: types.Diagnostic, parsed_before: bool, cell: bool
) -> types.Diagnostic:
    """Say what the user sees next to a TT000: the findings of the last
    version that parsed (kept on screen, see carry.py), or nothing at all
    for code that never parsed."""
    if parsed_before:
        whose = "this cell's" if cell else "its"
        tail = f"; showing the findings of {whose} last version that parsed"
    elif cell:
        tail = "; this cell is not checked until it parses, the other cells are"
    else:
        tail = "; nothing in it is checked until it parses"
    return attrs.evolve(diagnostic, message=diagnostic.message + tail)


def build_diagnostics(
    result: LintResult, settings: Settings, encoding: str, confirmed: Mapping[str, str]
) -> dict[str, list[types.Diagnostic]]:
    """Every document of the unit -> its diagnostics (possibly empty). TT000
    only with ``showSyntaxErrors`` (off by default: the editor's Python
    support reports syntax errors as you type)."""
    out: dict[str, list[types.Diagnostic]] = {doc.uri: [] for doc in result.snapshot.docs}
    for index in range(len(result.findings)):
        if result.findings[index].is_syntax_error and not settings.show_syntax_errors:
            continue
        item = to_diagnostic(result, index, settings, encoding, confirmed)
        if item is not None:
            out.setdefault(item[0], []).append(item[1])
    return out
