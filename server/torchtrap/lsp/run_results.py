"""What the last `torchtrap run` found, as diagnostics with their own source
label, merged into each document's diagnostics when they are published; a
static finding at the same place (same rule, overlapping lines) says
"confirmed when run". A document's run diagnostics go when it changes, all
of them when the next run (or report) replaces them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from torchtrap.lsp.diagnostics import SEVERITIES, SOURCE
from torchtrap.lsp.positions import to_lsp_range
from torchtrap.run.report import RUN_SOURCE, RunFinding, RunReport, docs_url
from torchtrap.source import split_lines

CONFIRMED = " (confirmed when run)"


def _file_lines(path: str) -> list[str]:
    try:
        return split_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


class RunResults:
    def __init__(self, docs: Callable[[str], str] = docs_url) -> None:
        self.by_uri: dict[str, list[RunFinding]] = {}
        self.report: RunReport | None = None
        self.docs = docs  # the rule's page (the settings' docs base URL)

    def replace(self, report: RunReport) -> set[str]:
        """Take `report`'s findings; the URIs whose diagnostics change."""
        before = set(self.by_uri)
        self.by_uri = {}
        for item in report.findings:
            uri = from_fs_path(item.finding.path) or item.finding.path
            self.by_uri.setdefault(uri, []).append(item)
        self.report = report
        return before | set(self.by_uri)

    def drop(self, uri: str) -> bool:
        return self.by_uri.pop(uri, None) is not None

    def __contains__(self, uri: str) -> bool:
        return uri in self.by_uri

    def diagnostics(
        self, uri: str, lines: Sequence[str] | None, encoding: str
    ) -> list[types.Diagnostic]:
        items = self.by_uri.get(uri, ())
        if not items:
            return []
        if lines is None:
            lines = _file_lines(items[0].finding.path)
        out = []
        for item in items:
            finding = item.finding
            related = []
            for loc in finding.related:
                path = loc.path or finding.path
                rel_lines = lines if loc.path is None else _file_lines(path)
                related.append(
                    types.DiagnosticRelatedInformation(
                        types.Location(
                            from_fs_path(path) or path, to_lsp_range(rel_lines, loc.range, encoding)
                        ),
                        loc.message,
                    )
                )
            out.append(
                types.Diagnostic(
                    range=to_lsp_range(lines, finding.range, encoding),
                    message=finding.message,
                    severity=SEVERITIES[finding.severity],
                    code=finding.code,
                    code_description=types.CodeDescription(href=self.docs(finding.code)),
                    source=RUN_SOURCE,
                    related_information=related or None,
                    data={"run": True, "object": item.object, "measured": item.measured},
                )
            )
        return out

    def merge(
        self, uri: str, static: list[types.Diagnostic], lines: Sequence[str] | None, encoding: str
    ) -> list[types.Diagnostic]:
        """`static` (the linter's) with the run's diagnostics for `uri` added,
        and the static ones the run confirmed saying so."""
        run = self.diagnostics(uri, lines, encoding)
        if not run:
            return static
        seen = [(d.code, d.range.start.line, d.range.end.line) for d in run]
        merged = []
        for diag in static:
            if diag.source == SOURCE and any(
                code == diag.code and start <= diag.range.end.line and diag.range.start.line <= end
                for code, start, end in seen
            ):
                diag = attrs.evolve(diag, message=diag.message + CONFIRMED)
            merged.append(diag)
        return merged + run
