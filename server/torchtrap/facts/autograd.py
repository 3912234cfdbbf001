"""Autograd syntax: is this code under ``torch.no_grad()``, which classes
make parameters, what a ``torch.distributions`` class's ``probs`` is.
Whether a value is a parameter or in the graph is a value question:
:mod:`torchtrap.values.autograd`."""

from __future__ import annotations

import ast

from torchtrap.facts.imports import ImportTable
from torchtrap.facts.index import ancestors

GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def is_grad_off(expr: ast.expr, imports: ImportTable) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()``, ``@torch.no_grad``,
    ``torch.set_grad_enabled(False)``."""
    func = expr.func if isinstance(expr, ast.Call) else expr
    qualname = imports.qualname(func)
    if qualname in GRAD_OFF:
        if isinstance(expr, ast.Call) and expr.args:
            first = expr.args[0]  # inference_mode(False) turns it back on
            return not (isinstance(first, ast.Constant) and first.value is False)
        return True
    if qualname in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"):
        return (
            isinstance(expr, ast.Call)
            and bool(expr.args)
            and isinstance(expr.args[0], ast.Constant)
            and expr.args[0].value is False
        )
    return False


def grad_off_context(node: ast.AST, imports: ImportTable) -> ast.AST | None:
    """The ``with torch.no_grad():`` statement, or the function decorated with
    it, that ``node`` runs in; None when grad mode is not switched off there.
    A nested function or lambda runs later, possibly outside the block."""
    for anc in ancestors(node):
        if isinstance(anc, (ast.With, ast.AsyncWith)):
            if any(is_grad_off(item.context_expr, imports) for item in anc.items):
                return anc
        elif isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(is_grad_off(d, imports) for d in anc.decorator_list):
                return anc
            return None
        elif isinstance(anc, (ast.Lambda, ast.ClassDef)):
            return None
    return None


# torch.distributions with `probs`/`logits`: what `.probs` is a function of
# the logits ("softmax"/"sigmoid"), and the position of `probs` among the
# constructor's positional parameters.
_DISTRIBUTIONS: dict[str, tuple[str, int]] = {
    "Categorical": ("softmax", 0),
    "OneHotCategorical": ("softmax", 0),
    "Multinomial": ("softmax", 1),
    "RelaxedOneHotCategorical": ("softmax", 1),
    "Bernoulli": ("sigmoid", 0),
    "Geometric": ("sigmoid", 0),
    "Binomial": ("sigmoid", 1),
    "NegativeBinomial": ("sigmoid", 1),
    "RelaxedBernoulli": ("sigmoid", 1),
}


def distribution_kind(qualname: str | None) -> tuple[str, int] | None:
    """For a ``torch.distributions`` class (``torch.distributions.Categorical``
    or ``torch.distributions.categorical.Categorical``): ("softmax" or
    "sigmoid", the positional index of ``probs``). Built from ``logits=``,
    its ``.probs`` is that function of them (zero where they are very
    negative); built from ``probs``, it is what the caller passed."""
    if not qualname or not qualname.startswith("torch.distributions."):
        return None
    return _DISTRIBUTIONS.get(qualname.rpartition(".")[2])
