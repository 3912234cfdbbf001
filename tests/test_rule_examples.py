"""Every rule's own valid/invalid examples, and every fix of every invalid
example: applied, re-parsed, re-linted clean for that rule, idempotent."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtrap.config import from_table
from torchtrap.engine import fix_source, lint
from torchtrap.fixes.apply import apply_edits
from torchtrap.rules import ALL_RULES, Invalid, Rule, Valid


def _cases(kind: str) -> list[object]:
    cases = []
    for rule in ALL_RULES:
        for i, example in enumerate(getattr(rule, kind)):
            cases.append(pytest.param(rule, example, id=f"{rule.code}-{kind}-{i}"))
    return cases


def _lint(rule: type[Rule], example: Valid | Invalid, code: str | None = None):
    config = from_table(dict(example.config))
    source = textwrap.dedent(code if code is not None else example.code)
    return source, [
        f for f in lint(source, "example.py", config, rules=[rule]) if f.code == rule.code
    ]


def test_every_rule_has_examples_and_docs() -> None:
    assert ALL_RULES, "no rules registered"
    for rule in ALL_RULES:
        assert len(rule.valid) >= 3, f"{rule.code}: needs near-miss negatives"
        assert rule.invalid, f"{rule.code}: needs invalid examples"
        for section in ("What it does", "Why is this bad?", "Example", "Use instead", "References"):
            assert rule.docs_section(section), f"{rule.code}: docstring lacks '## {section}'"


@pytest.mark.parametrize(("rule", "example"), _cases("valid"))
def test_valid(rule: type[Rule], example: Valid) -> None:
    _, findings = _lint(rule, example)
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize(("rule", "example"), _cases("invalid"))
def test_invalid(rule: type[Rule], example: Invalid) -> None:
    _, findings = _lint(rule, example)
    assert findings, f"{rule.code} did not flag:\n{example.code}"
    if example.line is not None:
        assert example.line in [f.range.start.line for f in findings]
    if example.severity is not None:
        assert {f.severity for f in findings} == {example.severity}
    if example.message_contains is not None:
        assert any(example.message_contains in f.message for f in findings)


@pytest.mark.parametrize(("rule", "example"), _cases("invalid"))
def test_fixes(rule: type[Rule], example: Invalid) -> None:
    source, findings = _lint(rule, example)
    fixes = [fix for f in findings[:1] for fix in f.fixes]
    if example.fixed is not None:
        assert fixes, f"{rule.code}: example expects a fix"
    for fix in fixes:
        fixed = apply_edits(source, fix.edits)
        assert fixed != source, f"{fix.title!r} changed nothing"
        ast.parse(fixed)  # re-parses
        _, after = _lint(rule, example, fixed)
        assert len(after) < len(findings), f"{fix.title!r} left the finding:\n{fixed}"
        if len(findings) == 1:
            assert after == [], f"{fix.title!r} did not re-lint clean:\n{fixed}"
        if example.fixed is not None and (
            example.fix_title is None or example.fix_title in fix.title
        ):
            assert fixed == textwrap.dedent(example.fixed)


@pytest.mark.parametrize(("rule", "example"), _cases("invalid"))
def test_fix_all_is_idempotent(rule: type[Rule], example: Invalid) -> None:
    config = from_table(dict(example.config))
    source = textwrap.dedent(example.code)
    for unsafe in (False, True):
        fixed, _ = fix_source(source, "example.py", config, unsafe=unsafe, rules=[rule])
        ast.parse(fixed)
        again, applied = fix_source(fixed, "example.py", config, unsafe=unsafe, rules=[rule])
        assert (again, applied) == (fixed, 0)
