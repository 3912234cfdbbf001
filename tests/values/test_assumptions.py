"""What a rule says it assumed for a MAY value, and the severity it gets."""

from __future__ import annotations

import textwrap

from tests.values.helpers import probes
from torchtrap.config import from_table
from torchtrap.engine import lint
from torchtrap.findings import Severity, may_severity
from torchtrap.values.assumptions import probability_assumption


def _assumed(code: str) -> list[str | None]:
    out = []
    for value in probes(code):
        prob = value.probability
        found = probability_assumption(value, prob, "example.py") if prob else None
        out.append(found.phrase if found else None)
    return out


def test_a_branch_a_caller_and_definite_or_unknown_values() -> None:
    assert _assumed(
        """
        import torch

        def f(x, c, q):
            if c:
                p = torch.softmax(x, 1)
            else:
                p = q
            probe(p)
            probe(torch.softmax(x, 1))
            probe(q)
            probe(torch.sigmoid(x) if c else q)

        def g(p):
            probe(p)

        g(torch.sigmoid(z))
        g(w)
        """
    ) == [
        "if `p` is the softmax from line 6",
        None,  # definite: no assumption to state
        None,  # unknown on every path: silent
        "if the argument is the sigmoid from line 12",
        "if `p` is the sigmoid passed at line 17",
    ]


def test_may_findings_are_never_errors_or_warnings() -> None:
    assert may_severity(Severity.ERROR) is Severity.INFO
    assert may_severity(Severity.WARNING) is Severity.INFO
    assert may_severity(Severity.INFO) is Severity.HINT
    assert may_severity(Severity.HINT) is Severity.HINT
    code = textwrap.dedent(
        """
        import torch

        def f(x, c, q):
            p = torch.softmax(x, 1) if c else q
            return torch.log(p), torch.log(torch.softmax(x, 1))
        """
    )
    # Raised to error by the user: the definite one is an error, the MAY one info.
    config = from_table({"severity": {"TT201": "error"}})
    found = lint(code, "x.py", config)
    assert sorted(f.severity.value for f in found) == ["error", "info"]
    may = [f for f in found if f.severity is Severity.INFO]
    assert "if `p` is the softmax from line 5" in may[0].message
    assert [r.range.start.line for r in may[0].related] == [5]
