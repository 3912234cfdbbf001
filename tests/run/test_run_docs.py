"""The docs of each rule a run confirms say what the run reports, so that
`torchtrap rule TT102` does not contradict the run's finding (issue 36,
item 7)."""

from __future__ import annotations

import re

import pytest

from torchtrap.rules import RULES_BY_CODE
from torchtrap.run.report import RUN_CODES


@pytest.mark.parametrize("code", sorted(RUN_CODES))
def test_docs_say_what_the_run_reports(code: str) -> None:
    what = RULES_BY_CODE[code].docs_section("What it does")
    assert re.search(r"`torchtrap run` [^.]*\breports\b", what), code


def test_tt102_docs_cover_the_constant_seed_the_run_reports() -> None:
    what = RULES_BY_CODE["TT102"].docs_section("What it does")
    assert re.search(r"reports on any torch version", what)
    assert "np.random.seed(1234)" in what
    assert "Statically, for projects on torch < 1.9 only" in what


def test_twin_a_rule_the_run_does_not_confirm_does_not_claim_it() -> None:
    for code, rule in RULES_BY_CODE.items():
        if code not in RUN_CODES:
            assert "`torchtrap run`" not in rule.docs(), code
