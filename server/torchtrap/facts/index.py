"""One pass over the tree that every rule shares: nodes by type, parents.

Walking an ``ast`` tree in Python costs about as much as parsing it in C, so
the engine walks once and rules look nodes up here instead of walking again.
"""

from __future__ import annotations

import ast
import weakref
from collections import deque
from collections.abc import Iterator
from itertools import chain
from typing import TypeVar

N = TypeVar("N", bound=ast.AST)

SCOPE_TYPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_PARENT = "_tt_parent"


# Load/Store contexts and operators are leaves no rule looks at, and CPython
# shares one instance of each across the tree, so they must not get a parent.
# Skipping them also skips a third of all nodes.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
# Fields that hold identifiers, numbers or flags, never a node: not worth a
# getattr and a type check on every node. (`name` is a node in 3.12's
# TypeAlias, so it is skipped only where it is a string.)
_SCALAR_FIELDS = frozenset(
    {"id", "attr", "arg", "module", "level", "kind", "type_comment", "conversion", "is_async"}
    | {"simple"}
)
_NODE_NAMED = (getattr(ast, "TypeAlias", None),)


def _child_fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    skip = _LEAF_FIELDS | _SCALAR_FIELDS
    if node_type not in _NODE_NAMED:
        skip |= {"name"}
    if node_type is ast.Constant:
        skip |= {"value"}  # a Python constant, never a node
    return tuple(f for f in reversed(node_type._fields) if f not in skip)


# Shared by every index: a node type's fields never change (per file it cost
# 25 lookups of `_fields` per node type, 1.5% of a lint).
_FIELDS_OF: dict[type[ast.AST], tuple[str, ...]] = {}


# Lists whose items may be something other than a node (None for a missing
# default or a `**` in a dict, identifiers): their items are type-checked.
# Every other list holds nodes only, so its items get their parent link in a
# tight loop and go onto the stack in one `extend`.
_MIXED_LISTS = frozenset(
    {
        (ast.arguments, "kw_defaults"),
        (ast.Dict, "keys"),
        (ast.Global, "names"),
        (ast.Nonlocal, "names"),
        (getattr(ast, "MatchClass", ast.AST), "kwd_attrs"),
    }
)
# Per node type: (field, may hold non-nodes) for the fields that can hold a node.
_PLAN_OF: dict[type[ast.AST], tuple[tuple[str, bool], ...]] = {}


def _plan(node_type: type[ast.AST]) -> tuple[tuple[str, bool], ...]:
    fields = _FIELDS_OF.get(node_type)
    if fields is None:
        fields = _FIELDS_OF[node_type] = _child_fields(node_type)
    plan = _PLAN_OF[node_type] = tuple((f, (node_type, f) in _MIXED_LISTS) for f in fields)
    return plan


class NodeIndex:
    def __init__(self, tree: ast.Module) -> None:
        by_type: dict[type, list[ast.AST]] = {}
        # Iterative pre-order: deep expressions (long `a + b + ...`) must not
        # hit the recursion limit.
        stack: list[ast.AST] = [tree]
        pop, push, extend = stack.pop, stack.append, stack.extend
        plans = _PLAN_OF
        node_class = ast.AST
        make_ref = weakref.ref
        while stack:
            node = pop()
            node_type = node.__class__
            found = by_type.get(node_type)
            if found is None:
                by_type[node_type] = [node]
            else:
                found.append(node)
            plan = plans.get(node_type)
            if plan is None:
                plan = _plan(node_type)
            if not plan:  # names, constants: no child can be a node
                continue
            # A weak parent link: with strong links every tree is a web of
            # cycles that only a full garbage collection frees, which cost more
            # than the rules themselves on large trees. Made at the first
            # child: many nodes have none.
            ref: weakref.ref[ast.AST] | None = None
            # Push in reverse so that pop() yields children in source order.
            for name, mixed in plan:
                value = getattr(node, name, None)
                if value is None:
                    continue
                if value.__class__ is list:
                    if not value:
                        continue
                    if ref is None:
                        ref = make_ref(node)
                    if not mixed:
                        try:
                            for item in value:
                                item._tt_parent = ref
                        except AttributeError:  # a list of something else after all
                            mixed = True
                        else:
                            extend(reversed(value))
                            continue
                    for item in reversed(value):
                        if isinstance(item, node_class):
                            item._tt_parent = ref  # type: ignore[attr-defined]
                            push(item)
                elif isinstance(value, node_class):
                    if ref is None:
                        ref = make_ref(node)
                    value._tt_parent = ref  # type: ignore[attr-defined]
                    push(value)
        self._by_type = by_type
        self.tree = tree
        self._names: dict[str, list[ast.Name]] | None = None
        self._attributes: dict[str, list[ast.Attribute]] | None = None

    def of(self, node_type: type[N]) -> list[N]:
        """Every node of exactly this type, in source order."""
        return self._by_type.get(node_type, [])  # type: ignore[return-value]

    def names(self, name: str) -> list[ast.Name]:
        """Every ``ast.Name`` spelled ``name``, in source order. Grouped once
        per module: call sites and later reads are asked about per function,
        and a scan of every name per question made a 5,000-line lint 20%
        slower."""
        if self._names is None:
            self._names = _grouped(self.of(ast.Name), "id")
        return self._names.get(name, [])

    def attributes(self, attr: str) -> list[ast.Attribute]:
        """Every ``ast.Attribute`` ``<x>.attr``, in source order (grouped once)."""
        if self._attributes is None:
            self._attributes = _grouped(self.of(ast.Attribute), "attr")
        return self._attributes.get(attr, [])

    def of_types(self, *types: type[ast.AST]) -> Iterator[ast.AST]:
        for node_type in types:
            yield from self._by_type.get(node_type, [])


