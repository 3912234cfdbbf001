"""What a rule is: docs, detection, fixes and its own examples, in one class.

A rule file defines one ``Rule`` subclass whose docstring has the sections
*What it does / Why is this bad? / Example / Use instead / References*; the
docs (``torchtrap rule``, the README table, LSP hover) are generated from
it, and the test suite runs its ``valid`` and ``invalid`` examples.

The hover shows the first sentence of *Why is this bad?* and ``fact``, so
that sentence should say the harm on its own. Messages stay within 120
characters (details go to ``related``); a line named in a message is
written with ``findings.line_text`` and listed in ``line_refs``; an unsafe
fix's title ends with "(unsafe: <why>)" (``findings.unsafe_title``).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torchtrap.config import Config, resolve_torch_version
from torchtrap.facts import ModuleFacts
from torchtrap.facts.remote import REMOTE_ATTR, same_file
from torchtrap.findings import Finding, Fix, Range, RelatedLocation, Severity, may_severity
from torchtrap.project.index import PENDING, NeedsProject, Project, _Pending
from torchtrap.source import SourceText
from torchtrap.values import Values
from torchtrap.values.assumptions import Assumption


@dataclass(frozen=True)
class Valid:
    """Code the rule must stay silent on (near misses above all)."""

    code: str
    config: Mapping[str, Any] = field(default_factory=dict)  # a [tool.torchtrap] table
    note: str = ""


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag, at ``line`` if given.

    ``fixed`` is the exact text after applying the fix titled ``fix_title``
    (or the first fix) when given; every fix of every invalid example is
    applied in the tests either way (re-parses, re-lints clean, idempotent).
    """

    code: str
    line: int | None = None
    severity: Severity | None = None
    message_contains: str | None = None
    fixed: str | None = None
    fix_title: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


class Context:
    """What a rule sees of one module."""

    # In a notebook: lines of the top-level expression statements whose value
    # is used (a cell's last expression is displayed); see torchtrap.ipython.
    displayed: frozenset[int] = frozenset()

    def __init__(
        self,
        source: SourceText,
        path: str,
        tree: ast.Module,
        facts: ModuleFacts,
        config: Config,
        project: Project | _Pending | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.facts = facts
        self.config = config
        self._project = project
        self._own_added = False  # this file's summary was added to the project
        self._torch_version: tuple[int, ...] | None | bool = False
        self._values: Values | None = None

    @property
    def values(self) -> Values:
        """What an expression holds (:mod:`torchtrap.values`): ``ctx.values.of(expr)``."""
        if self._values is None:
            self._values = Values(self)
        return self._values

    @property
    def project(self) -> Project | None:
        """Facts from the project's files (:mod:`torchtrap.project.index`).
        Without an index (a lone file, stdin) it is a project of this one
        module, made on first use, so evidence between functions of the
        same file still counts; other files are then unknown. A file the
        index does not hold (a notebook, importing from the project's
        modules) joins it as a module nothing can import. Raises
        NeedsProject while ``check`` is still indexing: let it propagate,
        the file is linted again."""
        if self._project is PENDING:
            raise NeedsProject(self.path)
        project = self._project
        if project is None or (
            isinstance(project, Project)
            and not self._own_added
            and project.summary(self.path) is None
            and not self.path.startswith("<")
        ):
            from torchtrap.project.summary import summarize

            module = ""
            if project is None:
                stem = self.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
                module = stem if stem.isidentifier() and not self.path.startswith("<") else ""
            own = summarize(self.tree, self.source, self.path, module, False, self.facts)
            self._project = Project([own]) if project is None else project.with_file(own)
            self._own_added = True
        return self._project  # type: ignore[return-value]

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def torch_version(self) -> tuple[int, ...] | None:
        """The project's torch version, None when unknown."""
        if self._torch_version is False:
            self._torch_version = resolve_torch_version(self.config, self.path)
        return self._torch_version  # type: ignore[return-value]

    def range(self, node: ast.AST) -> Range:
        return self.source.node_range(node)

    def related(self, node: ast.AST, message: str) -> RelatedLocation:
        # A node built from another file's summary carries that file's location.
        remote: tuple[str, Range, str] | None = getattr(node, REMOTE_ATTR, None)
        if remote is not None:
            path = None if same_file(remote[0], self.path) else remote[0]
            return RelatedLocation(remote[1], message, path=path)
        return RelatedLocation(self.range(node), message)


def _holding(fix: Fix, ctx: Context) -> Fix:
    """The fix, keeping the module's context alive until its edits are built:
    parent links are weak, so a builder that captured only a subtree must
    not outlive the tree it walks up."""
    build = fix.build
    return Fix(fix.title, fix.applicability, build=lambda: (ctx, build())[1])


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line, for tables and quick picks
    # One measured fact, for the hover (with the first sentence of "Why is
    # this bad?"); empty: the hover shows the why alone.
    fact: ClassVar[str] = ""
    default_severity: ClassVar[Severity] = Severity.WARNING
    # The rule is skipped for a file whose text contains none of these.
    requires_text: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[Sequence[Valid]] = ()
    invalid: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def check(self) -> Iterable[Finding]:
        raise NotImplementedError

    # -- helpers for rules ---------------------------------------------------
    def finding(
        self,
        node: ast.AST | Range,
        message: str,
        *,
        severity: Severity | None = None,
        fixes: Sequence[Fix] = (),
        related: Sequence[RelatedLocation] = (),
        line_refs: Sequence[int] = (),
        assumption: Assumption | None = None,
    ) -> Finding:
        """``line_refs``: the lines ``message`` names (as ``line_text(n)``).
        ``assumption``: the finding rests on a MAY value (one branch, some
        callers; :mod:`torchtrap.values.assumptions`): ``message`` says the
        assumption's phrase, the severity is capped below the configured
        one (``findings.may_severity``), and a related row points at where
        the assumed value comes from."""
        rng = node if isinstance(node, Range) else self.ctx.range(node)
        base = severity or self.default_severity
        level = self.ctx.config.severity_for(self.code, base)
        related = list(related)
        line_refs = list(line_refs)
        if assumption is not None:
            level = may_severity(level)
            row = self.ctx.related(assumption.origin, assumption.note)
            inside = row.path is None and rng.start <= row.range.start and row.range.end <= rng.end
            if not inside and all(r.range != row.range or r.path != row.path for r in related):
                related.insert(0, row)
            line_refs += [n for n in assumption.line_refs if n not in line_refs]
        return Finding(
            code=self.code,
            name=self.name,
            message=message,
            severity=level,
            range=rng,
            path=self.ctx.path,
            fixes=tuple(_holding(fix, self.ctx) for fix in fixes),
            related=tuple(related),
            line_refs=tuple(line_refs),
        )

    # -- docs ----------------------------------------------------------------
    @classmethod
    def docs(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def docs_section(cls, title: str) -> str:
        match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", cls.docs(), re.S | re.M)
        return match.group(1).strip() if match else ""

    @classmethod
    def why(cls) -> str:
        """The first sentence of "Why is this bad?", on one line."""
        paragraph = cls.docs_section("Why is this bad?").split("\n\n")[0]
        text = " ".join(paragraph.split())
        match = re.match(r"(.+?[.!?])(?=\s+[A-Z`*(\"]|$)", text)
        return match.group(1) if match else text

    @classmethod
    def markdown(cls) -> str:
        return f"# {cls.code} `{cls.name}`\n\n{cls.summary}\n\n{cls.docs()}\n"

    @classmethod
    def matches_text(cls, text: str) -> bool:
        return not cls.requires_text or any(t in text for t in cls.requires_text)
