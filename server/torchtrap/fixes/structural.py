"""Structural fixes: edits that move or re-indent whole blocks, built on libcst.

Most fixes are minimal text edits at ``ast`` ranges (:mod:`torchtrap.fixes.edits`).
A fix that re-indents statements cannot be written that way safely: a
re-indented triple-quoted string changes its value, and comments must travel
with the statements they sit above. libcst keeps both, so these builders
parse the enclosing *top-level* statement(s) with it (never the whole file),
change the concrete tree, and return the changed lines as one text edit.

Two kinds of entry points:

* ``can_*`` checks are cheap, use ``ast`` only, and run on the diagnostics
  path: a rule offers a structural fix only when its check passes;
* the builders (:func:`wrap_in_if`, :func:`replace_statements`,
  :func:`move_into_main`) import libcst lazily and run only when a fix's
  edits are built (a code action's resolve, ``--fix``).

The API is shared by several rules (TT105, TT106, TT204): keep it stable.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from torchtrap.findings import Edit, Position, Range
from torchtrap.source import SourceText

if TYPE_CHECKING:
    import libcst as cst

# The placeholder statement in a template that the original statements replace.
BODY = "__body__"

Statements = Sequence[ast.stmt]


# -- cheap checks (ast only) -----------------------------------------------


def statement_start(stmt: ast.stmt) -> int:
    """The first line of ``stmt``, its decorators included."""
    decorators = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _end(stmt: ast.stmt) -> int:
    return stmt.end_lineno or stmt.lineno


def _sibling_list(tree: ast.Module, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list that holds ``stmt`` (a body, orelse, finalbody,
    handler or match-case body), found from the module down by line."""
    blocks: list[list[ast.stmt]] = [tree.body]
    while blocks:
        block = blocks.pop()
        for candidate in block:
            if candidate is stmt:
                return block
            if statement_start(candidate) <= stmt.lineno <= _end(candidate):
                blocks.extend(_child_blocks(candidate))
                break
    return None


def _child_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    blocks: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            blocks.append(value)
    for handler in getattr(stmt, "handlers", ()) or ():
        blocks.append(handler.body)
    for case in getattr(stmt, "cases", ()) or ():
        blocks.append(case.body)
    return blocks


def _owns_its_lines(block: Sequence[ast.stmt], first: int, last: int) -> bool:
    """``block[first:last+1]`` shares no line with a neighbour (``a = 1; b = 2``)."""
    before = block[first - 1] if first > 0 else None
    after = block[last + 1] if last + 1 < len(block) else None
    if before is not None and _end(before) >= statement_start(block[first]):
        return False
    return not (after is not None and statement_start(after) <= _end(block[last]))


def top_level_span(tree: ast.Module, first_line: int, last_line: int) -> tuple[int, int] | None:
    """The whole lines of the top-level statements that cover
    ``first_line..last_line``; None when they share a line with another
    top-level statement (then no segment of whole lines parses alone)."""
    body = tree.body
    covering = [
        i
        for i, stmt in enumerate(body)
        if statement_start(stmt) <= last_line and _end(stmt) >= first_line
    ]
    if not covering:
        return None
    lo, hi = covering[0], covering[-1]
    if not _owns_its_lines(body, lo, hi):
        return None
    return statement_start(body[lo]), _end(body[hi])


def can_replace_statements(
    tree: ast.Module, statements: Statements, source: SourceText | None = None
) -> bool:
    """Whether :func:`replace_statements` (and :func:`wrap_in_if`) can build
    edits for ``statements``: consecutive siblings in one block, each on its
    own lines, inside top-level statements that own theirs. With ``source``,
    also refuses a body written on its header's line (``if x: y = 1``)."""
    if not statements:
        return False
    if source is not None and any(
        source.line(s.lineno)[: source.column(s.lineno, s.col_offset)].strip() for s in statements
    ):
        return False
    block = _sibling_list(tree, statements[0])
    if block is None:
        return False
    try:
        first = next(i for i, s in enumerate(block) if s is statements[0])
    except StopIteration:
        return False
    last = first + len(statements) - 1
    if last >= len(block) or any(block[first + i] is not s for i, s in enumerate(statements)):
        return False
    if not _owns_its_lines(block, first, last):
        return False
    return top_level_span(tree, statement_start(statements[0]), _end(statements[-1])) is not None


def can_move_into_main(tree: ast.Module, moved: Statements) -> bool:
    """Whether :func:`move_into_main` can move ``moved`` (top-level
    statements, in source order): each owns its lines."""
    if not moved:
        return False
    index = {id(s): i for i, s in enumerate(tree.body)}
    for stmt in moved:
        i = index.get(id(stmt))
        if i is None or not _owns_its_lines(tree.body, i, i):
            return False
    return True


