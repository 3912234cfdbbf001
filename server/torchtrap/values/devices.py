"""Is a device expression CUDA, following where its value comes from?

On top of the literal judgement (:func:`torchtrap.facts.devices.literal_cuda`):
a name assigned in the function or the module, ``self.device`` assigned in
a method of the class, a parameter's default (MAYBE at most: the caller may
pass another), and a module-level name imported from another file of the
project (``from config import device``, config.py:
``device = torch.device("cuda" if ok else "cpu")``: MAYBE). ``args.device``,
``cfg.device`` and unresolved imports stay unknown (NO).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchtrap.facts.devices import Cuda, literal_cuda
from torchtrap.facts.index import enclosing_function

if TYPE_CHECKING:
    from torchtrap.values.layer import ValueLayer

_MAX_DEPTH = 4


def device_cuda(values: ValueLayer, expr: ast.expr, at: ast.AST, depth: int = 0) -> Cuda:
    """How certainly ``expr`` (seen at ``at``) is a CUDA device."""
    if depth > _MAX_DEPTH:
        return Cuda.NO
    return literal_cuda(expr, values.imports, lambda e: _flow(values, e, at, depth))


def _flow(values: ValueLayer, expr: ast.expr, at: ast.AST, depth: int) -> Cuda:
    if isinstance(expr, ast.Attribute) and not (
        isinstance(expr.value, ast.Name) and expr.value.id == "self"
    ):
        return Cuda.NO  # args.device, cfg.device: unknown
    if isinstance(expr, ast.Name) and _is_parameter(values, expr):
        return _parameter_default(values, expr, depth)
    bound = values.loaders.bound_values(expr, at, depth)
    if isinstance(bound, list) and bound:
        # The bindings that reach the use (self.device in any method): CUDA
        # when every one is, MAYBE when some may be.
        found = [device_cuda(values, v, where, depth + 1) for v, where in bound]
        if all(f is Cuda.YES for f in found):
            return Cuda.YES
        return Cuda.MAYBE if any(f > Cuda.NO for f in found) else Cuda.NO
    if isinstance(expr, ast.Name):
        imported = _imported(values, expr)
        if imported is not Cuda.NO:
            return imported
        return _parameter_default(values, expr, depth)
    return Cuda.NO


def _imported(values: ValueLayer, name: ast.Name) -> Cuda:
    """A module-level device constant of another project file."""
    if name.id not in values.imports.names:
        return Cuda.NO
    project = values.project  # may raise NeedsProject: the engine asks again
    if project is None:
        return Cuda.NO
    ref = project.ref(values.path, name.id)
    found = project.constant(ref) if ref is not None else None
    if found == "cuda":
        return Cuda.YES
    return Cuda.MAYBE if found == "maybe-cuda" else Cuda.NO


def _is_parameter(values: ValueLayer, name: ast.Name) -> bool:
    """A parameter of the enclosing function that the function never
    reassigns (its default, not its callers, is what the layer reads here)."""
    fn = enclosing_function(name)
    if fn is None:
        return False
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if name.id not in names:
        return False
    bindings = values.tensors.table(fn).bindings.get(name.id, [])
    return all(b.stmt is fn for b in bindings)


def _parameter_default(values: ValueLayer, name: ast.Name, depth: int) -> Cuda:
    """A parameter's default may be overridden by the caller: MAYBE at most."""
    fn = enclosing_function(name)
    if fn is None:
        return Cuda.NO
    args = fn.args
    positional = args.posonlyargs + args.args
    with_default = positional[len(positional) - len(args.defaults) :]
    defaults: dict[str, ast.expr] = {
        a.arg: d for a, d in zip(with_default, args.defaults, strict=True)
    }
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is not None:
            defaults[arg.arg] = default
    default = defaults.get(name.id)
    if default is None:
        return Cuda.NO
    found = device_cuda(values, default, default, depth + 1)
    return Cuda.MAYBE if found > Cuda.NO else Cuda.NO
