"""Notebooks: the code cells of a notebook linted together as one module.

Cells are joined in order with a newline, so cell ``k`` occupies a block of
whole lines of the joined module and a position maps back to its cell by
moving the line (and, in a cell whose first line is indented, by the
columns IPython's dedent removed). Each cell is first read as IPython reads
it (``torchtrap.ipython``): escapes such as ``%magic``, ``!shell``,
``x = !cmd`` and ``obj?`` become Python of the same width, a ``%%bash``
cell is blank. The engine is told the layout, so a cell's last expression
counts as displayed. A cell that does not parse is left out (its lines
blanked, or replaced by ``fallback`` text such as the cell's last
parseable version) and reported as one ``TT000`` finding in that cell; the
other cells are still linted. The front ends (LSP, CLI) share this module;
it holds no rule logic.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from torchtrap.config import Config
from torchtrap.engine import lint
from torchtrap.findings import Edit, Finding, Fix, Position, Range, RelatedLocation, line_text
from torchtrap.ipython import CellSpan, prepare_cell
from torchtrap.project.index import Project
from torchtrap.source import split_lines


def mask_ipython(text: str) -> str:
    """The cell as the linter parses it (see ``torchtrap.ipython``)."""
    return prepare_cell(text).text


@dataclass
class NotebookModule:
    """The joined module and its line map."""

    source: str
    spans: tuple[CellSpan, ...]
    _firsts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._firsts = [span.first_line for span in self.spans]

    def cell_of_line(self, line: int) -> CellSpan | None:
        import bisect

        i = bisect.bisect_right(self._firsts, line) - 1
        if i < 0:
            return None
        span = self.spans[i]
        return span if line < span.first_line + span.line_count else None

    def to_cell(self, position: Position) -> tuple[int, Position] | None:
        span = self.cell_of_line(position.line)
        if span is None:
            return None
        line = position.line - span.first_line + 1
        return span.index, Position(line, position.column + span.shift(line))

    def from_cell(self, index: int, position: Position) -> Position | None:
        for span in self.spans:
            if span.index == index:
                line = min(max(position.line, 1), span.line_count)
                column = max(position.column - span.shift(line), 0)
                return Position(span.first_line + line - 1, column)
        return None

    def cell_range(self, rng: Range) -> tuple[int, Range] | None:
        """The cell a joined range lies in, and the range in that cell;
        None when it spans cells."""
        start = self.to_cell(rng.start)
        end = self.to_cell(rng.end)
        if start is None or end is None or start[0] != end[0]:
            return None
        return start[0], Range(start[1], end[1])

    def cell_edit(self, edit: Edit) -> tuple[int, Edit] | None:
        """An edit of the joined module as (cell index, edit of that cell);
        None when it spans cells. Text it inserts on new lines gets the
        indentation IPython removed from the cell."""
        located = self.cell_range(edit.range)
        if located is None:
            return None
        index, rng = located
        indent = self.spans[index].indent if index < len(self.spans) else ""
        text = edit.new_text
        if indent and "\n" in text:
            text = text.replace("\n", "\n" + indent)
        return index, Edit(rng, text)


def join_cells(cells: Sequence[str]) -> NotebookModule:
    spans: list[CellSpan] = []
    parts: list[str] = []
    line = 1
    for index, text in enumerate(cells):
        # One "\n" per line break the parser sees ("\r\n" and a lone "\r" too),
        # so that the line map below counts lines as ``ast`` does.
        prepared = prepare_cell("\n".join(split_lines(text)))
        count = prepared.text.count("\n") + 1
        shifts = prepared.shifts if prepared.indent else ()
        spans.append(CellSpan(index, line, count, shifts, prepared.indent, prepared.mode))
        parts.append(prepared.text)
        line += count
    return NotebookModule("\n".join(parts), tuple(spans))


@dataclass
class NotebookLint:
    module: NotebookModule
    findings: list[Finding]  # joined coordinates; TT000 for each cell left out
    broken: frozenset[int]  # cells that did not parse
    substituted: frozenset[int]  # broken cells linted with their fallback text


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def lint_cells(
    cells: Sequence[str],
    path: str = "<notebook>",
    config: Config | None = None,
    *,
    fallback: Mapping[int, str] | None = None,
    cell_number: Callable[[int], int] | None = None,
    project: Project | None = None,
) -> NotebookLint:
    """Lint the cells as one module (see the module docstring). Lines named
    in messages become cell-relative; ``cell_number`` maps a cell's index to
    the number the user sees (default: index + 1)."""
    fallback = fallback or {}
    texts = list(cells)
    broken: set[int] = set()
    errors: dict[int, Finding] = {}
    substituted: set[int] = set()
    for _ in range(len(texts) + 1):
        module = join_cells(texts)
        findings = lint(module.source, path, config, project=project, cells=module.spans)
        if not (len(findings) == 1 and findings[0].is_syntax_error):
            break
        # Find the culprits: cells that do not parse on their own, else the
        # cell the error points at.
        culprits = {
            i for i, t in enumerate(texts) if i not in broken and not _parses(mask_ipython(t))
        }
        if not culprits:
            located = module.cell_of_line(findings[0].range.start.line)
            index = located.index if located else len(texts) - 1
            if index in broken or index < 0:
                break
            culprits = {index}
        for i in culprits:
            broken.add(i)
            if i not in errors:
                errors[i] = _cell_error(module, i, cells[i], path, findings[0])
            substitute = fallback.get(i)
            usable = substitute is not None and _parses(mask_ipython(substitute))
            if substitute is not None and usable and i not in substituted:
                substituted.add(i)
                texts[i] = substitute
            else:
                substituted.discard(i)
                texts[i] = "\n" * cells[i].count("\n")
    # Findings point into the texts linted; a substituted cell's findings
    # belong to its fallback text, not to the cell as it is now: drop them.
    linted = join_cells(texts)
    real = join_cells(cells)
    moved = linted.spans != real.spans  # a fallback with another line count
    out: list[Finding] = []
    for f in findings:
        located = linted.cell_of_line(f.range.start.line)
        if f.is_syntax_error or located is None or located.index in substituted:
            continue
        if moved:
            f = _move(f, linted, real)
        out.append(_cell_relative_lines(f, real, cell_number))
    out += [_reposition(real, i, err) for i, err in errors.items()]
    out.sort(key=lambda f: (f.range.start, f.code))
    return NotebookLint(real, out, frozenset(broken), frozenset(substituted))


def _cell_relative_lines(
    finding: Finding, module: NotebookModule, cell_number: Callable[[int], int] | None
) -> Finding:
    """ "line 6" of the joined module -> "line 1" in the finding's own cell,
    "cell 3, line 1" in another."""
    if not finding.line_refs:
        return finding
    home = module.cell_of_line(finding.range.start.line)

    def label(line: int) -> str:
        located = module.to_cell(Position(line, 0))
        if located is None:
            return line_text(line)
        index, pos = located
        if home is not None and index == home.index:
            return line_text(pos.line)
        number = cell_number(index) if cell_number else index + 1
        return f"cell {number}, {line_text(pos.line)}"

    return finding.relabel_lines(label)


def _move_range(rng: Range, src: NotebookModule, dst: NotebookModule) -> Range:
    located = src.cell_range(rng)
    if located is None:
        return rng
    index, cell_rng = located
    start = dst.from_cell(index, cell_rng.start) or rng.start
    end = dst.from_cell(index, cell_rng.end) or rng.end
    return Range(start, end)


def _move(finding: Finding, src: NotebookModule, dst: NotebookModule) -> Finding:
    """A finding of the module ``src`` in the coordinates of ``dst`` (the
    same cells, but one of them with another line count)."""

    def moved_fix(fix: Fix) -> Fix:
        def build() -> list[Edit]:
            return [Edit(_move_range(e.range, src, dst), e.new_text) for e in fix.edits]

        return Fix(fix.title, fix.applicability, build)

    return replace(
        finding,
        range=_move_range(finding.range, src, dst),
        related=tuple(
            r if r.path is not None else replace(r, range=_move_range(r.range, src, dst))
            for r in finding.related
        ),
        fixes=tuple(moved_fix(f) for f in finding.fixes),
    )


def _cell_error(
    module: NotebookModule, index: int, cell: str, path: str, joined_error: Finding
) -> Finding:
    """The TT000 for a cell, in cell coordinates (repositioned later)."""
    alone = lint(mask_ipython(cell), path, rules=[])  # parse only
    if alone and alone[0].is_syntax_error:
        error = alone[0]
        span = module.spans[index]  # prepared (dedented) coordinates -> the cell's
        start, end = error.range.start, error.range.end
        return replace(
            error,
            range=Range(
                Position(start.line, start.column + span.shift(start.line)),
                Position(end.line, end.column + span.shift(end.line)),
            ),
        )
    located = module.to_cell(joined_error.range.start)
    pos = located[1] if located and located[0] == index else Position(1, 0)
    return replace(joined_error, range=Range(pos, pos))


def _reposition(module: NotebookModule, index: int, finding: Finding) -> Finding:
    start = module.from_cell(index, finding.range.start) or Position(1, 0)
    end = module.from_cell(index, finding.range.end) or start
    return replace(finding, range=Range(start, end))


def cell_edits(module: NotebookModule, edits: Sequence[Edit]) -> list[tuple[int, Edit]] | None:
    """A fix's edits as (cell index, edit in cell coordinates); None when an
    edit spans cells (such a fix cannot be applied to a notebook)."""
    out: list[tuple[int, Edit]] = []
    for edit in edits:
        located = module.cell_edit(edit)
        if located is None:
            return None
        out.append(located)
    return out


def fix_cells(
    cells: Sequence[str],
    path: str = "<notebook>",
    config: Config | None = None,
    *,
    unsafe: bool = False,
    max_rounds: int = 10,
    project: Project | None = None,
) -> tuple[list[str], int]:
    """Apply fixes until none is left, like ``engine.fix_source``; returns
    the new cell texts and how many fixes were applied. Fixes that would
    span cells are skipped; broken cells are left alone."""
    from torchtrap.fixes.apply import apply_edits, compatible_fixes, select_fixes

    texts = list(cells)
    total = 0
    for _ in range(max_rounds):
        result = lint_cells(texts, path, config, project=project)
        module = result.module
        per_cell: dict[int, list[Edit]] = {}
        mappable = []
        # Hints only when shown, as engine.fix_source.
        shown = [f for f in result.findings if (config or Config()).shows(f.severity)]
        for fix in select_fixes(shown, unsafe=unsafe):
            mapped = cell_edits(module, fix.edits)
            if mapped is not None and not any(i in result.broken for i, _ in mapped):
                mappable.append((fix, mapped))
        chosen = set(map(id, compatible_fixes(module.source, [fix for fix, _ in mappable])))
        applied = 0
        for fix, mapped in mappable:
            if id(fix) in chosen:
                for i, edit in mapped:
                    per_cell.setdefault(i, []).append(edit)
                applied += 1
        if not applied:
            break
        for i, edits in per_cell.items():
            texts[i] = apply_edits(texts[i], edits)
        total += applied
    return texts, total


def related_in_cells(
    module: NotebookModule, related: Sequence[RelatedLocation]
) -> list[tuple[int, RelatedLocation]]:
    """Related locations of the same notebook, mapped to their cells."""
    out = []
    for loc in related:
        if loc.path is not None:
            continue
        located = module.cell_range(loc.range)
        if located is not None:
            out.append((located[0], replace(loc, range=located[1])))
    return out


__all__ = [
    "CellSpan",
    "NotebookLint",
    "NotebookModule",
    "cell_edits",
    "fix_cells",
    "join_cells",
    "lint_cells",
    "mask_ipython",
    "related_in_cells",
]
