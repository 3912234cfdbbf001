"""Plain data that every front end and test speaks: findings, ranges, fixes.

Positions are 1-based lines and 0-based columns counted in Unicode code
points (Python ``str`` indices). Front ends convert: the LSP to UTF-16 or
UTF-8 units, the text output to 1-based columns.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Accept ``error``/``Error``/``information``/``warn`` spellings."""
        key = text.strip().lower()
        aliases = {"warn": "warning", "information": "info", "information ": "info"}
        return cls(aliases.get(key, key))


class Applicability(str, enum.Enum):
    """Like ruff: ``safe`` fixes keep behaviour except for the bug; ``unsafe``
    fixes may change behaviour the user relies on and need a human look."""

    SAFE = "safe"
    UNSAFE = "unsafe"


def may_severity(severity: Severity) -> Severity:
    """The severity of a finding that rests on a MAY value (one branch, some
    callers): never an error on its own. Below the rule's configured
    severity: an error or warning becomes info (shown in the editor's
    Problems panel as information); info or hint becomes hint (hidden
    unless ``--show-hints``)."""
    if severity in (Severity.ERROR, Severity.WARNING):
        return Severity.INFO
    return Severity.HINT


# Every unsafe fix's title ends with "(unsafe: <why>)" so that the risk shows
# in the editor's fix menu and the CLI; safe fixes never carry it.
UNSAFE_MARK = "(unsafe:"


def unsafe_title(title: str, why: str) -> str:
    """The title of an unsafe fix: what it does, then what it may break."""
    return f"{title} {UNSAFE_MARK} {why})"


def marked_title(title: str, applicability: Applicability, why: str) -> str:
    """``title`` as is for a safe fix, marked with ``why`` for an unsafe one."""
    return title if applicability is Applicability.SAFE else unsafe_title(title, why)


def line_text(line: int) -> str:
    """How a message names a line of its module. A rule that names one lists
    it in ``Finding.line_refs`` so that a notebook can say "cell 2, line 1"."""
    return f"line {line}"


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 0-based, code points

    def to_dict(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column}


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, col: int, end_line: int, end_col: int) -> Range:
        return cls(Position(line, col), Position(end_line, end_col))

    def contains_line(self, line: int) -> bool:
        return self.start.line <= line <= self.end.line

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start.to_dict(), "end": self.end.to_dict()}


@dataclass(frozen=True)
class Edit:
    """Replace ``range`` with ``new_text`` (an insertion has an empty range)."""

    range: Range
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {"range": self.range.to_dict(), "new_text": self.new_text}


@dataclass(eq=False)
class Fix:
    """A fix's edits are built on demand: listing fixes must stay cheap (code
    actions on every cursor move), building them may scan the module."""

    title: str
    applicability: Applicability
    build: Callable[[], Sequence[Edit]] = field(repr=False)
    _edits: tuple[Edit, ...] | None = field(default=None, init=False, repr=False)

    @property
    def edits(self) -> tuple[Edit, ...]:
        if self._edits is None:
            self._edits = tuple(self.build())
        return self._edits

    def detached(self, with_edits: bool = True) -> Fix:
        """The same fix with its edits built, holding nothing of the module
        (a batch front end keeps findings, not every file's syntax tree);
        without them when the front end prints only titles."""
        return _fix_with_edits(self.title, self.applicability, self.edits if with_edits else ())

    def __reduce__(self) -> tuple[Any, ...]:
        # Crossing a process boundary (check -j N) materialises the edits:
        # the builder closure holds ast nodes and cannot be pickled.
        return (_fix_with_edits, (self.title, self.applicability, self.edits))

    @property
    def is_safe(self) -> bool:
        return self.applicability is Applicability.SAFE

    def to_dict(self, with_edits: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {"title": self.title, "applicability": self.applicability.value}
        if with_edits:
            data["edits"] = [e.to_dict() for e in self.edits]
        return data


def _fix_with_edits(title: str, applicability: Applicability, edits: tuple[Edit, ...]) -> Fix:
    fix = Fix(title, applicability, build=lambda: edits)
    fix._edits = edits
    return fix


@dataclass(frozen=True)
class RelatedLocation:
    """Another place that makes the finding real (e.g. the DataLoader call
    with workers). ``path`` is None for the same file."""

    range: Range
    message: str
    path: str | None = None
    cell: int | None = None  # notebooks: 1-based cell number

    def to_dict(self) -> dict[str, Any]:
        return {
            "range": self.range.to_dict(),
            "message": self.message,
            "path": self.path,
            "cell": self.cell,
        }


@dataclass(frozen=True)
class Finding:
    code: str  # "TT101"; "TT000" for a file that could not be analysed
    name: str  # "stored-rng-in-dataset"
    message: str
    severity: Severity
    range: Range
    path: str = "<stdin>"
    fixes: tuple[Fix, ...] = ()
    related: tuple[RelatedLocation, ...] = ()
    # For a notebook: the 1-based cell number; ``range`` is then in that cell.
    cell: int | None = None
    # Lines of the module the message names (as ``line_text(n)``).
    line_refs: tuple[int, ...] = ()

    @property
    def is_syntax_error(self) -> bool:
        return self.code == SYNTAX_ERROR_CODE

    def relabel_lines(self, label: Callable[[int], str]) -> Finding:
        """The finding with each line its message names written by ``label``
        (a notebook's "cell 2, line 1"); one pass, so labels never re-match."""
        if not self.line_refs:
            return self
        table = {line_text(n): label(n) for n in self.line_refs}
        keys = sorted(table, key=len, reverse=True)
        pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, keys)) + r")\b")
        message = pattern.sub(lambda m: table[m.group(0)], self.message)
        return dataclasses.replace(self, message=message, line_refs=())

    def detached(self, with_edits: bool = True) -> Finding:
        """See :meth:`Fix.detached`."""
        if not self.fixes:
            return self
        fixes = tuple(f.detached(with_edits) for f in self.fixes)
        return dataclasses.replace(self, fixes=fixes)

    def to_dict(self, with_edits: bool = True) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity.value,
            "path": self.path,
            "range": self.range.to_dict(),
            "fixes": [f.to_dict(with_edits) for f in self.fixes],
            "related": [r.to_dict() for r in self.related],
            "cell": self.cell,
        }


# Not a rule: reported for a file that cannot be parsed or decoded, never
# suppressed or deselected (as ruff does with syntax errors).
SYNTAX_ERROR_CODE = "TT000"
SYNTAX_ERROR_NAME = "syntax-error"
