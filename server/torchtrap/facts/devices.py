"""Is a device expression CUDA? The literal part, from one expression.

``"cuda:0"``, ``0`` (a device index), ``f"cuda:{rank}"``, ``torch.device("cuda")``,
``torch.cuda.current_device()``, and ``a if cond else b`` of those. A name,
``self.device`` or a parameter is a question of where the value comes from:
the value layer (:mod:`torchtrap.values.devices`) answers it and passes
its answer in as ``resolve``.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable

from torchtrap.facts.imports import ImportTable


class Cuda(enum.IntEnum):
    NO = 0  # not CUDA, or unknown
    MAYBE = 1  # "cuda" if torch.cuda.is_available() else "cpu", a parameter's default
    YES = 2


def _unknown(expr: ast.expr) -> Cuda:
    return Cuda.NO


def literal_cuda(
    expr: ast.expr, imports: ImportTable, resolve: Callable[[ast.expr], Cuda] = _unknown
) -> Cuda:
    """How certainly ``expr`` is a CUDA device; names and attributes go to
    ``resolve`` (by default: not known to be CUDA)."""
    if isinstance(expr, ast.Constant):
        value = expr.value
        if isinstance(value, str):
            return Cuda.YES if value.startswith("cuda") else Cuda.NO
        if isinstance(value, int) and not isinstance(value, bool):
            return Cuda.YES  # a device index: .to(0) is cuda:0
        return Cuda.NO
    if isinstance(expr, ast.JoinedStr):
        first = expr.values[0] if expr.values else None
        if isinstance(first, ast.Constant) and str(first.value).startswith("cuda"):
            return Cuda.YES
        return Cuda.NO
    if isinstance(expr, ast.IfExp):
        a = literal_cuda(expr.body, imports, resolve)
        b = literal_cuda(expr.orelse, imports, resolve)
        if a is Cuda.YES and b is Cuda.YES:
            return Cuda.YES
        return Cuda.MAYBE if max(a, b) > Cuda.NO else Cuda.NO
    if isinstance(expr, ast.Call):
        qual = imports.qualname(expr.func)
        if qual == "torch.device":
            arg = expr.args[0] if expr.args else _keyword(expr, "type")
            return literal_cuda(arg, imports, resolve) if arg is not None else Cuda.NO
        if qual == "torch.cuda.current_device":
            return Cuda.YES
        return Cuda.NO
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return resolve(expr)
    return Cuda.NO


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)
