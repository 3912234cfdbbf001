"""Code actions: one quick fix per engine fix, an "Ignore on this line"
action, and ``source.fixAll.torchtrap``.

Listing never builds a fix's edits (``Fix.edits`` is built lazily);
the action carries ``data`` and its edit is built in ``codeAction/resolve``
(or, for clients without resolve support, by the ``torchtrap.applyFix``
command the action carries instead).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lsprotocol import types

from torchtrap.engine import fix_source, lint
from torchtrap.findings import Finding, Fix
from torchtrap.lsp.diagnostics import to_diagnostic
from torchtrap.lsp.positions import line_starts, to_client_character, to_lsp_range
from torchtrap.lsp.settings import Settings
from torchtrap.lsp.workspace import LintResult
from torchtrap.notebook import fix_cells, lint_cells
from torchtrap.source import SourceText
from torchtrap.suppressions import ignore_edit

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.torchtrap"
KINDS = [types.CodeActionKind.QuickFix, FIX_ALL_KIND]


def fix_title(finding: Finding, fix: Fix) -> str:
    return f"TorchTrap ({finding.code}): {fix.title}"


def ignore_title(code: str) -> str:
    # The same prefix as the fixes: the menu groups by rule, as ruff's does.
    return f"TorchTrap ({code}): Ignore on this line"


def findings_on_lines(result: LintResult, uri: str, rng: types.Range) -> list[tuple[int, str, int]]:
    """(finding index, document URI, 0-based start line) of the findings
    that touch the lines of ``rng`` in document ``uri``."""
    out = []
    for index, finding in enumerate(result.findings):
        if finding.is_syntax_error:
            continue
        located = result.locate(finding.range)
        if located is None or located[0] != uri:
            continue
        first, last = located[1].start.line - 1, located[1].end.line - 1
        if first <= rng.end.line and rng.start.line <= last:
            out.append((index, uri, first))
    return out


def quick_fixes(
    result: LintResult,
    uri: str,
    rng: types.Range,
    *,
    settings: Settings,
    encoding: str,
    confirmed: Mapping[str, str],
    resolve: bool,
    document_changes: bool,
) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    ignores: list[types.CodeAction] = []
    seen_ignores: set[tuple[int, str]] = set()
    for index, doc_uri, line in findings_on_lines(result, uri, rng):
        finding = result.findings[index]
        diag = to_diagnostic(result, index, settings, encoding, confirmed)
        diagnostics = [diag[1]] if diag else None
        preferred = next((j for j, f in enumerate(finding.fixes) if f.is_safe), None)
        for j, fix in enumerate(finding.fixes):
            action = types.CodeAction(
                title=fix_title(finding, fix),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=diagnostics,
                is_preferred=True if j == preferred else None,
                data={
                    "key": result.snapshot.key,
                    "version": result.version,
                    "index": index,
                    "fix": j,
                },
            )
            if not resolve:  # the client cannot resolve: let a command build the edit
                action.data = None
                action.command = types.Command(
                    title=action.title,
                    command="torchtrap.applyFix",
                    arguments=[doc_uri, result.doc_version(doc_uri), finding.code, line, j],
                )
            actions.append(action)
        if (line, finding.code) in seen_ignores:
            continue
        seen_ignores.add((line, finding.code))
        edit = ignore_line_edit(result, doc_uri, line, finding.code, encoding, document_changes)
        if edit is not None:
            ignores.append(
                types.CodeAction(
                    title=ignore_title(finding.code),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=diagnostics,
                    edit=edit,
                )
            )
    return actions + ignores


def ignore_line_edit(
    result: LintResult, uri: str, line: int, code: str, encoding: str, document_changes: bool
) -> types.WorkspaceEdit | None:
    """Merge ``code`` into the line's ``# torchtrap: ignore[...]`` or
    ``# noqa`` comment, or append one (cheap: no libcst, built eagerly)."""
    edit = ignore_edit(SourceText(result.texts[uri]), line + 1, code)
    if not edit.new_text and edit.range.start == edit.range.end:
        return None
    text_edit = types.TextEdit(to_lsp_range(result.lines[uri], edit.range, encoding), edit.new_text)
    return workspace_edit(result, {uri: [text_edit]}, document_changes)


def workspace_edit(
    result: LintResult, per_uri: Mapping[str, Sequence[types.TextEdit]], document_changes: bool
) -> types.WorkspaceEdit:
    if not document_changes:
        return types.WorkspaceEdit(changes={uri: list(edits) for uri, edits in per_uri.items()})
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=result.doc_version(uri)
                ),
                edits=list(edits),
            )
            for uri, edits in per_uri.items()
        ]
    )