# -- builders (libcst, imported lazily) ------------------------------------


def wrap_in_if(
    source: SourceText, tree: ast.Module, statements: Statements, condition: str
) -> list[Edit]:
    """Edits that wrap ``statements`` (consecutive siblings, see
    :func:`can_replace_statements`) in ``if <condition>:``, re-indented one
    level. Comments above the first statement stay above the ``if``; the
    others travel with their statements; strings keep their value."""
    return replace_statements(source, tree, statements, f"if {condition}:\n    {BODY}\n")


def replace_statements(
    source: SourceText, tree: ast.Module, statements: Statements, template: str
) -> list[Edit]:
    """Edits that replace ``statements`` (consecutive siblings) with
    ``template``: Python statements, unindented, in which one statement
    ``__body__`` stands for the original statements, at any depth (they are
    re-indented to fit). E.g. ``"def inner():\\n    __body__\\nreturn inner()"``.

    Returns no edits when libcst cannot parse the segment."""
    span = top_level_span(tree, statement_start(statements[0]), _end(statements[-1]))
    if span is None:
        return []
    first, last = span
    # libcst places a decorated definition at its `def` line, as ast does.
    wanted = {s.lineno - first + 1 for s in statements}

    def transform(module: cst.Module, positions: Any) -> cst.Module | None:
        import libcst as cst

        template_module = cst.parse_module(textwrap.dedent(template))

        target = min(wanted)  # the first statement, in segment lines

        class Replace(cst.CSTTransformer):
            def __init__(self) -> None:
                self.done = False

            def on_visit(self, node: cst.CSTNode) -> bool:
                # Only the path down to the statements: the rest of the
                # segment is neither visited nor copied.
                if self.done:
                    return False
                where = positions.get(node)
                return where is None or where.start.line <= target <= where.end.line

            def _replace(
                self, original: Sequence[cst.BaseStatement], body: Sequence[cst.BaseStatement]
            ) -> list[cst.BaseStatement] | None:
                # Positions are known for the parsed nodes, not the updated copies.
                lines = [_start_line(positions, s) for s in original]
                chosen = [i for i, line in enumerate(lines) if line in wanted]
                if len(chosen) != len(wanted) or chosen != list(range(chosen[0], chosen[-1] + 1)):
                    return None
                originals = list(body[chosen[0] : chosen[-1] + 1])
                new = _fill_template(template_module, originals)
                if new is None:
                    return None
                self.done = True
                return [*body[: chosen[0]], *new, *body[chosen[-1] + 1 :]]

            def leave_IndentedBlock(
                self, original: cst.IndentedBlock, updated: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                if self.done:
                    return updated
                new = self._replace(original.body, updated.body)
                return updated if new is None else updated.with_changes(body=new)

            def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
                if self.done:
                    return updated
                new = self._replace(original.body, updated.body)
                return updated if new is None else updated.with_changes(body=new)

        replacer = Replace()
        changed = module.visit(replacer)
        return changed if replacer.done else None

    return _rewrite(source, first, last, transform)


def move_into_main(
    source: SourceText,
    tree: ast.Module,
    moved: Statements,
    *,
    function: str = "main",
    global_names: Sequence[str] = (),
) -> list[Edit]:
    """Edits that move the top-level statements ``moved`` (in source order)
    into ``def <function>():`` and call it under ``if __name__ ==
    "__main__":``. Both go after the last moved statement, with every other
    top-level statement (imports, definitions) kept in place and in order.
    ``global_names`` get a ``global`` statement, for names that module-level
    functions read after the move."""
    first = statement_start(moved[0])
    # Comment lines right above the first moved statement go with it.
    while first > 1 and source.line(first - 1).startswith("#"):
        first -= 1
    last = _end(tree.body[-1])
    wanted = {s.lineno - first + 1 for s in moved}
    # Blank lines right above the segment already separate it (PEP 8 wants
    # two before a definition).
    above = 0
    while first - above > 1 and not source.line(first - above - 1).strip():
        above += 1
    missing = 0 if first == 1 else max(0, 2 - above)

    def transform(module: cst.Module, positions: Any) -> cst.Module | None:
        import libcst as cst

        # SimpleStatementLine | BaseCompoundStatement: both have leading_lines.
        kept: list[Any] = []
        body: list[Any] = []
        for stmt in module.body:
            (body if _start_line(positions, stmt) in wanted else kept).append(stmt)
        if len(body) != len(wanted):
            return None
        # Comments above the segment's first statement are in the module's
        # header: they travel with it. Blank lines would open main()'s body.
        lead = _strip_blank([*module.header, *body[0].leading_lines])
        body[0] = body[0].with_changes(leading_lines=lead)
        # Top-level spacing (two blank lines) shrinks to one inside main(), and
        # a blank line, indented, would end in spaces.
        body = [s.with_changes(leading_lines=_one_blank(s.leading_lines)) for s in body]
        if global_names:
            body.insert(0, cst.parse_statement(f"global {', '.join(global_names)}\n"))
        two_blank = [cst.EmptyLine(), cst.EmptyLine()]
        main = cst.parse_statement(f"def {function}():\n    pass\n")
        assert isinstance(main, cst.FunctionDef)
        main = main.with_changes(body=cst.IndentedBlock(body=body), leading_lines=two_blank)
        guard = cst.parse_statement(f'if __name__ == "__main__":\n    {function}()\n')
        guard = guard.with_changes(leading_lines=two_blank)
        new_body = [*kept, main, guard]
        new_body[0] = new_body[0].with_changes(
            leading_lines=[cst.EmptyLine()] * missing + _strip_blank(new_body[0].leading_lines)
        )
        return module.with_changes(header=[], body=new_body, has_trailing_newline=True)

    return _rewrite(source, first, last, transform)


# -- internals ---------------------------------------------------------------


def _start_line(positions: Any, stmt: cst.CSTNode) -> int:
    return int(positions[stmt].start.line)


def _strip_blank(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    out = list(lines)
    while out and out[0].comment is None:
        out.pop(0)
    return out


def _unindent_blank(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    return [line if line.comment is not None else line.with_changes(indent=False) for line in lines]


def _one_blank(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    out: list[cst.EmptyLine] = []
    for line in _unindent_blank(lines):
        if line.comment is None and out and out[-1].comment is None:
            continue
        out.append(line)
    return out


def _fill_template(template: cst.Module, originals: list[Any]) -> list[Any] | None:
    """The template's statements with ``__body__`` replaced by ``originals``;
    the first original's comments and blank lines move above the result."""
    import libcst as cst

    class Unindent(cst.CSTTransformer):
        def leave_EmptyLine(self, original: cst.EmptyLine, updated: cst.EmptyLine) -> Any:
            return _unindent_blank([updated])[0]

    template = template.visit(Unindent())

    lead = originals[0].leading_lines
    originals = [originals[0].with_changes(leading_lines=()), *originals[1:]]

    class Fill(cst.CSTTransformer):
        filled = 0

        def leave_SimpleStatementLine(
            self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
        ) -> Any:
            small = updated.body
            if (
                len(small) == 1
                and isinstance(small[0], cst.Expr)
                and isinstance(small[0].value, cst.Name)
                and small[0].value.value == BODY
            ):
                self.filled += 1
                return cst.FlattenSentinel(originals)
            return updated

    filler = Fill()
    filled = template.visit(filler)
    if filler.filled != 1 or not filled.body:
        return None
    body: list[Any] = list(filled.body)
    body[0] = body[0].with_changes(leading_lines=[*lead, *body[0].leading_lines])
    return body


def _rewrite(
    source: SourceText,
    first: int,
    last: int,
    transform: Callable[[cst.Module, Any], cst.Module | None],
) -> list[Edit]:
    """Parse lines ``first..last`` (whole top-level statements), let
    ``transform`` change the tree, and return the changed lines as one edit."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    start = source.offset(Position(first, 0))
    end = source.offset(Position(last + 1, 0)) if last < len(source.lines) else len(source.text)
    old = source.text[start:end]
    try:
        module = cst.parse_module(old)
    except (cst.ParserSyntaxError, RecursionError):
        return []
    # The segment is a fresh tree nobody else holds: no defensive copy.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    changed = transform(wrapper.module, positions)
    if changed is None:
        return []
    return _line_diff(source, start, old, changed.code)


def _line_diff(source: SourceText, start: int, old: str, new: str) -> list[Edit]:
    """One edit for the lines that differ between ``old`` and ``new`` (the
    common leading and trailing lines are left alone)."""
    if old == new:
        return []
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    old_from = start + sum(len(line) for line in a[:head])
    old_to = start + len(old) - sum(len(line) for line in a[len(a) - tail :])
    new_text = "".join(b[head : len(b) - tail])
    return [Edit(Range(source.position_at(old_from), source.position_at(old_to)), new_text)]
