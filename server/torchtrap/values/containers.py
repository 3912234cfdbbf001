"""A list filled by ``append``, read by position: one flow step of the value layer.

``arr = []; arr.append(loader); arr.append(model); arr[0]`` holds ``loader``:
:func:`appended` gives the items in the order they were appended, for both
:meth:`torchtrap.values.Values.of` and the DataLoader evidence of
:mod:`torchtrap.values.loaders`.

Only when the order is certain: every ``append`` is a statement of the same
block as ``arr = []`` (not in a branch or a loop), and the name is used for
nothing else in the module than those appends and reads by subscript (no
``insert``/``extend``/``pop``, no other binding, not passed to a function
or a closure that could change it). Otherwise None: the caller falls back to
"any item" (every item must agree) or unknown.
"""

from __future__ import annotations

import ast

from torchtrap.facts.index import NodeIndex, enclosing_scope, parent
from torchtrap.facts.tensors import TensorFacts


def empty_list(value: ast.expr | None) -> bool:
    """``[]`` or ``list()``."""
    if isinstance(value, ast.List):
        return not value.elts
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "list"
        and not value.args
        and not value.keywords
    )


def list_items(
    container: ast.expr, at: ast.AST, tensors: TensorFacts, index: NodeIndex
) -> list[tuple[ast.expr, ast.stmt]] | None:
    """The appended items of ``container`` (a name whose one binding that
    reaches ``at`` is ``[]``), in order; None when not such a list."""
    if not isinstance(container, ast.Name):
        return None
    reach = tensors.reaching(container.id, at)
    if reach is None or not reach.complete or len(reach.bindings) != 1:
        return None
    binding = reach.bindings[0]
    if not empty_list(binding.value):
        return None
    return appended_before(container.id, binding.stmt, at, tensors, index)


def appended_before(
    name: str, binding: ast.AST, at: ast.AST, tensors: TensorFacts, index: NodeIndex
) -> list[tuple[ast.expr, ast.stmt]] | None:
    """:func:`appended`, the module-wide scan done once per list (kept on
    the module's ``TensorFacts``), then the items appended before ``at``."""
    cache: dict[int, list[tuple[ast.expr, ast.stmt]] | None] = tensors.__dict__.setdefault(
        "_tt_appended", {}
    )
    key = id(binding)
    if key not in cache:
        cache[key] = appended(name, binding, None, index)
    items = cache[key]
    if items is None:
        return None
    use = _pos(at)
    return [item for item in items if _pos(item[1]) < use]


def appended(
    name: str, binding: ast.AST, use: ast.AST | None, index: NodeIndex
) -> list[tuple[ast.expr, ast.stmt]] | None:
    """``(item, its append statement)`` in order, for the list bound to
    ``name`` by ``binding`` (``name = []``) as seen at ``use`` (None: every
    append); None when the order is not certain."""
    if not (
        isinstance(binding, ast.Assign)
        and len(binding.targets) == 1
        and isinstance(binding.targets[0], ast.Name)
        and empty_list(binding.value)
    ):
        return None
    block = parent(binding)
    body = _block_of(block, binding)
    if body is None:
        return None
    scope = enclosing_scope(binding)
    use_pos = _pos(use) if use is not None else (1 << 30, 0)
    items: list[tuple[ast.expr, ast.stmt]] = []
    for node in index.names(name):
        if node is binding.targets[0]:
            continue
        if enclosing_scope(node) is not scope:
            return None  # a closure or another function's name: not followed
        owner = parent(node)
        if isinstance(owner, ast.Subscript) and owner.value is node:
            if isinstance(owner.ctx, ast.Load):
                continue  # a read
            return None  # arr[i] = x
        call = parent(owner) if isinstance(owner, ast.Attribute) else None
        stmt = parent(call) if call is not None else None
        if not (
            isinstance(owner, ast.Attribute)
            and owner.attr == "append"
            and isinstance(call, ast.Call)
            and call.func is owner
            and len(call.args) == 1
            and not isinstance(call.args[0], ast.Starred)
            and not call.keywords
            and isinstance(stmt, ast.Expr)
            and any(s is stmt for s in body)
            and _pos(stmt) > _pos(binding)
        ):
            return None  # any other use may change the list
        if _pos(stmt) < use_pos:
            items.append((call.args[0], stmt))
    items.sort(key=lambda item: _pos(item[1]))
    return items


def constant_index(key: ast.expr) -> int | None:
    """``0``, ``-1``: a constant integer subscript."""
    sign = 1
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
        key, sign = key.operand, -1  # arr[-1]
    if isinstance(key, ast.Constant) and type(key.value) is int:
        return sign * key.value
    return None


def item_at(
    items: list[tuple[ast.expr, ast.stmt]], key: ast.expr
) -> tuple[ast.expr, ast.stmt] | None:
    """The item ``arr[key]`` reads for a constant integer ``key``."""
    position = constant_index(key)
    if position is not None and -len(items) <= position < len(items):
        return items[position]
    return None


def _block_of(block: ast.AST | None, stmt: ast.AST) -> list[ast.stmt] | None:
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(block, field, None)
        if isinstance(stmts, list) and any(s is stmt for s in stmts):
            return stmts
    return None


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
