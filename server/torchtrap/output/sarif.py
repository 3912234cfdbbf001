"""SARIF 2.1.0, as GitHub code scanning accepts it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from torchtrap import HOMEPAGE, RULE_DOCS_URL, __version__
from torchtrap.findings import Finding, Range, Severity
from torchtrap.output import FileReport
from torchtrap.rules import ALL_RULES
from torchtrap.source import split_lines

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}


def _artifact(path: str) -> dict[str, str]:
    """A path as an artifactLocation: relative to %SRCROOT% (the working
    folder, which code scanning maps to the repository) when inside it, else
    an absolute ``file:`` URI, which takes no ``uriBaseId`` (SARIF1004)."""
    try:
        rel = Path(os.path.relpath(path))
    except ValueError:  # another drive on Windows
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    if rel.parts and rel.parts[0] == "..":
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(rng: Range) -> dict[str, int]:
    # SARIF columns are 1-based; run.columnKind says we count code points.
    return {
        "startLine": rng.start.line,
        "startColumn": rng.start.column + 1,
        "endLine": rng.end.line,
        "endColumn": rng.end.column + 1,
    }


def _location(path: str, rng: Range) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": _artifact(path),
            "region": _region(rng),
        }
    }


class _Fingerprints:
    """``partialFingerprints`` that survive edits elsewhere in the file, so
    code scanning keeps an alert's identity across pushes: the rule, the
    file, the flagged line's text without its indentation, and which
    occurrence of that (rule, text) pair in the file it is. Line numbers
    are left out on purpose."""

    KEY = "torchtrap/v1"

    def __init__(self, report: FileReport) -> None:
        self.report = report
        self.seen: dict[str, int] = {}
        self._lines: dict[int | None, list[str]] = {}

    def _line(self, finding: Finding) -> str:
        cell = finding.cell
        if cell not in self._lines:
            text = self.report.cells.get(cell) if cell and self.report.cells else None
            if cell is None:
                text = self.report.source
            self._lines[cell] = split_lines(text or "")
        lines = self._lines[cell]
        line = finding.range.start.line
        return lines[line - 1].strip() if 1 <= line <= len(lines) else ""

    def __call__(self, finding: Finding) -> dict[str, str]:
        key = "\0".join(
            (finding.code, Path(finding.path).as_posix(), str(finding.cell), self._line(finding))
        )
        occurrence = self.seen.get(key, 0)
        self.seen[key] = occurrence + 1
        digest = hashlib.sha256(f"{key}\0{occurrence}".encode("utf-8", "surrogatepass"))
        return {self.KEY: digest.hexdigest()[:32]}


def _result(
    finding: Finding, rule_index: dict[str, int], fingerprint: _Fingerprints
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.range)],
        "partialFingerprints": fingerprint(finding),
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.cell is not None:
        result["properties"] = {"notebookCell": finding.cell}
    if finding.related:
        result["relatedLocations"] = [
            {"id": i, **_location(r.path or finding.path, r.range), "message": {"text": r.message}}
            for i, r in enumerate(finding.related)
        ]
    fixes = []
    for fix in finding.fixes if finding.cell is None else ():
        fixes.append(
            {
                "description": {"text": f"{fix.title} ({fix.applicability.value})"},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(finding.path),
                        "replacements": [
                            {
                                "deletedRegion": _region(e.range),
                                "insertedContent": {"text": e.new_text},
                            }
                            for e in fix.edits
                        ],
                    }
                ],
            }
        )
    if fixes:
        result["fixes"] = fixes
    return result


def render(reports: Sequence[FileReport]) -> str:
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.docs_section("What it does") or rule.summary},
            "helpUri": f"{RULE_DOCS_URL}{rule.code}.md",
            "help": {"text": rule.docs(), "markdown": rule.markdown()},
            "defaultConfiguration": {"level": _LEVEL[rule.default_severity]},
            "properties": {"tags": ["pytorch", "correctness"]},
        }
        for rule in ALL_RULES
    ]
    rule_index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    results = []
    for report in reports:
        fingerprint = _Fingerprints(report)
        results += [_result(f, rule_index, fingerprint) for f in report.findings]
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchtrap",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": HOMEPAGE,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": results,
                # Hint-level findings left out (`show-hints` off): SARIF has
                # no hint level, shown ones are "note" results.
                "properties": {"hintsHidden": sum(r.hidden_hints for r in reports)},
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
