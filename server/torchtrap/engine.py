"""The one API every front end calls: ``lint(source, path, config)``.

Parse once with the stdlib ``ast`` (C parser), compute shared facts once,
run each enabled rule, drop suppressed findings. A fix's edits are built
only when asked for (a code action, --fix).
"""

from __future__ import annotations

import ast
import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchtrap.config import Config
from torchtrap.facts import ModuleFacts, NodeIndex
from torchtrap.findings import (
    SYNTAX_ERROR_CODE,
    SYNTAX_ERROR_NAME,
    Finding,
    Position,
    Range,
    Severity,
)
from torchtrap.ipython import CellSpan, displayed_lines
from torchtrap.project.index import NeedsProject, Project, _Pending
from torchtrap.project.summary import ModuleSummary, summarize
from torchtrap.rules import ALL_RULES, Context, Rule
from torchtrap.source import SourceText, UndecodableSource, decode_source
from torchtrap.suppressions import parse_suppressions

log = logging.getLogger("torchtrap")


# Without per-file ignores the enabled rules depend on the config only: one
# list per config instead of 27 selector matches per file.
# (Keyed on the registry's contents too: tests register rules at run time.)
_ENABLED: dict[int, tuple[Config, list[type[Rule]], list[type[Rule]]]] = {}


def enabled_rules(config: Config, path: str | None = None) -> list[type[Rule]]:
    if path and config.per_file_ignores:
        return [rule for rule in ALL_RULES if config.is_enabled(rule.code, path)]
    hit = _ENABLED.get(id(config))
    if hit is None or hit[0] is not config or hit[1] != ALL_RULES:
        if len(_ENABLED) > 64:
            _ENABLED.clear()
        enabled = [rule for rule in ALL_RULES if config.is_enabled(rule.code)]
        hit = _ENABLED[id(config)] = (config, list(ALL_RULES), enabled)
    return list(hit[2])


def matching_rules(rules: Sequence[type[Rule]], source: str) -> list[type[Rule]]:
    """The rules whose ``requires_text`` gate ``source`` passes. Same answer
    as each rule's ``matches_text``, but a word several rules share
    ("backward", "load", "torch") is searched for once: a word that is not
    there costs a scan of the whole text."""
    seen: dict[str, bool] = {}
    out: list[type[Rule]] = []
    for rule in rules:
        words = rule.requires_text
        if not words:
            out.append(rule)
            continue
        for word in words:
            found = seen.get(word)
            if found is None:
                found = seen[word] = word in source
            if found:
                out.append(rule)
                break
    return out


def lint(
    source: str | bytes,
    path: str = "<stdin>",
    config: Config | None = None,
    rules: Sequence[type[Rule]] | None = None,
    project: Project | None = None,
    *,
    cells: Sequence[CellSpan] = (),
    parsed: Parsed | None = None,
) -> list[Finding]:
    """Findings for one module, sorted by position.

    ``project`` is the index of the file's project (``ctx.project`` for the
    rules); without it the rules see this file alone. A file that cannot be
    decoded or parsed yields exactly one ``TT000`` finding at the error's
    location and no rule findings. An exception in a rule is logged and
    that rule skipped; the others still run. ``cells``: the module is a
    notebook's cells joined (``torchtrap.notebook``), laid out so.
    ``parsed``: ``source``'s parse from an earlier :func:`analyse`.
    """
    return analyse(
        source, path, config, rules, project=project, cells=cells, parsed=parsed
    ).findings


@dataclass
class Parsed:
    """A module's text, syntax tree and node index, kept from the first
    pass of ``check`` for the file's second lint (with the project), which
    then neither parses nor indexes it again. Facts are computed afresh."""

    text: str
    tree: ast.Module
    index: NodeIndex


@dataclass
class Analysis:
    """One parse's results: the findings, the module's summary for the
    project index (when asked for), and whether a rule asked for the
    project while it was PENDING (then ``findings`` is empty: lint again;
    ``parsed`` is the parse to lint it with)."""

    findings: list[Finding]
    summary: ModuleSummary | None = None
    needs_project: bool = False
    parsed: Parsed | None = None
    # With ``defer_summary``: makes ``summary`` from the same parse, later.
    summarize: Callable[[], ModuleSummary | None] | None = None


