"""No answer of the layer depends on the questions asked before it: each
question, asked after any others, gets the answer it gets asked alone
(``torchtrap.values.memo``: the cut-off and cycles are not remembered
across questions)."""

from __future__ import annotations

import ast

from tests.values.helpers import probe_calls
from torchtrap.rules.base import Context

# a0 is a probability; each `a<k+1> = a<k>` is one more step to follow. The
# cut-off falls inside the chain, so the answer for a name depends on how
# far down the chain it is, never on what was asked first.
CHAIN = (
    "import torch\n\ndef f(x):\n    a0 = torch.softmax(x, 1)\n"
    + "".join(f"    a{i + 1} = a{i}\n" for i in range(14))
    + "".join(f"    probe(a{i})\n" for i in (14, 12, 9, 6, 3))
)

# A parameter passed back to its own function, and two functions calling
# each other: the cycle's placeholder must not outlive the question.
CYCLE = """
import torch

def a(p):
    probe(p)
    return b(p)

def b(q):
    probe(q)
    return a(q)

def g(p, n):
    probe(p)
    if n:
        g(p * 1, n - 1)
    return p

def top(x):
    s = torch.softmax(x, 1)
    probe(a(s))
    probe(g(s, 3))
"""

LOADERS = (
    "from torch.utils.data import DataLoader\n\ndef f(ds):\n    l0 = DataLoader(ds)\n"
    + "".join(f"    l{i + 1} = l{i}\n" for i in range(11))
    + "".join(f"    probe(iter(l{i}))\n" for i in (11, 8, 5, 2))
)


def _alone(code: str) -> list[tuple[str, bool, bool]]:
    answers = []
    for i in range(len(probe_calls(code)[1])):
        ctx, calls = probe_calls(code)  # a fresh layer for each question
        answers.append(_answer(ctx, calls[i]))
    return answers


def _answer(ctx: Context, call: ast.Call) -> tuple[str, bool, bool]:
    arg = call.args[0]
    value = ctx.values.of(arg)
    inner = arg.args[0] if isinstance(arg, ast.Call) and arg.args else arg
    loader = ctx.values.loaders.iterator(arg, arg) is not None or (
        ctx.values.loaders.dataloader(inner, inner) is not None
    )
    return value.kind.name, value.probability is not None, loader


def _in_order(code: str, order: list[int]) -> list[tuple[str, bool, bool]]:
    ctx, calls = probe_calls(code)
    got = {i: _answer(ctx, calls[i]) for i in order}
    return [got[i] for i in range(len(calls))]


def test_the_cut_off_is_not_remembered_for_a_later_question() -> None:
    alone = _alone(CHAIN)
    # Near the start of the chain the probability is found; past the cut-off it is not.
    assert alone[-1][1] and not alone[0][1]
    n = len(alone)
    assert _in_order(CHAIN, list(range(n))) == alone  # deepest first
    assert _in_order(CHAIN, list(reversed(range(n)))) == alone  # shallowest first


def test_a_cycle_placeholder_is_not_remembered() -> None:
    alone = _alone(CYCLE)
    n = len(alone)
    for order in (list(range(n)), list(reversed(range(n))), [2, 0, 4, 1, 3]):
        assert _in_order(CYCLE, order) == alone


def test_dataloader_evidence_does_not_depend_on_order() -> None:
    alone = _alone(LOADERS)
    assert alone[-1][2] and not alone[0][2]
    n = len(alone)
    assert _in_order(LOADERS, list(range(n))) == alone
    assert _in_order(LOADERS, list(reversed(range(n)))) == alone
