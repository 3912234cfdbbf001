"""Shared facts: import aliases, Dataset classes, DataLoader calls."""

from __future__ import annotations

import ast
import textwrap

import pytest

import torchtrap
from torchtrap.facts import ModuleFacts, Workers


def facts(code: str) -> ModuleFacts:
    return ModuleFacts(ast.parse(textwrap.dedent(code)))


def test_import_aliases() -> None:
    f = facts(
        """
        import numpy as np
        import torch.nn.functional as F
        from torch.utils.data import DataLoader as DL
        from torch.utils import data
        import torch.utils.data
        x = np.random.default_rng
        """
    )
    q = f.imports.qualname
    assert q(ast.parse("np.random.default_rng").body[0].value) == "numpy.random.default_rng"
    assert q(ast.parse("F.softmax").body[0].value) == "torch.nn.functional.softmax"
    assert q(ast.parse("DL").body[0].value) == "torch.utils.data.DataLoader"
    assert q(ast.parse("data.Dataset").body[0].value) == "torch.utils.data.Dataset"
    assert q(ast.parse("torch.utils.data.dataloader.DataLoader").body[0].value) == (
        "torch.utils.data.DataLoader"
    )
    assert q(ast.parse("unknown.thing").body[0].value) is None


def test_dataset_classes_through_local_bases() -> None:
    f = facts(
        """
        import torch.utils.data as tud
        import torch.nn as nn
        class Base(tud.Dataset): pass
        class Child(Base): pass
        class Stream(tud.IterableDataset): pass
        class Net(nn.Module): pass
        class Loop(Loop2): pass
        class Loop2(Loop): pass
        """
    )
    c = f.classes
    assert {i.name for i in c.datasets()} == {"Base", "Child", "Stream"}
    assert c.is_iterable_dataset(c.get("Stream")) and not c.is_iterable_dataset(c.get("Child"))
    assert [i.name for i in c.modules()] == ["Net"]


@pytest.mark.parametrize(
    ("call", "workers"),
    [
        ("DataLoader(ds)", Workers.NONE),
        ("DataLoader(ds, num_workers=0)", Workers.NONE),
        ("DataLoader(ds, 4, True, None, None, 2)", Workers.SOME),
        ("DataLoader(ds, num_workers=4)", Workers.SOME),
        ("DataLoader(ds, num_workers=args.workers)", Workers.MAYBE),
        ("DataLoader(ds, num_workers=os.cpu_count())", Workers.MAYBE),
        ("DataLoader(ds, **loader_kwargs)", Workers.MAYBE),
        ("DataLoader(ds, num_workers=n)", Workers.SOME),  # n = 2 bound once
        ("DataLoader(ds, num_workers=m)", Workers.MAYBE),  # m bound twice
        # `main(args, k)`'s parameter hides the module's `k = 4`: what callers pass.
        ("DataLoader(ds, num_workers=k)", Workers.MAYBE),
        ("DataLoader(ds, num_workers=g)", Workers.SOME),  # the module's `g = 3`
    ],
)
def test_dataloader_workers(call: str, workers: Workers) -> None:
    f = facts(
        f"""
        from torch.utils.data import DataLoader, Dataset
        class DS(Dataset): pass
        k = 4
        g = 3
        def main(args, k):
            n = 2
            m = 0
            if args.big:
                m = 8
            ds = DS()
            loader = {call}
        """
    )
    (loader,) = f.dataloaders
    assert loader.workers is workers
    # What the name `ds` holds is the value layer's answer (tests/values/test_datasets.py).
    assert isinstance(loader.dataset_expr, ast.Name) and loader.dataset_class is None


def test_node_index_holds_every_node_with_its_parent() -> None:
    """The index skips fields that hold no node (identifiers, constants,
    flags) and operator singletons; every other node must be there, once,
    with its parent, as ast.walk sees it (the package's own code, plus a
    3.12 type alias, whose `name` is a node)."""
    import sys
    from pathlib import Path

    from torchtrap.facts.index import NodeIndex, parent

    singletons = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
    sources = [p.read_text(encoding="utf-8") for p in Path(torchtrap.__file__).parent.rglob("*.py")]
    if sys.version_info >= (3, 12):
        sources.append("type Pair[T] = tuple[T, T]\n")
    for source in sources:
        tree = ast.parse(source)
        index = NodeIndex(tree)
        indexed = [n for nodes in index._by_type.values() for n in nodes]
        walked = [n for n in ast.walk(tree) if not isinstance(n, singletons)]
        assert len(indexed) == len(walked) and {id(n) for n in indexed} == {id(n) for n in walked}
        for node in walked:
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, singletons):
                    assert parent(child) is node