REVIEW_ANNOTATION = "torchtrap.review"


def for_review(edit: types.WorkspaceEdit, label: str, description: str) -> types.WorkspaceEdit:
    """``edit`` with each text edit annotated as needing confirmation: the
    editor shows the full ``label`` and a diff (VS Code's refactor preview)
    and applies nothing until the user accepts. Needs ``documentChanges``
    and change annotations; other edits are returned as they are."""
    if not edit.document_changes:
        return edit
    changes: list[Any] = []
    for change in edit.document_changes:
        if isinstance(change, types.TextDocumentEdit):
            change = types.TextDocumentEdit(
                text_document=change.text_document,
                edits=[
                    types.AnnotatedTextEdit(
                        range=e.range, new_text=e.new_text, annotation_id=REVIEW_ANNOTATION
                    )
                    for e in change.edits
                    if isinstance(e, types.TextEdit)  # the fixes make no snippets
                ],
            )
        changes.append(change)
    annotation = types.ChangeAnnotation(
        label=label, needs_confirmation=True, description=description or None
    )
    return types.WorkspaceEdit(
        document_changes=changes, change_annotations={REVIEW_ANNOTATION: annotation}
    )


def fix_workspace_edit(
    result: LintResult, fix: Fix, encoding: str, document_changes: bool
) -> types.WorkspaceEdit | None:
    """The fix's edits (built now), mapped to the documents (cells)."""
    per_uri: dict[str, list[types.TextEdit]] = {}
    for edit in fix.edits:
        located = result.locate_edit(edit)
        if located is None:  # spans notebook cells
            return None
        uri, cell_edit = located
        per_uri.setdefault(uri, []).append(
            types.TextEdit(
                to_lsp_range(result.lines[uri], cell_edit.range, encoding), cell_edit.new_text
            )
        )
    return workspace_edit(result, per_uri, document_changes)


def lookup(result: LintResult, data: Any) -> tuple[Finding, Fix] | None:
    """The finding and fix named by an action's ``data``, if still current."""
    if not isinstance(data, Mapping) or data.get("version") != result.version:
        return None
    index, fix_index = data.get("index"), data.get("fix")
    if not isinstance(index, int) or not 0 <= index < len(result.findings):
        return None
    finding = result.findings[index]
    if not isinstance(fix_index, int) or not 0 <= fix_index < len(finding.fixes):
        return None
    return finding, finding.fixes[fix_index]


def find_by_line(result: LintResult, uri: str, code: str, line: int, encoding: str) -> int | None:
    """Index of the finding ``code`` that starts on 0-based ``line`` of ``uri``."""
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    for index, doc_uri, first in findings_on_lines(result, uri, rng):
        if doc_uri == uri and first == line and result.findings[index].code == code.upper():
            return index
    return None


class FixAll(NamedTuple):
    edit: types.WorkspaceEdit | None
    fixed: int  # fixes applied
    skipped: int  # findings left with only unsafe fixes (unsafe-fixes is off)

    def message(self) -> str:
        """What Fix All did, for the user: "Fixed 2 findings (1 unsafe fix skipped)"."""
        head = f"Fixed {_count(self.fixed, 'finding')}" if self.fixed else "Nothing to fix"
        if self.skipped:
            head += f" ({_count(self.skipped, 'unsafe fix', 'unsafe fixes')} skipped)"
        return head


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def fixable(result: LintResult, *, unsafe: bool | None = None, code: str | None = None) -> bool:
    """Whether Fix All has anything to apply (unsafe fixes only when the
    config's ``unsafe-fixes`` is on, or ``unsafe``; only ``code``'s fixes
    when given)."""
    unsafe = result.config.unsafe_fixes if unsafe is None else unsafe
    return not result.excluded and any(
        fix.is_safe or unsafe
        for finding in result.findings
        if code is None or finding.code == code
        for fix in finding.fixes
    )


# "Fix all TT202 in this file" is offered when a rule has this many
# fixable findings in the file (for one, its own quick fix is the same).
FIX_CODE_MIN = 2


