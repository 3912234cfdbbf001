"""What gets linted: a lint *unit* is an open Python document or an open
notebook (its code cells, linted together). A ``Snapshot`` freezes a unit's
text at one version on the event loop; ``compute`` lints it in a worker
thread; the ``LintResult`` maps findings back to documents (cells) and is
cached per unit, so code actions and hover never re-lint."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field

from torchtrap.config import Config
from torchtrap.engine import analyse
from torchtrap.findings import Edit, Finding, Position, Range
from torchtrap.lsp.positions import split_lines
from torchtrap.notebook import NotebookModule, lint_cells
from torchtrap.project.index import Project, Reads, recording
from torchtrap.project.summary import ModuleSummary

log = logging.getLogger("torchtrap.lsp")


@dataclass(frozen=True)
class DocText:
    uri: str
    text: str
    version: int


@dataclass(frozen=True)
class Snapshot:
    key: str  # the document's URI, or the notebook's
    version: int  # the document's version, or the notebook's revision
    path: str | None  # filesystem path (config lookup, rules); None if unsaved
    docs: tuple[DocText, ...]  # one, or the notebook's code cells in order
    notebook: bool = False
    fallback: Mapping[int, str] = field(default_factory=dict)  # cell -> last parseable text
    # The 1-based position of each code cell among all the notebook's cells.
    cell_numbers: tuple[int, ...] = ()

    @property
    def lint_path(self) -> str:
        return self.path or ("<notebook>" if self.notebook else "<untitled>")


@dataclass
class LintResult:
    snapshot: Snapshot
    config: Config
    findings: list[Finding]  # unit coordinates (joined module for notebooks)
    module: NotebookModule | None = None
    broken: frozenset[str] = frozenset()  # URIs of documents (cells) that do not parse
    lines: dict[str, list[str]] = field(default_factory=dict)  # URI -> LSP lines
    texts: dict[str, str] = field(default_factory=dict)  # URI -> text
    excluded: bool = False
    summary: ModuleSummary | None = None  # for the project index (None: did not parse)
    project: Project | None = None  # the project it was linted with
    reads: Reads | None = None  # what the lint read of the project (None: no project)
    # ``compute(defer_summary=True)``: makes ``summary``, once, after publishing.
    summarize: Callable[[], ModuleSummary | None] | None = field(default=None, repr=False)

    @property
    def version(self) -> int:
        return self.snapshot.version

    def locate(self, rng: Range) -> tuple[str, Range] | None:
        """A unit range as (document URI, range in that document)."""
        if self.module is None:
            return self.snapshot.key, rng
        located = self.module.cell_range(rng)
        if located is None:
            return None
        return self.snapshot.docs[located[0]].uri, located[1]

    def locate_edit(self, edit: Edit) -> tuple[str, Edit] | None:
        """A unit edit as (document URI, edit of that document); in a
        notebook cell IPython dedents, new lines get the cell's indentation."""
        if self.module is None:
            return self.snapshot.key, edit
        located = self.module.cell_edit(edit)
        if located is None:
            return None
        return self.snapshot.docs[located[0]].uri, located[1]

    def to_unit(self, uri: str, position: Position) -> Position | None:
        """A document (cell) position in unit coordinates."""
        if self.module is None:
            return position if uri == self.snapshot.key else None
        for index, doc in enumerate(self.snapshot.docs):
            if doc.uri == uri:
                return self.module.from_cell(index, position)
        return None

    def cell_number(self, uri: str) -> int | None:
        """The 1-based position of cell ``uri`` among all the notebook's
        cells (markdown included, as Jupyter and VS Code count them)."""
        numbers = self.snapshot.cell_numbers
        for index, doc in enumerate(self.snapshot.docs):
            if doc.uri == uri and index < len(numbers):
                return numbers[index]
        return None

    def doc_version(self, uri: str) -> int | None:
        for doc in self.snapshot.docs:
            if doc.uri == uri:
                return doc.version
        return None


def compute(
    snapshot: Snapshot,
    config: Config,
    project: Project | None = None,
    module: tuple[str, bool] | None = None,
    *,
    defer_summary: bool = False,
) -> LintResult:
    """Lint a snapshot (runs in a worker thread; never raises for bad code).
    With a ``project`` (and the document's ``module`` name) rules see the
    other files, and the result carries the document's own summary; with
    ``defer_summary``, ``result.summarize`` instead, which makes it from the
    same parse (the findings are published first: summarising a 5,000-line
    module is about a quarter of its lint)."""
    texts = {d.uri: d.text for d in snapshot.docs}
    lines = {uri: split_lines(text) for uri, text in texts.items()}
    if snapshot.path and config.is_excluded(snapshot.path):
        return LintResult(snapshot, config, [], lines=lines, texts=texts, excluded=True)
    if not snapshot.notebook:
        # Without a project nothing is read from other files: no reads to record.
        with recording() if project is not None else nullcontext() as reads:
            analysis = analyse(
                snapshot.docs[0].text,
                snapshot.lint_path,
                config,
                project=project,
                module=module,
                defer_summary=defer_summary,
            )
        findings = analysis.findings
        failed = any(f.is_syntax_error for f in findings)
        broken = frozenset({snapshot.key}) if failed else frozenset()
        return LintResult(
            snapshot,
            config,
            findings,
            None,
            broken,
            lines,
            texts,
            summary=analysis.summary,
            project=project,
            reads=reads,
            summarize=analysis.summarize,
        )
    numbers = snapshot.cell_numbers
    result = lint_cells(
        [d.text for d in snapshot.docs],
        snapshot.lint_path,
        config,
        fallback=snapshot.fallback,
        cell_number=(lambda i: numbers[i]) if len(numbers) == len(snapshot.docs) else None,
        project=project,
    )
    broken = frozenset(snapshot.docs[i].uri for i in result.broken)
    return LintResult(snapshot, config, result.findings, result.module, broken, lines, texts)
