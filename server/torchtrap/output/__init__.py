"""Renderers: findings → text, JSON, SARIF, GitHub annotations."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchtrap.findings import Finding


@dataclass
class FileReport:
    """What ``check`` knows about one file after linting (and fixing) it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    source: str | None = None  # for excerpts; None when unreadable
    fixed: int = 0  # fixes applied with --fix
    diff: str | None = None  # with --diff
    cells: dict[int, str] | None = None  # a notebook's code cells by cell number


FORMATS = ("text", "json", "sarif", "github")