def test_node_index_lists_nodes_of_a_type_in_pre_order() -> None:
    """``of(T)`` is in source (pre-)order, as rules take the first match;
    lists whose items may be None or identifiers (a keyword-only argument
    without a default, a ``**`` in a dict, ``global`` names, a class
    pattern's keywords) are indexed like any other."""
    from pathlib import Path

    from torchtrap.facts.index import NodeIndex, parent

    singletons = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

    def pre_order(node: ast.AST) -> list[ast.AST]:
        out, stack = [], [node]
        while stack:
            current = stack.pop()
            out.append(current)
            stack.extend(reversed(list(ast.iter_child_nodes(current))))
        return [n for n in out if not isinstance(n, singletons)]

    mixed = (
        "def f(a, *, b, c=1, **kw):\n"
        "    global g, h\n"
        "    d = {**kw, 'x': a, **{'y': b}}\n"
        "    match d:\n"
        "        case P(1, x=2, y=[3]):\n"
        "            return {**d}\n"
    )
    sources = [p.read_text(encoding="utf-8") for p in Path(torchtrap.__file__).parent.rglob("*.py")]
    for source in [mixed, *sources]:
        tree = ast.parse(source)
        index = NodeIndex(tree)
        expected: dict[type, list[ast.AST]] = {}
        for node in pre_order(tree):
            expected.setdefault(type(node), []).append(node)
        for node_type, nodes in expected.items():
            assert index.of(node_type) == nodes, node_type
    tree = ast.parse(mixed)
    NodeIndex(tree)
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.MatchClass)]
    assert all(parent(p) is call for p in call.kwd_patterns)
    (outer,) = [n for n in ast.walk(tree) if isinstance(n, ast.Dict) and None in n.keys][:1]
    assert all(parent(v) is outer for v in outer.values)


def test_walk_and_walk_scope_match_the_standard_library_order() -> None:
    """``walk`` replaces ``ast.walk`` everywhere (rules may take the first
    match): same nodes in the same breadth-first order, less the operator
    singletons; ``walk_scope`` the same depth-first order as before, on
    every walk of a scope."""
    import sys
    from pathlib import Path

    from torchtrap.facts.index import SCOPE_TYPES, walk, walk_scope

    singletons = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

    def reference_scope(scope: ast.AST) -> list[ast.AST]:
        out, stack = [], list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            out.append(node)
            if not isinstance(node, SCOPE_TYPES):
                stack.extend(ast.iter_child_nodes(node))
        return [n for n in out if not isinstance(n, singletons)]

    sources = [p.read_text(encoding="utf-8") for p in Path(torchtrap.__file__).parent.rglob("*.py")]
    if sys.version_info >= (3, 12):
        sources.append("type Pair[T] = tuple[T, T]\n")
    for source in sources:
        tree = ast.parse(source)
        expected = [n for n in ast.walk(tree) if not isinstance(n, singletons)]
        got = list(walk(tree))
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected, strict=True))
        for scope in (n for n in expected if isinstance(n, SCOPE_TYPES)):
            want = reference_scope(scope)
            seen = list(walk_scope(scope))
            assert len(seen) == len(want) and all(a is b for a, b in zip(seen, want, strict=True))
            again = list(walk_scope(scope))  # listed once, kept on the scope
            assert len(again) == len(want) and all(a is b for a, b in zip(again, want, strict=True))
        # A function or class walked a second time keeps its descendants:
        # the first, second (kept then) and third (from the kept list) walks
        # are ast.walk's order.
        kept = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        for fn in (n for n in expected if isinstance(n, kept)):
            want = [n for n in ast.walk(fn) if not isinstance(n, singletons)]
            for _ in range(3):
                seen = list(walk(fn))
                assert len(seen) == len(want)
                assert all(a is b for a, b in zip(seen, want, strict=True))


def test_names_and_attributes_are_the_index_grouped() -> None:
    """``NodeIndex.names(id)`` / ``.attributes(attr)``: the ``of(ast.Name)`` /
    ``of(ast.Attribute)`` nodes with that spelling, in the same order."""
    from pathlib import Path

    from torchtrap.facts.index import NodeIndex

    for path in Path(torchtrap.__file__).parent.rglob("*.py"):
        index = NodeIndex(ast.parse(path.read_text(encoding="utf-8")))
        names = index.of(ast.Name)
        for spelling in {n.id for n in names} | {"no_such_name"}:
            assert index.names(spelling) == [n for n in names if n.id == spelling]
        attributes = index.of(ast.Attribute)
        for spelling in {a.attr for a in attributes} | {"no_such_attr"}:
            assert index.attributes(spelling) == [a for a in attributes if a.attr == spelling]
