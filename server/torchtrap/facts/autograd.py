"""Autograd facts: is this code under ``torch.no_grad()``, is this value a
parameter, is it part of the autograd graph.

Evidence only, from the one module's ``ast``: a value is *in the graph* when
it is the output of calling a module, or a tensor operation applied to a
parameter, to a tensor created with ``requires_grad=True``, or to another
value in the graph, computed with grad enabled. Anything else is unknown.
"""

from __future__ import annotations

import ast

from torchtrap.facts.imports import ImportTable
from torchtrap.facts.index import ancestors
from torchtrap.facts.tensors import TENSOR_METHODS, Kind, TensorFacts

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
# Methods that cut a value out of the graph.
_DETACHING = frozenset({"detach", "item", "tolist", "numpy", "data"})
_PARAMETER_LOOPS = {"parameters": (), "named_parameters": (1,)}
_MAX_DEPTH = 6


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


class AutogradFacts:
    """Per-module cache on top of :class:`TensorFacts`."""

    def __init__(self, tensors: TensorFacts) -> None:
        self.tensors = tensors
        self.imports = tensors.imports
        self._in_graph: dict[tuple[int, int], bool] = {}

    def under_no_grad(self, node: ast.AST) -> bool:
        return grad_off_context(node, self.imports) is not None

    def is_parameter(self, expr: ast.expr, at: ast.AST) -> bool:
        """``module.weight``/``.bias``, ``nn.Parameter(...)`` (also through a
        name or ``self.attr``), a loop variable over ``.parameters()``."""
        if isinstance(expr, ast.Attribute) and expr.attr in ("weight", "bias"):
            return self.tensors.kind_of(expr.value, at) is Kind.MODULE
        if isinstance(expr, ast.Call):
            return self.imports.qualname(expr.func) in PARAMETER_CLASSES
        if isinstance(expr, ast.Name):
            reach = self.tensors.reaching(expr.id, at)
            if reach is None or not reach.complete:
                return False
            return all(
                self._parameter_binding(b.value, b.loop_iter, b.path, b.stmt)
                for b in reach.bindings
            )
        if isinstance(expr, ast.Attribute):
            values = self.tensors.values_of(expr, at)
            return bool(values) and all(self.is_parameter(v, w) for v, w in values or ())
        return False

    def _parameter_binding(
        self,
        value: ast.expr | None,
        loop_iter: ast.expr | None,
        path: tuple[int, ...],
        stmt: ast.AST,
    ) -> bool:
        if value is not None:
            return self.is_parameter(value, stmt)
        if (
            isinstance(loop_iter, ast.Call)
            and isinstance(loop_iter.func, ast.Attribute)
            and loop_iter.func.attr in _PARAMETER_LOOPS
        ):
            return _PARAMETER_LOOPS[loop_iter.func.attr] == path
        return False

    def in_graph(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> bool:
        """Is ``expr`` evidently a non-leaf value autograd recorded (an
        activation, a module's output, a loss)?"""
        if depth > _MAX_DEPTH:
            return False
        key = (id(expr), id(at))
        if key not in self._in_graph:
            self._in_graph[key] = False  # cycle guard
            self._in_graph[key] = self._compute_in_graph(expr, at, depth)
        return self._in_graph[key]

    def _compute_in_graph(self, expr: ast.expr, at: ast.AST, depth: int) -> bool:
        if isinstance(expr, ast.Name):
            reach = self.tensors.reaching(expr.id, at)
            if reach is None or not reach.complete:
                return False
            return all(
                b.value is not None
                and not b.path
                and not self.under_no_grad(b.stmt)
                and self._produces_graph_value(b.value, b.stmt, depth)
                for b in reach.bindings
            )
        return False

    def _produces_graph_value(self, value: ast.expr, at: ast.AST, depth: int) -> bool:
        if isinstance(value, ast.BinOp):
            return any(self._graph_input(side, at, depth) for side in (value.left, value.right))
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, (ast.Name, ast.Attribute)) and (
            self.tensors.kind_of(func, at) is Kind.MODULE
        ):
            return True  # a module's output
        qualname = self.imports.qualname(func)
        if qualname is not None:
            if self.tensors.qualname_kind(qualname) is not Kind.TENSOR:
                return False
            if qualname in PARAMETER_CLASSES:
                return False  # a leaf
            return any(self._graph_input(arg, at, depth) for arg in value.args)
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_METHODS:
            if func.attr in _DETACHING:
                return False
            return self._graph_input(func.value, at, depth)
        return False

    def _graph_input(self, expr: ast.expr, at: ast.AST, depth: int) -> bool:
        """A value whose operations autograd records: in the graph, a
        parameter, or a tensor created with ``requires_grad=True``."""
        if depth > _MAX_DEPTH:
            return False
        if self.is_parameter(expr, at):
            return True
        if isinstance(expr, ast.Call):
            if any(
                kw.arg == "requires_grad"
                and isinstance(kw.value, ast.Constant)
                and kw.value.value is True
                for kw in expr.keywords
            ):
                return self.tensors.kind_of(expr, at) is Kind.TENSOR
            return self._produces_graph_value(expr, at, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._produces_graph_value(expr, at, depth + 1)
        if isinstance(expr, ast.Name):
            reach = self.tensors.reaching(expr.id, at)
            return (
                reach is not None
                and reach.complete
                and all(
                    b.value is not None
                    and not b.path
                    and not self.under_no_grad(b.stmt)
                    and self._graph_input(b.value, b.stmt, depth + 1)
                    for b in reach.bindings
                )
            )
        return False


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
