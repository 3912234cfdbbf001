"""Dataset classes as DataLoader workers see them (TT101-TT107): syntax only.

- :class:`DatasetView`: a Dataset class with its local bases' methods, and
  the methods that run inside a worker (``__getitem__``/``__iter__`` and the
  ``self.`` methods they reach);
- ``self.x = ...`` stores, and how a DataLoader's workers are described.

Which DataLoader receives which dataset is a question about values:
:mod:`torchtrap.values.datasets` (``ctx.values.datasets``).

Everything walks single methods, never the whole module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.index import walk
from torchtrap.facts.remote import remote_where
from torchtrap.source import SourceText

if TYPE_CHECKING:
    pass

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# The methods a DataLoader worker calls on the dataset.
ENTRY_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")

# torch.utils.data wrappers whose first argument(s) are the datasets they wrap.
WRAPPERS = frozenset({"Subset", "ConcatDataset", "ChainDataset", "StackDataset"})
SPLITTERS = frozenset({"random_split"})


@dataclass
class DatasetView:
    info: ClassInfo
    # The class first, then its local bases breadth-first (a light MRO).
    lineage: list[ClassInfo]
    # Method by name as the instance resolves it (subclass first).
    methods: dict[str, FunctionNode]
    # Not a Dataset subclass, only `__getitem__`/`__len__`: a dataset only
    # when a DataLoader visibly gets it (here or in another file).
    protocol: bool = False
    _worker_methods: list[FunctionNode] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.info.name

    def mentions(self, source: SourceText, words: tuple[str, ...]) -> bool:
        """Whether the text of the class or of a local base contains one of
        ``words``: a cheap filter before walking the methods."""
        for cls in self.lineage:
            node = cls.node
            lines = source.lines[node.lineno - 1 : node.end_lineno or node.lineno]
            if any(word in line for line in lines for word in words):
                return True
        return False

    def all_methods(self) -> Iterator[FunctionNode]:
        """Every method of the class and of its local bases (an overridden
        base ``__init__`` usually still runs through ``super()``)."""
        for cls in self.lineage:
            yield from cls.methods.values()

    def worker_methods(self) -> list[FunctionNode]:
        """``__getitem__``/``__iter__`` and every method they reach through
        ``self.name`` (calls, properties, bound methods passed along) or
        ``super().name``: the code that runs inside a DataLoader worker."""
        if self._worker_methods is None:
            seen: dict[int, FunctionNode] = {}
            todo = [self.methods[n] for n in ENTRY_METHODS if n in self.methods]
            while todo:
                fn = todo.pop()
                if id(fn) in seen:
                    continue
                seen[id(fn)] = fn
                me = self_name(fn)
                for node in walk(fn):
                    if not isinstance(node, ast.Attribute):
                        continue
                    target: FunctionNode | None = None
                    if me and isinstance(node.value, ast.Name) and node.value.id == me:
                        target = self.methods.get(node.attr)
                    elif _is_super_call(node.value):
                        target = self._base_method(node.attr)
                    if target is not None and id(target) not in seen:
                        todo.append(target)
            self._worker_methods = list(seen.values())
        return self._worker_methods

    def has_entry(self) -> bool:
        return any(n in self.methods for n in ENTRY_METHODS)

    def _base_method(self, name: str) -> FunctionNode | None:
        for cls in self.lineage[1:]:
            if name in cls.methods:
                return cls.methods[name]
        return None


def self_name(fn: FunctionNode) -> str | None:
    """The name of a method's instance parameter (``self`` by convention);
    None for static methods and functions without parameters."""
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Name) and deco.id in ("staticmethod", "classmethod"):
            return None
    args = fn.args.posonlyargs + fn.args.args
    return args[0].arg if args else None


def _is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def self_attribute(node: ast.AST, me: str | None) -> str | None:
    """``attr`` when ``node`` is ``self.attr`` (``self`` being ``me``)."""
    if (
        me is not None
        and isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == me
    ):
        return node.attr
    return None


def chain_root(node: ast.AST) -> ast.AST:
    """``self`` for ``self.a.b[0].c``: the start of an attribute/subscript chain."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


_SELF_STORES = "_tt_self_stores"

SelfStore = tuple[str, ast.stmt, ast.expr, "ast.expr | None"]


def self_stores(fn: FunctionNode) -> Iterator[SelfStore]:
    """``(attr, statement, target, value)`` for each ``self.attr = value``
    (also annotated) in ``fn``, nested blocks included; ``value`` is None for
    ``setattr(self, "attr", value)`` forms that have no separate target.
    Listed once and kept on ``fn`` (as ``walk_scope`` keeps a scope's nodes):
    five rules and the worker facts ask about the same methods."""
    stores: list[SelfStore] | None = fn.__dict__.get(_SELF_STORES)
    if stores is None:
        stores = list(_self_stores(fn))
        setattr(fn, _SELF_STORES, stores)
    return iter(stores)


def _self_stores(fn: FunctionNode) -> Iterator[SelfStore]:
    me = self_name(fn)
    if me is None:
        return
    for node in walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                attr = self_attribute(target, me)
                if attr is not None:
                    yield attr, node, target, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            attr = self_attribute(node.target, me)
            if attr is not None:
                yield attr, node, node.target, node.value


def workers_phrase(loader: DataLoaderCall) -> str:
    """ "DataLoader with num_workers=4" / "... num_workers=args.workers, which
    may be > 0 at run time"."""
    return f"DataLoader with {loader.describe_workers()}"


def located_phrase(loader: DataLoaderCall) -> str:
    """:func:`workers_phrase`, with " in train.py:31" for a DataLoader in
    another file (the related location's message names the line)."""
    phrase = workers_phrase(loader)
    where = remote_where(loader)
    return f"{phrase} in {where}" if where is not None else phrase


def worker_count(loaders: list[DataLoaderCall]) -> int | None:
    """The literal worker count when every DataLoader agrees on one."""
    counts = {
        loader.workers_expr.value
        for loader in loaders
        if loader.workers is Workers.SOME and isinstance(loader.workers_expr, ast.Constant)
    }
    if len(counts) == 1 and all(loader.workers is Workers.SOME for loader in loaders):
        value = next(iter(counts))
        return value if isinstance(value, int) else None
    return None


def literal(node: ast.expr | None) -> object:
    """The value of a constant expression, else a sentinel."""
    if isinstance(node, ast.Constant):
        return node.value
    return _NOT_LITERAL


_NOT_LITERAL = object()
