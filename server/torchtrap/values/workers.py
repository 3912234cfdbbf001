"""Where a script starts DataLoader workers (TT106), on the value layer.

Which DataLoader an iterated expression is comes from
:meth:`torchtrap.values.Values.dataloader`: a name bound to one, an item of
a dict or list of them (``arr.append(loader); arr[0].__iter__()``), a local
function's return, ``self.loader``... What a statement iterates is syntax
(:func:`torchtrap.facts.workers.iterated_exprs`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.datasets import self_stores
from torchtrap.facts.imports import dotted_name
from torchtrap.facts.index import walk
from torchtrap.facts.modules import holds_no_state, holds_only_buffers
from torchtrap.facts.workers import (
    CONTAINER_METHODS,
    LOADERS,
    call_name,
    is_cuda_expression,
    is_data_source,
    iterated_exprs,
    local_function,
    materialized,
    target_used,
    walk_same_scope,
)
from torchtrap.values.model import Kind

if TYPE_CHECKING:
    from torchtrap.values.evaluate import Values

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def model_holding(info: ClassInfo, values: Values) -> str | None:
    """How instances of ``info`` hold a model (what pickling one into a
    worker copies, TT104): "an nn.Module" when the class is one, "holds
    `self.model`, an nn.Module" when a method stores one, "holds the CUDA
    tensor `self.x`"; None without evidence (never from a name)."""
    facts = values.facts
    if facts.classes.is_module(info):
        return "an nn.Module"
    for cls in facts.classes.lineage(info):
        for fn in cls.methods.values():
            for attr, _stmt, _target, value in self_stores(fn):
                if value is None:
                    continue
                held = values.of(value)
                if held.holds(Kind.MODULE) and not holds_no_weights(value, values):
                    return f"holds `self.{attr}`, an nn.Module"
                if held.holds(Kind.TENSOR) and is_cuda_expression(value):
                    return f"holds the CUDA tensor `self.{attr}`"
    return None


def holds_no_weights(value: ast.expr, values: Values) -> bool:
    """A module value that copies no weights when pickled: stateless layers
    and transforms (``holds_no_state``), or ``LogMel()`` of a class of this
    file or of the project that holds only constant buffers
    (``holds_only_buffers``, ``ClassFact.buffers_only``)."""
    if isinstance(value, ast.IfExp):
        return holds_no_weights(value.body, values) and holds_no_weights(value.orelse, values)
    if holds_no_state(value, values.facts.imports.qualname):
        return True
    if not isinstance(value, ast.Call):
        return False
    info = values.facts.classes.class_of_call(value)
    if info is not None:
        return holds_only_buffers(info.node, values.facts.imports.qualname)
    dotted = dotted_name(value.func)
    project = values.project if dotted is not None else None
    ref = project.ref(values.path, dotted) if project is not None and dotted else None
    found = project.class_fact(ref) if project is not None and ref is not None else None
    return found is not None and found[1].buffers_only


def worker_loader(
    values: Values, expr: ast.expr, at: ast.AST | None = None
) -> DataLoaderCall | None:
    """The DataLoader with (maybe) workers ``expr`` is: every DataLoader it
    may be has workers (one that may be a loader without workers is "may"
    evidence: None); a literal ``num_workers > 0`` first."""
    found = values.dataloader(expr, at)
    if found is None or not found.calls:
        return None
    if not all(call.may_have_workers for call in found.calls):
        return None
    return next((c for c in found.calls if c.workers is Workers.SOME), found.calls[0])


def iterated_loaders(node: ast.AST, values: Values) -> Iterator[tuple[ast.expr, DataLoaderCall]]:
    """``(expression, loader)`` for each DataLoader with (maybe) workers that
    ``node`` iterates in its own scope."""
    for sub in walk_same_scope(node):
        for expr in iterated_exprs(sub):
            loader = worker_loader(values, expr)
            if loader is not None:
                yield expr, loader


