"""Renderers: findings → text, JSON, SARIF, GitHub annotations."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from torchtrap.config import Config
from torchtrap.findings import Finding, Severity


@dataclass
class FileReport:
    """What ``check`` knows about one file after linting (and fixing) it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    source: str | None = None  # for excerpts; None when unreadable
    fixed: int = 0  # fixes applied with --fix
    diff: str | None = None  # with --diff
    cells: dict[int, str] | None = None  # a notebook's code cells by cell number
    hidden_hints: int = 0  # hint-level findings left out (``show-hints`` is off)


def hide_hints(report: FileReport, config: Config) -> FileReport:
    """The report without its hint-level findings unless ``config.show_hints``
    (modernisation, not bugs: Pyright's CLI leaves hints out too)."""
    shown = [f for f in report.findings if config.shows(f.severity)]
    if len(shown) == len(report.findings):
        return report
    return replace(report, findings=shown, hidden_hints=len(report.findings) - len(shown))


def failing(findings: list[Finding]) -> list[Finding]:
    """The findings that make ``check`` exit 1: all but hints, shown or not."""
    return [f for f in findings if f.severity is not Severity.HINT]


FORMATS = ("text", "json", "sarif", "github")
