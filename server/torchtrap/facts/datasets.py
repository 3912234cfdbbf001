"""Dataset classes as DataLoader workers see them (TT101-TT103).

- :class:`DatasetView`: a Dataset class with its local bases' methods, and
  the methods that run inside a worker (``__getitem__``/``__iter__`` and the
  ``self.`` methods they reach).
- :func:`dataset_facts`: which DataLoader calls in the file receive which
  dataset class (directly, or through ``Subset``/``ConcatDataset``/
  ``random_split``), and which DataLoaders get a dataset we cannot trace.
- :func:`judge`: the shared judgement "is this dataset visibly used with
  workers?", so that the three rules agree on what "used with workers" means.

Everything walks single methods, never the whole module.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.dataloaders import DataLoaderCall, LoaderUse, Workers, resolve_value
from torchtrap.facts.index import enclosing_scope, parent, walk, walk_scope
from torchtrap.facts.remote import remote_where
from torchtrap.source import SourceText

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts

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


def self_stores(fn: FunctionNode) -> Iterator[tuple[str, ast.stmt, ast.expr, ast.expr | None]]:
    """``(attr, statement, target, value)`` for each ``self.attr = value``
    (also annotated) in ``fn``, nested blocks included; ``value`` is None for
    ``setattr(self, "attr", value)`` forms that have no separate target."""
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


class DatasetFacts:
    """Dataset classes of one module and the DataLoaders that receive them."""

    def __init__(self, facts: ModuleFacts, text: str = "") -> None:
        # Not the ModuleFacts itself: it holds this object, and a cycle
        # would keep the whole tree alive until a full garbage collection.
        self.index = facts.index
        self.imports = facts.imports
        self.classes: ClassTable = facts.classes
        self.tree = facts.tree
        # Looking for `a, b = random_split(ds, ...)` walks a scope: only when
        # the module mentions a splitter at all.
        self._splits = not text or any(name in text for name in SPLITTERS)
        self._views: dict[str, DatasetView] = {}
        # (DataLoader, the classes it receives, whether it receives the instance itself)
        self._links: list[tuple[DataLoaderCall, set[str], bool]] = []
        self.unresolved: list[DataLoaderCall] = []
        for loader in facts.dataloaders:
            names, direct, resolved = self._trace(loader)
            if names:
                self._links.append((loader, names, direct))
            elif not resolved:
                self.unresolved.append(loader)
        used = {n for _, names, _ in self._links for n in names}
        for info in self.classes.classes.values():
            if self.classes.is_dataset(info) or info.name in used:
                self._views[info.name] = self._view(info)
            elif "__getitem__" in info.methods and "__len__" in info.methods:
                view = self._view(info)
                view.protocol = True
                self._views[info.name] = view

    # -- classes -------------------------------------------------------------
    def views(self) -> list[DatasetView]:
        return list(self._views.values())

    def _view(self, info: ClassInfo) -> DatasetView:
        lineage = self.classes.lineage(info)
        methods: dict[str, FunctionNode] = {}
        for cls in lineage:
            for name, fn in cls.methods.items():
                methods.setdefault(name, fn)
        return DatasetView(info, lineage, methods)

    def is_subclass(self, name: str, of: ClassInfo) -> bool:
        info = self.classes.get(name)
        if info is None:
            return False
        view = self._views.get(name) or self._view(info)
        return any(c is of for c in view.lineage)

    def method_named(self, name: str) -> list[FunctionNode]:
        """Methods called ``name`` in any class of the module."""
        return [c.methods[name] for c in self.classes.classes.values() if name in c.methods]

    # -- DataLoaders ---------------------------------------------------------
    def uses(self, view: DatasetView) -> list[LoaderUse]:
        """DataLoaders that receive an instance of ``view``'s class or of a
        subclass of it, in source order."""
        return [
            LoaderUse(loader, direct)
            for loader, names, direct in self._links
            if any(self.is_subclass(n, view.info) for n in names)
        ]

    def _trace(self, loader: DataLoaderCall) -> tuple[set[str], bool, bool]:
        """(local dataset classes, received directly, resolved). Resolved
        without classes means a dataset we know is not ours (``MNIST(...)``)."""
        expr = loader.dataset_expr
        if expr is None:
            return set(), True, False
        # find_dataloaders resolved it already: only wrappers, classmethod
        # constructors and plain names are worth a second look.
        if loader.dataset_class is not None:
            return {loader.dataset_class.name}, True, True
        name = loader.dataset_class_name
        if name and name not in WRAPPERS and name[:1].isupper():
            return set(), True, True  # MNIST(...), TensorDataset(...): not ours
        if name is None:
            # Not a call: a parameter, an attribute, or a random_split part.
            if isinstance(expr, ast.Name) and self._splits:
                split = self._split_source(expr)
                if split is not None:
                    found, _, ok = self._trace_expr(split, split, 1)
                    return found, False, ok
            return set(), True, False
        return self._trace_expr(expr, loader.node, 0)

    def _trace_expr(self, expr: ast.expr, at: ast.AST, depth: int) -> tuple[set[str], bool, bool]:
        if depth > 3:
            return set(), True, False
        value = resolve_value(expr, at, self.tree)
        if isinstance(value, ast.Name) and value is expr and self._splits:
            split = self._split_source(value)
            if split is not None:
                found, _, ok = self._trace_expr(split, split, depth + 1)
                return found, False, ok
        if not isinstance(value, ast.Call):
            return set(), True, False
        local = self.classes.class_of_call(value)
        callee = value.func
        if (
            local is None
            and isinstance(callee, ast.Attribute)
            and isinstance(callee.value, ast.Name)
        ):
            local = self.classes.get(callee.value.id)  # MyDataset.from_files(...)
        if local is not None:
            return {local.name}, True, True
        name = (
            callee.id
            if isinstance(callee, ast.Name)
            else callee.attr
            if isinstance(callee, ast.Attribute)
            else ""
        )
        if name in WRAPPERS:
            names: set[str] = set()
            resolved = True
            inner: list[ast.expr] = []
            for arg in [*value.args, *(kw.value for kw in value.keywords)]:
                inner.extend(arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg])
            for arg in inner[:8]:
                if isinstance(arg, ast.Constant) or name == "Subset" and arg is not inner[0]:
                    continue  # Subset's indices
                found, _, ok = self._trace_expr(arg, value, depth + 1)
                names |= found
                resolved = resolved and ok
            return names, False, bool(names) or resolved
        # A foreign class (``MNIST(...)``) by naming convention; a factory
        # function (``build_dataset(cfg)``) may return anything.
        return set(), True, name[:1].isupper()

    def _split_source(self, name: ast.Name) -> ast.expr | None:
        """``ds`` for ``train, val = random_split(ds, ...)``."""
        scope = enclosing_scope(name)
        for candidate in (scope, self.tree):
            for node in walk_scope(candidate):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and any(
                        isinstance(t, (ast.Tuple, ast.List))
                        and any(isinstance(e, ast.Name) and e.id == name.id for e in t.elts)
                        for t in node.targets
                    )
                ):
                    func = node.value.func
                    fname = (
                        func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    )
                    if fname in SPLITTERS and node.value.args:
                        return node.value.args[0]
        return None


def dataset_facts(facts: ModuleFacts, text: str = "") -> DatasetFacts:
    """Computed once per module and shared by the rules; ``text`` (the
    module's source) lets it skip searches for names the module lacks."""
    # Kept on the ModuleFacts itself, so it dies with it. (A WeakKeyDictionary
    # keyed by the facts never freed anything: its value refers to the key,
    # so every module ever linted stayed alive in the language server.)
    found: DatasetFacts | None = facts.__dict__.get("_dataset_facts")
    if found is None:
        found = facts.__dict__["_dataset_facts"] = DatasetFacts(facts, text)
    return found


# -- the shared judgement: is the dataset used with workers? -----------------


class LoaderStatus(enum.Enum):
    COUNTS = "counts"  # this DataLoader makes the bug real when it has workers
    UNCERTAIN = "uncertain"  # it may (a worker_init_fn we cannot read may fix it)
    IGNORED = "ignored"  # it does not (visibly fixed, or harmless with it)


class Exposure(enum.Enum):
    WORKERS = "workers"  # a DataLoader that receives it has num_workers > 0 (a literal)
    MAYBE = "maybe"  # only run-time worker counts (num_workers=args.workers) or uncertain ones
    UNLINKED = "unlinked"  # no DataLoader visibly receives it; one with workers may
    INVISIBLE = "invisible"  # no DataLoader in this file receives it or may


@dataclass
class Judgement:
    exposure: Exposure
    uses: list[LoaderUse]  # WORKERS/MAYBE: the DataLoaders with workers that receive it
    unlinked: list[DataLoaderCall]  # UNLINKED: DataLoaders with workers that may

    @property
    def loaders(self) -> list[DataLoaderCall]:
        return [u.loader for u in self.uses] or self.unlinked

    @property
    def all_direct(self) -> bool:
        return bool(self.uses) and all(u.direct for u in self.uses)


def judge(
    datasets: DatasetFacts,
    view: DatasetView,
    status: Callable[[DataLoaderCall], LoaderStatus] = lambda _: LoaderStatus.COUNTS,
    remote: Callable[[], list[LoaderUse]] | None = None,
) -> Judgement | None:
    """How visibly ``view`` runs in DataLoader workers; None when every
    DataLoader that receives it (or might) has no workers, or is visibly
    fixed according to ``status``.

    - WORKERS: some DataLoader receiving it has a literal ``num_workers > 0``
      and ``status`` COUNTS for it;
    - MAYBE: the ones receiving it only may have workers (``Workers.MAYBE``)
      or ``status`` is UNCERTAIN;
    - UNLINKED: none visibly receives it, but a DataLoader with workers gets
      a dataset we cannot trace (a parameter, a factory's result);
    - INVISIBLE: no DataLoader in this file receives it or may (it may be
      used from another file the index does not show).

    ``remote`` gives the DataLoaders in other files that get the dataset
    (``torchtrap.facts.remote.project_uses``); they count like local ones.
    """
    uses = datasets.uses(view)
    if remote is not None:
        uses = uses + remote()
    if not uses and view.protocol:
        return None  # `__getitem__` alone does not make a dataset
    if uses:
        counted: list[tuple[LoaderUse, LoaderStatus]] = []
        for use in uses:
            if use.loader.may_have_workers:
                st = status(use.loader)
                if st is not LoaderStatus.IGNORED:
                    counted.append((use, st))
        if not counted:
            return None
        certain = any(
            u.loader.workers is Workers.SOME and st is LoaderStatus.COUNTS for u, st in counted
        )
        return Judgement(
            Exposure.WORKERS if certain else Exposure.MAYBE, [u for u, _ in counted], []
        )
    if datasets.unresolved:
        unlinked = [
            loader
            for loader in datasets.unresolved
            if loader.may_have_workers and status(loader) is not LoaderStatus.IGNORED
        ]
        if unlinked:
            return Judgement(Exposure.UNLINKED, [], unlinked)
        return None  # every DataLoader that may receive it has no workers
    return Judgement(Exposure.INVISIBLE, [], [])


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


def related_message(loader: DataLoaderCall, exposure: Exposure) -> str:
    """What a DataLoader with workers does to the dataset, for ``related``."""
    phrase = located_phrase(loader)
    if loader.workers is not Workers.SOME and loader.workers_expr is not None:
        phrase += ","  # "num_workers=n, which may be > 0 at run time, may ..."
    if exposure is Exposure.UNLINKED:
        return f"{phrase} may receive this dataset"
    return f"{phrase} copies the dataset into each worker"


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


def resolve_function(
    expr: ast.expr, datasets: DatasetFacts, view: DatasetView | None, depth: int = 0
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    """The function a ``worker_init_fn=`` value names, when it is in this
    file: a lambda, a ``def`` (by name), ``functools.partial(fn, ...)``, or a
    method (``ds.init_worker``, ``MyDataset.seed_worker``)."""
    if depth > 3:
        return None
    if isinstance(expr, ast.Lambda):
        return expr
    if isinstance(expr, ast.Name):
        value = resolve_value(expr, expr, datasets.tree)
        if value is not expr:
            return resolve_function(value, datasets, view, depth + 1)
        defs = [
            fn
            for fn in datasets.index.of_types(ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and fn.name == expr.id
            and not isinstance(parent(fn), ast.ClassDef)
        ]
        return defs[-1] if defs else None
    if isinstance(expr, ast.Attribute):
        if view is not None and expr.attr in view.methods:
            return view.methods[expr.attr]
        found = datasets.method_named(expr.attr)
        return found[0] if len(found) == 1 else None
    if isinstance(expr, ast.Call):
        qual = datasets.imports.qualname(expr.func)
        if qual == "functools.partial" and expr.args:
            return resolve_function(expr.args[0], datasets, view, depth + 1)
    return None
