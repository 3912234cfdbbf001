"""What the last `torchtrap run` found, as diagnostics with their own source
label, merged into each document's diagnostics when they are published.
One problem is one diagnostic: where a static finding sits at the same place
(same rule, overlapping lines) the run's is folded into it, which says
"confirmed when run", carries the run's text as related information (named
`torchtrap-run`) and keeps the static one's quick fixes and docs link; a run
finding with no static twin is shown alone. A document's run diagnostics go
when it changes, all of them when the next run (or report) replaces them."""

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
        """`static` (the linter's) with the run's diagnostics for `uri` folded
        into the static ones they confirm, the others added."""
        run = self.diagnostics(uri, lines, encoding)
        if not run:
            return static
        folded: set[int] = set()
        merged = []
        for diag in static:
            twins = [
                i
                for i, r in enumerate(run)
                if diag.source == SOURCE
                and r.code == diag.code
                and r.range.start.line <= diag.range.end.line
                and diag.range.start.line <= r.range.end.line
            ]
            if twins:
                folded.update(twins)
                diag = _confirmed(diag, [run[i] for i in twins], uri)
            merged.append(diag)
        return merged + [r for i, r in enumerate(run) if i not in folded]


def _confirmed(diag: types.Diagnostic, runs: list[types.Diagnostic], uri: str) -> types.Diagnostic:
    """The static diagnostic, saying the run saw it too: both sources named
    (the run's text as related information labelled with its source), the
    static one's code description and data (its quick fixes) kept."""
    related = list(diag.related_information or ())
    for r in runs:
        related.append(
            types.DiagnosticRelatedInformation(
                types.Location(uri, r.range), f"{RUN_SOURCE}: {r.message}"
            )
        )
        related.extend(r.related_information or ())
    data = dict(diag.data) if isinstance(diag.data, dict) else {}
    first = runs[0].data if isinstance(runs[0].data, dict) else {}
    data["run"] = {k: v for k, v in first.items() if k != "run"}
    return attrs.evolve(
        diag, message=diag.message + CONFIRMED, related_information=related, data=data
    )
