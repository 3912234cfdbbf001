"""A fix's title says what it writes: every code snippet a title quotes
(`` `x.detach()` ``) appears in the text the fix produces, for every fix of
every rule's invalid examples. ``...`` in a snippet stands for any text
(`` `next(...)` ``); ``name()`` for a call with arguments (`` `clamp_()` ``).
Snippets that name what the fix removes (after "Drop", "Remove", "instead
of") and those in an unsafe fix's reason are not what it writes."""

from __future__ import annotations

import re
import textwrap

import pytest

from torchtrap.config import from_table
from torchtrap.engine import lint
from torchtrap.findings import UNSAFE_MARK
from torchtrap.fixes.apply import apply_edits
from torchtrap.rules import ALL_RULES, Invalid, Rule

_SNIPPET = re.compile(r"`([^`]+)`")
_REMOVED_BEFORE = ("drop ", "remove ", "instead of ", "replace ")


def written_snippets(title: str) -> list[str]:
    """The code a title says its fix writes."""
    head = title.split(UNSAFE_MARK, 1)[0]
    out = []
    for match in _SNIPPET.finditer(head):
        before = head[: match.start()].lower()
        if before.endswith(_REMOVED_BEFORE):
            continue
        out.append(match.group(1))
    return out


def appears(snippet: str, text: str) -> bool:
    if snippet.endswith("()"):
        snippet = snippet[:-1]  # `clamp_()` names the call `clamp_(min=...)`
    pattern = ".*?".join(re.escape(part) for part in snippet.split("..."))
    return re.search(pattern, text, re.DOTALL) is not None


def _cases() -> list[object]:
    return [
        pytest.param(rule, example, id=f"{rule.code}-{i}")
        for rule in ALL_RULES
        for i, example in enumerate(rule.invalid)
    ]


@pytest.mark.parametrize(("rule", "example"), _cases())
def test_fix_titles_quote_what_the_fix_writes(rule: type[Rule], example: Invalid) -> None:
    source = textwrap.dedent(example.code)
    config = from_table(dict(example.config))
    for finding in lint(source, "example.py", config, rules=[rule]):
        for fix in finding.fixes:
            fixed = apply_edits(source, fix.edits)
            missing = [s for s in written_snippets(fix.title) if not appears(s, fixed)]
            assert missing == [], f"{rule.code}: {fix.title!r} does not write {missing}:\n{fixed}"


def test_the_checker_can_fail() -> None:
    # TT210 once said `torch.zeros(1).detach()` and wrote `torch.zeros(1)`.
    assert not appears("torch.zeros(1).detach()", "x = torch.zeros(1)\n")
    assert appears("clamp_()", "p.clamp_(min=0)")
    assert appears("next(...)", "batch = next(self.loaders['train'])")
    assert written_snippets(
        "Drop `Variable(...)` and run the block under `torch.no_grad()` (unsafe: `x` changes)"
    ) == ["torch.no_grad()"]
