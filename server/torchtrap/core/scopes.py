"""Which names a scope binds, by Python's rules, read off the syntax."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(body: list[ast.stmt] | ast.expr) -> Iterator[ast.AST]:
    """Every node of a scope's body, not entering nested scopes (their
    decorators, defaults and bases belong to this scope)."""
    stack: list[ast.AST] = list(body) if isinstance(body, list) else [body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            stack.extend(d for d in node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.ClassDef):
            stack.extend(node.decorator_list)
            stack.extend(node.bases)
            stack.extend(k.value for k in node.keywords)
        elif isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            stack.extend(ast.iter_child_nodes(node))
        else:
            stack.extend(ast.iter_child_nodes(node))


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def statements(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and the statements below it (with the except handlers and
    match cases that hold them), in ``ast.walk``'s order: only these can
    hold a statement, so the expressions (most of a tree) are not entered.
    Pruning whole subtrees keeps a breadth-first order of the rest."""
    queue = deque([node])
    while queue:
        node = queue.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], _BLOCKS):
                queue.extend(value)
        yield node


def count_statements(node: ast.AST) -> int:
    """How many statements ``node`` holds (itself included)."""
    return sum(1 for n in statements(node) if isinstance(n, ast.stmt))


def scope_of(node: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """``bound_names`` of the scope ``node`` opens (a module, class,
    function or lambda), kept on the node: the syntax does not change, and
    every model that holds the tree (a check builds several over the same
    files) asked again. Callers read the sets, never change them."""
    found = node.__dict__.get("_tt_bound")
    if found is None:
        found = node.__dict__["_tt_bound"] = _bound(_own(node))
    return found


def lambdas_of(node: ast.AST) -> dict[int, int]:
    """``lambda_numbers`` of the scope ``node`` opens, kept on the node."""
    found = node.__dict__.get("_tt_lambdas")
    if found is None:
        found = node.__dict__["_tt_lambdas"] = _numbers(_own(node))
    return found


def generator_of(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    """``is_generator``, from the node's own nodes listed once."""
    found = node.__dict__.get("_tt_generator")
    if found is None:
        found = node.__dict__["_tt_generator"] = any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own(node)
        )
    return found


def assigned_in_loop(node: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """``assigned_in([node])``, kept on the loop (every copy of the function
    that holds it, in every model, asked again)."""
    found = node.__dict__.get("_tt_assigned")
    if found is None:
        found = node.__dict__["_tt_assigned"] = assigned_in([node])
    return found


def _own(node: ast.AST) -> list[ast.AST]:
    """``own_nodes`` of the scope ``node`` opens, listed once and kept: the
    names it binds, its lambdas and whether it yields are read off them."""
    found = node.__dict__.get("_tt_own")
    if found is None:
        found = node.__dict__["_tt_own"] = list(own_nodes(node.body))  # type: ignore[attr-defined]
    return found


def bound_names(body: list[ast.stmt] | ast.expr) -> tuple[set[str], set[str], set[str]]:
    """(locals, ``global`` names, ``nonlocal`` names) of a scope. Names
    bound only inside comprehensions are not locals of the scope."""
    return _bound(own_nodes(body))


def _bound(own: Iterable[ast.AST]) -> tuple[set[str], set[str], set[str]]:
    names: set[str] = set()
    declared_global: set[str] = set()
    declared_nonlocal: set[str] = set()
    comprehension_targets: set[int] = set()
    for node in own:
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                comprehension_targets.update(id(n) for n in ast.walk(gen.target))
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if id(node) not in comprehension_targets:
                names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            declared_nonlocal.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names - declared_global - declared_nonlocal, declared_global, declared_nonlocal


def is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    body: list[ast.stmt] | ast.expr = node.body
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(body))


def lambda_numbers(body: list[ast.stmt] | ast.expr) -> dict[int, int]:
    """``<lambdaN>`` numbers of the lambdas a scope owns, in source order."""
    return _numbers(own_nodes(body))


def _numbers(own: Iterable[ast.AST]) -> dict[int, int]:
    lambdas = [n for n in own if isinstance(n, ast.Lambda)]
    lambdas.sort(key=lambda n: (n.lineno, n.col_offset))
    return {id(n): i for i, n in enumerate(lambdas, start=1)}


def assigned_in(body: list[ast.stmt]) -> set[str]:
    """Names a block of statements may rebind (for a loop's join points)."""
    names: set[str] = set()
    for node in own_nodes(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names
