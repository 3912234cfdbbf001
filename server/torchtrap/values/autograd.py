"""Autograd values: is this value a parameter, is it part of the autograd graph.

Evidence only: a value is *in the graph* when it is the output of calling
a module, or a tensor operation applied to a parameter, to a tensor created
with ``requires_grad=True``, or to another value in the graph, computed
with grad enabled. Anything else is unknown.
"""

from __future__ import annotations

import ast
import weakref
from typing import TYPE_CHECKING

from torchtrap.facts.autograd import PARAMETER_CLASSES, grad_off_context
from torchtrap.facts.index import enclosing_function, walk_scope
from torchtrap.facts.modules import is_eval_call
from torchtrap.facts.tensors import (
    PARAMETER_ONLY_ITERATORS,
    TENSOR_METHODS,
    TORCH_TENSOR_FUNCTIONS,
)
from torchtrap.values.kinds import parameter_loop, qualname_kind
from torchtrap.values.model import Kind

if TYPE_CHECKING:
    from torchtrap.values.layer import ValueLayer

# Methods that keep "does not require grad": `x.data.cuda()`, `batch.float()`.
KEEPS_NO_GRAD = frozenset(
    {"cuda", "cpu", "to", "float", "double", "half", "long", "int", "bool", "byte", "view"}
    | {"reshape", "unsqueeze", "squeeze", "contiguous", "clone", "permute", "transpose", "t"}
    | {"zero_", "fill_", "normal_", "uniform_"}
)
# Methods that make new tensors without grad: `memory.data.new(...)`.
NEW_TENSOR = frozenset({"new", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})
# Methods that cut a value out of the graph.
_DETACHING = frozenset({"detach", "item", "tolist", "numpy", "data"})
_MAX_DEPTH = 6
_BACKWARD_FUNCTIONS = frozenset(
    {"torch.autograd.backward", "torch.autograd.grad", "torch.autograd.functional.vjp"}
)


class AutogradFacts:
    """Per-module cache (``ctx.values.autograd``) on top of :class:`Values`."""

    def __init__(self, values: ValueLayer) -> None:
        # Weakly: the Values owns this, and a cycle would keep the tree alive.
        self._values = weakref.ref(values)
        self.tensors = values.tensors
        self.imports = values.imports
        self._in_graph: dict[tuple[int, int], bool] = {}

    def _holds(self, expr: ast.expr, at: ast.AST, kind: Kind) -> bool:
        values = self._values()
        return values is not None and values.of(expr, at).holds(kind)

    def under_no_grad(self, node: ast.AST) -> bool:
        return grad_off_context(node, self.imports) is not None

    def evaluating(self, node: ast.AST) -> bool:
        """``node`` runs where nothing trains: grad mode is off there, or its
        function switched a module to eval mode (``m.eval()``, ``m.train(False)``)
        earlier and has no backward (``.backward()``, ``torch.autograd.grad``).
        A message's consequence there is a wrong metric, not a wrong gradient."""
        if self.under_no_grad(node):
            return True
        function = enclosing_function(node)
        if function is None:
            return False
        line = getattr(node, "lineno", 0)
        evaluated = False
        for n in walk_scope(function):
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Attribute) and n.func.attr == "backward":
                return False
            if self.imports.qualname(n.func) in _BACKWARD_FUNCTIONS:
                return False
            if is_eval_call(n) and n.lineno < line:
                evaluated = True
        return evaluated

    def is_parameter(self, expr: ast.expr, at: ast.AST, every: bool = True, depth: int = 0) -> bool:
        """``module.weight``/``.bias``, ``nn.Parameter(...)`` (also through a
        name or ``self.attr``), a loop variable over ``.parameters()``.
        ``every=False``: on some path (``self.w`` an ``nn.Parameter`` in one
        method, something else in another), for a fix that must not assign
        a plain tensor to a parameter attribute."""
        if isinstance(expr, ast.Attribute) and expr.attr in ("weight", "bias"):
            return self._holds(expr.value, at, Kind.MODULE)
        if isinstance(expr, ast.Call):
            return self.imports.qualname(expr.func) in PARAMETER_CLASSES
        if depth > _MAX_DEPTH:
            return False  # `self.w = self.w`: a cycle is unknown
        combine = all if every else any
        if isinstance(expr, ast.Name):
            reach = self.tensors.reaching(expr.id, at)
            if reach is None or (every and not reach.complete):
                return False
            return combine(
                self._parameter_binding(b.value, b.loop_iter, b.path, b.stmt, every, depth)
                for b in reach.bindings
            )
        if isinstance(expr, ast.Attribute):
            values = self.tensors.values_of(expr, at)
            return bool(values) and combine(
                self.is_parameter(v, w, every, depth + 1) for v, w in values or ()
            )
        return False

    def _parameter_binding(
        self,
        value: ast.expr | None,
        loop_iter: ast.expr | None,
        path: tuple[int, ...],
        stmt: ast.AST,
        every: bool = True,
        depth: int = 0,
    ) -> bool:
        if value is not None:
            return self.is_parameter(value, stmt, every, depth + 1)
        if loop_iter is not None:
            return parameter_loop(loop_iter, path, PARAMETER_ONLY_ITERATORS) is True
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
        if isinstance(func, (ast.Name, ast.Attribute)) and (self._holds(func, at, Kind.MODULE)):
            return True  # a module's output
        qualname = self.imports.qualname(func)
        if qualname is not None:
            if qualname_kind(qualname) is not Kind.TENSOR:
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
                return self._holds(expr, at, Kind.TENSOR)
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

    def without_grad(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> bool:
        """Evidence that ``expr`` is a tensor that does not require grad
        (``x.data``, ``x.detach()``, ``torch.zeros(...)``, a batch of a
        default-collate DataLoader, and names bound to them)."""
        if depth > 4:
            return False
        while (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in KEEPS_NO_GRAD
        ):
            expr = expr.func.value
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            return True
        if isinstance(expr, ast.Call):
            func = expr.func
            if any(kw.arg == "requires_grad" for kw in expr.keywords):
                return False
            if isinstance(func, ast.Attribute) and func.attr in ("detach", *NEW_TENSOR):
                return True
            qualname = self.imports.qualname(func)
            if qualname is not None and qualname.startswith("torch."):
                name = qualname[len("torch.") :]
                return name in TORCH_TENSOR_FUNCTIONS and name not in ("clone",)
            return False
        if isinstance(expr, ast.Name):
            reach = self.tensors.reaching(expr.id, at)
            if reach is None or not reach.complete:
                return False
            for binding in reach.bindings:
                if binding.loop_iter is not None:
                    if not binding.path or not self._loader_batches(binding.loop_iter, at):
                        return False
                elif binding.value is None or not self.without_grad(
                    binding.value, binding.stmt, depth + 1
                ):
                    return False
            return True
        return False

    def _loader_batches(self, iterable: ast.expr, at: ast.AST) -> bool:
        """``for x, y in loader`` / ``enumerate(loader)``: default-collated
        batches, which never require grad."""
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "enumerate"
            and iterable.args
        ):
            iterable = iterable.args[0]
        values = self._values()
        evidence = values.dataloader(iterable, at) if values is not None else None
        return (
            evidence is not None
            and bool(evidence.calls)
            and all(d.argument("collate_fn") is None and not d.has_splat for d in evidence.calls)
        )
