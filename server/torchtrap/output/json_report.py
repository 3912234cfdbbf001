"""Machine-readable findings: one JSON document per run."""

from __future__ import annotations

import json
from collections.abc import Sequence

from torchtrap import __version__
from torchtrap.output import FileReport

SCHEMA_VERSION = 1


def render(reports: Sequence[FileReport]) -> str:
    # A notebook fix may edit several cells: its edits are applied with
    # --fix, not exported (their ranges are in the joined module).
    findings = [f.to_dict(with_edits=r.cells is None) for r in reports for f in r.findings]
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "torchtrap", "version": __version__},
        "files_checked": len(reports),
        "fixes_applied": sum(r.fixed for r in reports),
        # Hint-level findings left out (`show-hints` off); they never fail check.
        "hints_hidden": sum(r.hidden_hints for r in reports),
        "findings": findings,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
