"""Tiny rules for testing the engine and front ends independently of the
real rules' detection logic."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules import Rule


class FlagPrintRule(Rule):
    """Flags every ``print(...)`` call (test-only).

    ## What it does
    Flags print.
    """

    code = "TT990"
    name = "flag-print"
    summary = "test rule"

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.index.of(ast.Call):
            if isinstance(call.func, ast.Name) and call.func.id == "print":
                yield self.finding(
                    call.func,
                    "print found",
                    fixes=[
                        Fix(
                            "Use log",
                            Applicability.SAFE,
                            build=lambda f=call.func: [edits.replace(self.ctx.source, f, "log")],
                        )
                    ],
                )


class BrokenRule(Rule):
    """Always raises (test-only)."""

    code = "TT991"
    name = "broken"
    summary = "test rule that crashes"

    def check(self) -> Iterable[Finding]:
        raise RuntimeError("boom")
