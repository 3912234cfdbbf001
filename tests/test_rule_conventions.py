"""Conventions every rule in the registry keeps (new rules included): short
messages, unsafe fixes that say why, docs a user can open, a hover-sized why."""

from __future__ import annotations

import textwrap

import pytest

from torchtrap.config import from_table
from torchtrap.engine import lint
from torchtrap.findings import UNSAFE_MARK, Finding, Position, Range, Severity, line_text
from torchtrap.rules import ALL_RULES, Rule

MAX_MESSAGE = 120


def _findings(rule: type[Rule]) -> list[Finding]:
    out = []
    for example in rule.invalid:
        config = from_table(dict(example.config))
        source = textwrap.dedent(example.code)
        out += [f for f in lint(source, "example.py", config, rules=[rule]) if f.code == rule.code]
    return out


RULES = [pytest.param(rule, id=rule.code) for rule in ALL_RULES]


@pytest.mark.parametrize("rule", RULES)
def test_messages_fit_the_problems_panel(rule: type[Rule]) -> None:
    findings = _findings(rule)
    assert findings
    long = [f.message for f in findings if len(f.message) > MAX_MESSAGE]
    assert long == [], (
        f"{rule.code}: messages over {MAX_MESSAGE} characters: move details to related"
    )


@pytest.mark.parametrize("rule", RULES)
def test_unsafe_fix_titles_say_why_and_safe_ones_do_not(rule: type[Rule]) -> None:
    for finding in _findings(rule):
        for fix in finding.fixes:
            if fix.is_safe:
                assert UNSAFE_MARK not in fix.title, f"{rule.code}: safe fix {fix.title!r}"
            else:
                assert UNSAFE_MARK in fix.title, f"{rule.code}: unsafe fix {fix.title!r}"
                why = fix.title.split(UNSAFE_MARK, 1)[1]
                assert fix.title.endswith(")") and len(why.strip(" )")) >= 10, fix.title


@pytest.mark.parametrize("rule", RULES)
def test_docs_cite_only_what_a_user_can_open(rule: type[Rule]) -> None:
    # Internal research notes and seed documents are not public: cite PyTorch
    # docs, issues, or this project's docs instead.
    text = rule.docs() + rule.summary + rule.fact
    for private in ("pitfall facts", "pitfall-facts", "§", "/work/", "seed 0"):
        assert private not in text.lower(), f"{rule.code} cites {private!r}"
    for finding in _findings(rule):
        assert "§" not in finding.message and "pitfall" not in finding.message


@pytest.mark.parametrize("rule", RULES)
def test_hover_why_is_one_sentence(rule: type[Rule]) -> None:
    why = rule.why()
    assert why and why.endswith((".", "!", "?")) and "\n" not in why
    assert len(why) <= 300, f"{rule.code}: the first sentence of 'Why is this bad?' is too long"


def test_relabel_lines_is_one_pass_and_whole_numbers_only() -> None:
    pos = Position(1, 0)
    finding = Finding(
        "TT999",
        "demo",
        f"from {line_text(6)} and {line_text(1)}, not line 60",
        Severity.WARNING,
        Range(pos, pos),
        line_refs=(6, 1),
    )
    relabelled = finding.relabel_lines({6: "line 1", 1: "cell 2, line 1"}.__getitem__)
    assert relabelled.message == "from line 1 and cell 2, line 1, not line 60"
    assert relabelled.line_refs == ()


@pytest.mark.parametrize("rule", RULES)
def test_related_information_points_elsewhere(rule: type[Rule]) -> None:
    # Related information is for other locations (the DataLoader line, the
    # softmax line), not prose about the flagged code itself: the Problems
    # panel cuts it off, and the consequence belongs in the message.
    for finding in _findings(rule):
        for rel in finding.related:
            if rel.path is not None:
                continue
            inside = finding.range.start <= rel.range.start and rel.range.end <= finding.range.end
            assert not inside, f"{rule.code}: {rel.message!r} points at the finding itself"


def test_related_rows_are_not_canned() -> None:
    # No row repeated word for word in every file whatever the code says
    # (TT201's "logits [0, 120] with target 0" once was).
    messages = [r.message for rule in ALL_RULES for f in _findings(rule) for r in f.related]
    assert not any("logits [0, 120]" in m for m in messages)
