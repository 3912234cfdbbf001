"""GitHub Actions workflow commands: annotations on the pull request."""

from __future__ import annotations

from collections.abc import Sequence

from torchtrap.findings import Severity
from torchtrap.output import FileReport

_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.HINT: "notice",
}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: Sequence[FileReport]) -> str:
    lines = []
    for report in reports:
        for f in report.findings:
            start, end = f.range.start, f.range.end
            props = (
                f"file={_escape_property(f.path)},line={start.line},col={start.column + 1},"
                f"endLine={end.line},endColumn={end.column + 1},"
                f"title={_escape_property(f'{f.code} ({f.name})')}"
            )
            cell = f"cell {f.cell}: " if f.cell is not None else ""
            message = _escape_data(f"{f.code} {cell}{f.message}")
            lines.append(f"::{_LEVEL[f.severity]} {props}::{message}")
    return "\n".join(lines) + ("\n" if lines else "")
