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

from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.index import walk
from torchtrap.facts.workers import iterated_exprs, local_function, walk_same_scope

if TYPE_CHECKING:
    from torchtrap.values.evaluate import Values

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


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