def analyse(
    source: str | bytes,
    path: str = "<stdin>",
    config: Config | None = None,
    rules: Sequence[type[Rule]] | None = None,
    *,
    project: Project | _Pending | None = None,
    module: tuple[str, bool] | None = None,
    cells: Sequence[CellSpan] = (),
    parsed: Parsed | None = None,
    defer_summary: bool = False,
) -> Analysis:
    """Lint and, when ``module`` (its dotted name, is a package) is given,
    summarise the module from the same parse. ``project=PENDING`` is
    ``check``'s first pass: a rule that asks for the project stops the lint
    of this file (``needs_project``), the summary is still made.
    ``parsed``: the parse of ``source`` kept from an earlier analysis
    (``Analysis.parsed``), used instead of parsing it again.
    ``defer_summary``: do not summarise now; ``Analysis.summarize`` does it
    (same parse, same summary) when called: an editor publishes the
    findings first."""
    config = config or Config()
    if parsed is not None:
        return _analyse_tree(
            parsed.text,
            parsed.tree,
            parsed.index,
            path,
            config,
            rules,
            project,
            module,
            cells,
            defer_summary,
        )
    if isinstance(source, bytes):
        try:
            source = decode_source(source)
        except UndecodableSource as err:
            return Analysis([unreadable_finding(path, str(err), err.line, err.column)])
    if "\x00" in source:
        line = source.count("\n", 0, source.index("\x00")) + 1
        return Analysis(
            [unreadable_finding(path, "file contains a NUL byte; not Python source", line, 0)]
        )
    try:
        with warnings.catch_warnings():
            # SyntaxWarnings (invalid escapes) are the user's business, not ours.
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=path)
    except SyntaxError as err:
        line = err.lineno or 1
        col = max((err.offset or 1) - 1, 0)
        # err.offset counts code points for str input on 3.10+.
        return Analysis([unreadable_finding(path, f"SyntaxError: {err.msg}", line, col)])
    except (ValueError, RecursionError, MemoryError) as err:
        return Analysis([unreadable_finding(path, f"cannot parse: {err}", 1, 0)])
    return _analyse_tree(
        source, tree, None, path, config, rules, project, module, cells, defer_summary
    )


def _analyse_tree(
    source: str,
    tree: ast.Module,
    index: NodeIndex | None,
    path: str,
    config: Config,
    rules: Sequence[type[Rule]] | None,
    project: Project | _Pending | None,
    module: tuple[str, bool] | None,
    cells: Sequence[CellSpan],
    defer_summary: bool = False,
) -> Analysis:
    text = SourceText(source)
    selected = rules if rules is not None else enabled_rules(config, path)
    selected = matching_rules(selected, source)
    findings: list[Finding] = []
    facts: ModuleFacts | None = None
    needs_project = False
    if selected:
        facts = ModuleFacts(tree, index)
        ctx = Context(text, path, tree, facts, config, project)
        if cells:
            ctx.displayed = displayed_lines(tree, text.lines, cells)
        for rule in selected:
            try:
                findings.extend(rule(ctx).check())
            except NeedsProject:
                needs_project = True
                findings = []
                break
            except Exception:  # one broken rule must not take the others down
                log.exception("rule %s failed on %s; skipped", rule.code, path)
        if findings:
            suppressions = parse_suppressions(text)
            findings = [f for f in findings if not suppressions.suppresses(f)]
        findings.sort(key=lambda f: (f.range.start, f.code))
    kept = None
    if needs_project and facts is not None:
        kept = Parsed(source, tree, facts.index)
    if module is None:
        return Analysis(findings, None, needs_project, kept)
    name, package = module

    def summary() -> ModuleSummary | None:
        try:
            return summarize(tree, text, path, name, package, facts)
        except RecursionError:  # absurdly deep code: no summary, still linted
            return None

    if defer_summary:
        return Analysis(findings, None, needs_project, kept, summary)
    return Analysis(findings, summary(), needs_project, kept)


def unreadable_finding(path: str, message: str, line: int = 1, column: int = 0) -> Finding:
    """The one TT000 finding for a file that cannot be analysed."""
    pos = Position(max(line, 1), max(column, 0))
    return Finding(
        code=SYNTAX_ERROR_CODE,
        name=SYNTAX_ERROR_NAME,
        message=message,
        severity=Severity.ERROR,
        range=Range(pos, pos),
        path=path,
    )


def fix_source(
    source: str,
    path: str = "<stdin>",
    config: Config | None = None,
    *,
    unsafe: bool = False,
    rules: Sequence[type[Rule]] | None = None,
    max_rounds: int = 10,
    project: Project | None = None,
) -> tuple[str, int]:
    """Apply fixes until none is left (fixes that overlap wait for the next
    round, as in ruff). Returns the new text and how many fixes were applied.
    Hint-level findings are fixed only with ``config.show_hints`` (as they are
    reported: ``check --fix`` fixes what it would show)."""
    from torchtrap.fixes.apply import apply_fixes, select_fixes

    total = 0
    for _ in range(max_rounds):
        findings = lint(source, path, config, rules, project)
        findings = [f for f in findings if (config or Config()).shows(f.severity)]
        fixes = select_fixes(findings, unsafe=unsafe)
        if not fixes:
            break
        new_source, applied = apply_fixes(source, fixes)
        if applied == 0 or new_source == source:
            break
        source, total = new_source, total + applied
    return source, total
