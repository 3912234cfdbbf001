"""SARIF 2.1.0, as GitHub code scanning accepts it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchtrap import HOMEPAGE, RULE_DOCS_URL, __version__
from torchtrap.findings import Finding, Range, Severity
from torchtrap.output import FileReport
from torchtrap.rules import ALL_RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}


def _uri(path: str) -> str:
    try:
        rel = Path(os.path.relpath(path))
    except ValueError:  # another drive on Windows
        return Path(path).as_uri()
    if rel.parts and rel.parts[0] == "..":
        return Path(os.path.abspath(path)).as_uri()
    return rel.as_posix()


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
            "artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"},
            "region": _region(rng),
        }
    }


def _result(finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [_location(finding.path, finding.range)],
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
                        "artifactLocation": {"uri": _uri(finding.path), "uriBaseId": "%SRCROOT%"},
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
    results = [_result(f, rule_index) for r in reports for f in r.findings]
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
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