def _grouped(nodes: list[N], field: str) -> dict[str, list[N]]:
    """``nodes`` by the string in ``field``, each group in source order."""
    groups: dict[str, list[N]] = {}
    for node in nodes:
        groups.setdefault(getattr(node, field), []).append(node)
    return groups


def parent(node: ast.AST) -> ast.AST | None:
    ref = getattr(node, _PARENT, None)
    return ref() if ref is not None else None


def ancestors(node: ast.AST) -> Iterator[ast.AST]:
    current = parent(node)
    while current is not None:
        yield current
        current = parent(current)


def enclosing_scope(node: ast.AST) -> ast.AST:
    """The function, lambda, class or module whose names ``node`` sees first."""
    for anc in ancestors(node):
        if isinstance(anc, SCOPE_TYPES):
            return anc
    return node


def enclosing_function(node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for anc in ancestors(node):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return anc
    return None


def enclosing_statement(node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parent(current)
    return current


# The same fields in source order, for the breadth-first walk.
_FORWARD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _forward_fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    fields = _FORWARD_FIELDS.get(node_type)
    if fields is None:
        fields = _FORWARD_FIELDS[node_type] = tuple(reversed(_child_fields(node_type)))
    return fields


def _children(node: ast.AST) -> list[ast.AST]:
    fields = _forward_fields(type(node))
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            out.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


# Functions and classes walked more than once keep their descendants.
_KEPT_WALKS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_WALKED = "_tt_walked"
_WALK_NODES = "_tt_walk_nodes"


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` (``node`` and its descendants, breadth first, in the same
    order) without the contexts and operators (``Load``, ``Add``: leaves no
    rule looks at). Three times faster: a field table per node type instead
    of ``ast.iter_child_nodes``'s generator per node. A function or class
    walked a second time keeps its descendants (without itself: no cycle):
    the Dataset facts and five rules walk the same methods, a fifth of a
    5,000-line lint; one walked once builds no list."""
    if node.__class__ not in _KEPT_WALKS:
        return _walk(node)
    kept: dict[str, object] = node.__dict__
    nodes: list[ast.AST] | None = kept.get(_WALK_NODES)  # type: ignore[assignment]
    if nodes is None:
        if _WALKED not in kept:
            setattr(node, _WALKED, True)
            return _walk(node)
        walked = _walk(node)
        next(walked)
        nodes = list(walked)
        setattr(node, _WALK_NODES, nodes)
    return chain((node,), nodes)


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    todo = deque([node])
    popleft, extend = todo.popleft, todo.extend
    while todo:
        current = popleft()
        yield current
        extend(_children(current))


# Per node type: (field, may hold non-nodes) in source order, for walk_scope.
_FORWARD_PLAN: dict[type[ast.AST], tuple[tuple[str, bool], ...]] = {}
_SCOPE_SET = frozenset(SCOPE_TYPES)
_SCOPE_NODES = "_tt_scope_nodes"


def _forward_plan(node_type: type[ast.AST]) -> tuple[tuple[str, bool], ...]:
    fields = _forward_fields(node_type)
    plan = _FORWARD_PLAN[node_type] = tuple((f, (node_type, f) in _MIXED_LISTS) for f in fields)
    return plan


def _walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    stack = _children(scope)
    pop, push, extend = stack.pop, stack.append, stack.extend
    plans = _FORWARD_PLAN
    scopes = _SCOPE_SET
    node_class = ast.AST
    while stack:
        node = pop()
        yield node
        node_type = node.__class__
        if node_type in scopes:
            continue
        plan = plans.get(node_type)
        if plan is None:
            plan = _forward_plan(node_type)
        # What _children(node) gives, pushed without building its list.
        for name, mixed in plan:
            value = getattr(node, name, None)
            if value.__class__ is list:
                if mixed:
                    extend([item for item in value if isinstance(item, node_class)])
                else:
                    extend(value)
            elif isinstance(value, node_class):
                push(value)


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes inside ``scope`` without entering nested functions or classes.
    For a function, class, lambda or module the nodes are listed once and
    kept on it: the value layer, the facts and several rules walk the same
    scopes (about twice each on the bench corpus)."""
    if scope.__class__ not in _SCOPE_SET:
        return _walk_scope(scope)
    nodes: list[ast.AST] | None = scope.__dict__.get(_SCOPE_NODES)
    if nodes is None:
        nodes = list(_walk_scope(scope))
        setattr(scope, _SCOPE_NODES, nodes)
    return iter(nodes)


def block_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a block and of its nested blocks (if/for/while/with/
    try/match), in source order, not of nested functions or classes."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            inner.extend(getattr(stmt, name, ()))
        for handler in getattr(stmt, "handlers", ()):
            inner.extend(handler.body)
        for case in getattr(stmt, "cases", ()):
            inner.extend(case.body)
        stack.extend(reversed(inner))