def starts_workers(
    node: ast.AST, values: Values, depth: int = 0, seen: set[int] | None = None
) -> tuple[ast.expr, DataLoaderCall] | None:
    """Where running ``node`` starts DataLoader workers: ``(site, loader)``,
    the site being in ``node``'s own scope (the iterated expression, or the
    call of a module-level function that iterates it, three calls deep)."""
    # The first start in source order: the finding's site is where the user looks.
    found = min(iterated_loaders(node, values), key=lambda f: _position(f[0]), default=None)
    if depth >= 3:
        return found
    seen = seen if seen is not None else set()
    calls = sorted(
        (sub for sub in walk_same_scope(node) if isinstance(sub, ast.Call)), key=_position
    )
    for sub in calls:
        if found is not None and _position(found[0]) <= _position(sub):
            return found
        fn = local_function(sub, values.tree)
        if fn is None or id(fn) in seen:
            continue
        passed = _passed_loader(sub, fn, values)
        if passed is not None:
            return sub, passed
        seen.add(id(fn))
        for stmt in fn.body:
            inner = starts_workers(stmt, values, depth + 1, seen)
            if inner is not None:
                return sub, inner[1]
    return found


def _passed_loader(call: ast.Call, fn: FunctionNode, values: Values) -> DataLoaderCall | None:
    """``train(loader)`` where ``train`` iterates that parameter."""
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    given: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    loaders = {}
    for param, arg in given.items():
        loader = worker_loader(values, arg)
        if loader is not None:
            loaders[param] = loader
    if not loaders:
        return None
    for node in walk(fn):
        for expr in iterated_exprs(node):
            if isinstance(expr, ast.Name) and expr.id in loaders:
                return loaders[expr.id]
    return None


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


# -- what a dataset's worker methods iterate (TT105), keep (TT107) ---------------


def stream_sources(
    values: Values, methods: list[FunctionNode], stores: dict[str, list[ast.expr]]
) -> list[ast.expr]:
    """What ``methods`` (a dataset's worker methods) iterate that is
    evidently a whole finite stream: a source call, a ``with open(...) as f``
    file, a local or ``self.x`` bound to one. ``stores`` maps ``self``
    attributes to the values assigned to them."""
    found: list[ast.expr] = []
    for fn in methods:
        me = (fn.args.posonlyargs + fn.args.args)[:1]
        self_name = me[0].arg if me else None
        opened = {
            item.optional_vars.id
            for node in walk(fn)
            if isinstance(node, (ast.With, ast.AsyncWith))
            for item in node.items
            if isinstance(item.optional_vars, ast.Name) and call_name(item.context_expr) == "open"
        }
        for node in walk(fn):
            if isinstance(node, (ast.For, ast.AsyncFor)) and not target_used(node):
                continue  # `for _ in range(5): yield queue.get()`: a counter, not the data
            for expr in iterated_exprs(node):
                if is_data_source(expr):
                    found.append(expr)
                elif isinstance(expr, ast.Name):
                    value = values.assigned(expr, fn)
                    if expr.id in opened or (value is not None and is_data_source(value)):
                        found.append(expr)
                elif (
                    isinstance(expr, ast.Attribute)
                    and isinstance(expr.value, ast.Name)
                    and expr.value.id == self_name
                ):
                    stored = stores.get(expr.attr, [])
                    if stored and all(materialized(v) for v in stored):
                        found.append(expr)
    return found


def python_container(values: Values, value: ast.expr, fn: FunctionNode) -> str | None:
    """``json.load()`` / ``.tolist()`` ... when ``value`` is (a part of, or
    a comprehension over) what such a call returned: the Python container
    a dataset would keep. One local name is followed (``data = json.load(f);
    self.items = data["images"]``)."""
    for _ in range(3):
        while isinstance(value, ast.Subscript):
            value = value.value
        if isinstance(value, (ast.ListComp, ast.DictComp)) and value.generators:
            value = value.generators[0].iter
            continue
        if isinstance(value, ast.Call):
            qual = values.imports.qualname(value.func)
            if qual in LOADERS:
                return f"{qual}()"
            if isinstance(value.func, ast.Attribute) and value.func.attr in CONTAINER_METHODS:
                return f".{value.func.attr}()"
            return None
        if isinstance(value, ast.Name):
            found = values.assigned(value, fn)
            if found is None:
                return None
            value = found
            continue
        return None
    return None