def fix_code_actions(
    result: LintResult, uri: str, rng: types.Range, *, resolve: bool
) -> list[types.CodeAction]:
    """One "Fix all TTxxx in this file" per rule under the cursor that has
    at least ``FIX_CODE_MIN`` findings with a safe fix (unsafe ones too with
    ``unsafe-fixes``) in the file; its edit is built on resolve."""
    unsafe = result.config.unsafe_fixes
    counts: dict[str, int] = {}
    for finding in result.findings:
        if any(fix.is_safe or unsafe for fix in finding.fixes):
            counts[finding.code] = counts.get(finding.code, 0) + 1
    codes = dict.fromkeys(
        result.findings[index].code for index, _, _ in findings_on_lines(result, uri, rng)
    )
    actions = []
    for code in codes:
        if counts.get(code, 0) < FIX_CODE_MIN:
            continue
        title = f"TorchTrap: fix all {code} in this file ({counts[code]})"
        action = types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix)
        if resolve:
            action.data = {
                "key": result.snapshot.key,
                "version": result.version,
                "fixAll": True,
                "code": code,
            }
        else:  # the client cannot resolve: the command builds and applies the edit
            action.command = types.Command(
                title=title, command="torchtrap.fixAll", arguments=[{"uri": uri, "code": code}]
            )
        actions.append(action)
    return actions


class UnsafeFix(NamedTuple):
    uri: str  # the document (a notebook's cell)
    version: int | None
    code: str
    line: int  # 0-based, in that document
    fix: int  # index among the finding's fixes
    title: str
    message: str


def unsafe_fixes(result: LintResult) -> list[UnsafeFix]:
    """The findings Fix All leaves (they have only unsafe fixes), each with
    its first fix: for the editor to offer one by one ("review")."""
    out = []
    for finding in result.findings:
        if finding.is_syntax_error or not finding.fixes:
            continue
        if any(fix.is_safe for fix in finding.fixes):
            continue
        located = result.locate(finding.range)
        if located is None:
            continue
        uri, rng = located
        fix = finding.fixes[0]
        out.append(
            UnsafeFix(
                uri,
                result.doc_version(uri),
                finding.code,
                rng.start.line - 1,
                0,
                fix_title(finding, fix),
                finding.message,
            )
        )
    return out


def fix_all_edit(
    result: LintResult,
    encoding: str,
    document_changes: bool,
    *,
    unsafe: bool | None = None,
    code: str | None = None,
) -> FixAll:
    """Every safe fix (and unsafe one, with ``unsafe-fixes`` or ``unsafe``),
    in one edit (runs in a worker thread; builds edits and re-lints).
    ``code``: only the fixes of that rule ("Fix all TT202 in this file")."""
    snapshot = result.snapshot
    unsafe = result.config.unsafe_fixes if unsafe is None else unsafe
    config = result.config if code is None else result.config.merged(select=[code])
    if result.excluded:
        return FixAll(None, 0, 0)
    if not fixable(result, unsafe=unsafe, code=code):
        return FixAll(None, 0, _unsafe_only(result.findings))
    per_uri: dict[str, list[types.TextEdit]] = {}
    if snapshot.notebook:
        cells = [d.text for d in snapshot.docs]
        new_cells, count = fix_cells(cells, snapshot.lint_path, config, unsafe=unsafe)
        for doc, old, new in zip(snapshot.docs, cells, new_cells, strict=True):
            if old != new:
                per_uri[doc.uri] = [minimal_edit(old, new, result.lines[doc.uri], encoding)]
        left = lint_cells(new_cells, snapshot.lint_path, result.config).findings
    else:
        doc = snapshot.docs[0]
        new_text, count = fix_source(doc.text, snapshot.lint_path, config, unsafe=unsafe)
        if new_text != doc.text:
            per_uri[doc.uri] = [minimal_edit(doc.text, new_text, result.lines[doc.uri], encoding)]
        left = lint(new_text, snapshot.lint_path, result.config)
    skipped = 0 if unsafe else _unsafe_only(left)
    if not per_uri:
        return FixAll(None, 0, skipped)
    return FixAll(workspace_edit(result, per_uri, document_changes), count, skipped)


def _unsafe_only(findings: Sequence[Finding]) -> int:
    return sum(1 for f in findings if f.fixes and not any(fix.is_safe for fix in f.fixes))


def minimal_edit(old: str, new: str, lines: Sequence[str], encoding: str) -> types.TextEdit:
    """One edit replacing only the part that differs, so the cursor, folds
    and undo history outside it survive (a whole-document replace would not)."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if 0 < prefix < len(old) and old[prefix - 1] == "\r" and old[prefix] == "\n":
        prefix -= 1  # never split a "\r\n"
    end = len(old) - suffix
    if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
        end += 1
    starts = line_starts(old)

    def position(offset: int) -> types.Position:
        line = bisect.bisect_right(starts, offset) - 1
        column = offset - starts[line]
        text = lines[line] if line < len(lines) else ""
        return types.Position(line, to_client_character(text, column, encoding))

    replacement = new[prefix : len(new) - (len(old) - end)]
    return types.TextEdit(types.Range(position(prefix), position(end)), replacement)
