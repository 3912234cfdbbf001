"""What a rule says it assumed when it reports a MAY value.

A MAY value (:class:`~torchtrap.values.model.Certainty`) holds on some paths
only: one branch of an ``if``, some of a function's call sites. It never
makes an error-level finding on its own. A rule that reports one anyway
(the path that gives it is a bug whenever it runs) builds an
:class:`Assumption` here and hands it to ``Rule.finding(assumption=...)``,
which caps the severity (:func:`torchtrap.findings.may_severity`), adds
the related row at the value's origin and lists the line the phrase names.

The phrase reads after the subject: "`torch.log` of `p`, if `p` is the
softmax from line 4", "... if `p` is the sigmoid passed at train.py:12".
An UNKNOWN value has no assumption: a rule stays silent on it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchtrap.facts.remote import remote_where
from torchtrap.findings import line_text
from torchtrap.values.model import Probability, Value


@dataclass(frozen=True)
class Assumption:
    """``phrase``: "if `p` is the softmax from line 4" (no capital, no stop).
    ``origin``: where the assumed value comes from (a node of this module,
    or a stand-in for another file's: ``Context.related`` places it).
    ``note``: the related row's message there. ``line_refs``: the lines of
    this module that ``phrase`` names (as ``line_text``)."""

    phrase: str
    origin: ast.AST
    note: str
    line_refs: tuple[int, ...] = ()


def probability_assumption(
    value: Value, prob: Probability, here: str, noun: str | None = None
) -> Assumption | None:
    """The assumption behind reporting ``prob`` of a MAY ``value`` (seen in
    the module at ``here``); None when the value is DEFINITE or unknown."""
    if value.definite or not value.known:
        return None
    what = noun or _noun(prob)
    subject = f"`{prob.via}`" if prob.via else "the argument"
    where = remote_where(prob.origin, here)
    line_refs: tuple[int, ...] = ()
    if where is None:
        line = getattr(prob.origin, "lineno", None)
        if not isinstance(line, int):
            return None
        where, line_refs = line_text(line), (line,)
    if prob.passed:
        phrase = f"if {subject} is the {what} passed at {where}"
        note = f"assumed: this caller's {what} reaches {subject}; other callers pass other values"
    else:
        phrase = f"if {subject} is the {what} from {where}"
        note = f"assumed: {subject} is this {what} (on some paths only)"
    return Assumption(phrase, prob.origin, note, line_refs)


def _noun(prob: Probability) -> str:
    return "normalised probability" if prob.kind == "normalised" else prob.kind


__all__ = ["Assumption", "probability_assumption"]
