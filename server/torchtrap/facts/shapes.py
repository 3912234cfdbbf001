"""An expression's shape for comparing two expressions.

``ast.dump`` would do, but it formats through a recursive closure: every
call leaves a reference cycle that only a garbage collection frees, between
two keystrokes in the editor (``tests/core/test_no_garbage_cycles.py``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass


def shape(node: ast.AST) -> str:
    """``ast.dump(node)``: its fields, not its positions."""
    return _shape(node)


def _shape(value: object) -> str:
    if isinstance(value, ast.AST):
        fields = ", ".join(f"{name}={_shape(getattr(value, name, None))}" for name in value._fields)
        return f"{type(value).__name__}({fields})"
    if isinstance(value, list):
        return "[" + ", ".join(_shape(item) for item in value) + "]"
    return repr(value)


@dataclass(frozen=True)
class NormalisingSum:
    """The parts of ``y / S``, ``S`` the sum of ``y`` kept for broadcasting."""

    call: ast.Call  # the sum: ``y.sum(d)`` or ``torch.sum(y, d)``
    function_form: bool  # ``torch.sum(y, d)``: the caller checks what it names
    summed: ast.expr  # ``d``
    kept: ast.expr  # the dimension kept: ``d`` with ``keepdim``, ``e`` of ``.unsqueeze(e)``


def normalising_sum(expr: ast.BinOp) -> NormalisingSum | None:
    """``y / S``, with ``S`` the sum of ``y`` over one dimension kept for
    broadcasting: ``y.sum(d, keepdim=True)``, ``torch.sum(y, d,
    keepdim=True)``, ``y.sum(d).unsqueeze(e)``, ``torch.sum(y, d).unsqueeze(e)``.
    The quotient is a normalisation only when ``d`` and ``e`` are the same
    dimension: the caller judges that (and what the function form names).
    None for any other division."""
    if not isinstance(expr.op, ast.Div):
        return None
    right = expr.right
    kept: ast.expr | None = None
    if (
        isinstance(right, ast.Call)
        and isinstance(right.func, ast.Attribute)
        and right.func.attr == "unsqueeze"
        and len(right.args) + len(right.keywords) == 1
    ):
        kept = right.args[0] if right.args else right.keywords[0].value
        right = right.func.value
    if not (
        isinstance(right, ast.Call)
        and isinstance(right.func, ast.Attribute)
        and right.func.attr == "sum"
    ):
        return None
    function_form = (
        isinstance(right.func.value, ast.Name)
        and bool(right.args)
        and (shape(right.args[0]) == shape(expr.left))
    )
    positional = right.args[1:] if function_form else right.args
    if not function_form and shape(right.func.value) != shape(expr.left):
        return None
    dims = [*positional[:1], *(k.value for k in right.keywords if k.arg == "dim")]
    keepdim = next((k.value for k in right.keywords if k.arg == "keepdim"), None)
    if len(dims) != 1 or any(isinstance(a, ast.Starred) for a in positional):
        return None
    if kept is None:
        if not (isinstance(keepdim, ast.Constant) and keepdim.value is True):
            return None
        return NormalisingSum(right, function_form, dims[0], dims[0])
    if keepdim is not None:
        return None  # kept twice: `unsqueeze` then adds a new dimension
    return NormalisingSum(right, function_form, dims[0], kept)


def same_dimension(a: ast.expr, b: ast.expr) -> bool:
    """Two dimension arguments spelled the same (``1`` and ``1``, ``dim`` and ``dim``)."""
    return shape(a) == shape(b)
