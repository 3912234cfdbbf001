"""Which dataset a DataLoader holds, and is it used with workers? (TT101-TT107)

The dataset part of the value layer, reached as ``ctx.values.datasets``:

- :class:`DatasetFacts`: the dataset classes of one module
  (:class:`~torchtrap.facts.datasets.DatasetView`) and which DataLoader
  calls receive an instance of which, directly or through
  ``Subset``/``ConcatDataset``/``random_split``
  (:meth:`DatasetFacts.classes_of`: "what dataset does this expression
  hold", on the value layer's bindings), and which DataLoaders get a
  dataset no step traces;
- :func:`judge`: the shared judgement "is this dataset visibly used with
  workers?", so that the rules agree on what "used with workers" means;
- :func:`resolve_function`: the function a ``worker_init_fn=`` names.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.dataloaders import DataLoaderCall, LoaderUse, Workers
from torchtrap.facts.datasets import (
    SPLITTERS,
    WRAPPERS,
    DatasetView,
    FunctionNode,
    located_phrase,
)
from torchtrap.facts.index import enclosing_scope, parent, walk_scope
from torchtrap.values.containers import item_at, list_items

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts
    from torchtrap.values.loaders import Loaders

_MAX_DEPTH = 6


class DatasetFacts:
    """Dataset classes of one module and the DataLoaders that receive them."""

    def __init__(
        self,
        facts: ModuleFacts,
        loaders: Loaders,
        text: str = "",
        counts: Callable[[DataLoaderCall], Workers] | None = None,
    ) -> None:
        # Not the ModuleFacts itself: it holds this object, and a cycle
        # would keep the whole tree alive until a full garbage collection.
        self.loaders = loaders
        # A worker count the file alone cannot tell (`num_workers=workers`,
        # a parameter): what the whole-program model says it is.
        self._counts = counts
        self._resolved: dict[int, Workers] = {}
        self._own = {id(loader.node) for loader in facts.dataloaders}  # not another file's
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

    def workers(self, loader: DataLoaderCall) -> Workers:
        """The loader's worker count: the file's answer, or the model's when
        the file cannot tell (NONE: every path passes 0; SOME: > 0)."""
        if loader.workers is not Workers.MAYBE or self._counts is None or loader.has_splat:
            return loader.workers
        if id(loader.node) not in self._own:
            return loader.workers
        found = self._resolved.get(id(loader.node))
        if found is None:
            found = self._resolved[id(loader.node)] = self._counts(loader)
        return found

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
        return self.classes_of(expr, loader.node)

    def classes_of(
        self, expr: ast.expr, at: ast.AST, depth: int = 0
    ) -> tuple[set[str], bool, bool]:
        """What dataset ``expr`` (seen at ``at``) holds: (the local classes
        it is an instance of or wraps, whether it is the instance itself,
        whether it is known at all). The value layer's bindings
        (:meth:`Loaders.bound_values`: flow-sensitive names, ``self.x`` in
        any method, a parameter's call sites in this module) are the
        alternatives: each must be known, else the dataset is unknown
        ("may" evidence never links a dataset); a wrapper's members all count."""
        if depth > _MAX_DEPTH:
            return set(), True, False
        if isinstance(expr, ast.Call):
            return self._constructed(expr, at, depth)
        if isinstance(expr, ast.Name) and self._splits:
            split = self._split_source(expr, at)
            if split is not None:
                found, _, ok = self.classes_of(split[0], split[1], depth + 1)
                return found, False, ok
        if isinstance(expr, ast.IfExp):
            return _alternatives(
                [self.classes_of(e, at, depth + 1) for e in (expr.body, expr.orelse)]
            )
        if isinstance(expr, ast.NamedExpr):
            return self.classes_of(expr.value, at, depth + 1)
        if isinstance(expr, ast.Subscript):
            item = self._appended_item(expr, at)
            if item is None:
                return set(), True, False
            return self.classes_of(item[0], item[1], depth + 1)
        bound = self.loaders.bound_values(expr, at, depth)
        if not isinstance(bound, list) or not bound:
            return set(), True, False
        return _alternatives([self.classes_of(v, where, depth + 1) for v, where in bound])

    def _appended_item(self, sub: ast.Subscript, at: ast.AST) -> tuple[ast.expr, ast.AST] | None:
        """``parts.append(ds); parts[0]`` (:mod:`torchtrap.values.containers`)."""
        items = list_items(sub.value, at, self.loaders.tensors, self.index)
        return item_at(items, sub.slice) if items is not None else None

    def _constructed(self, value: ast.Call, at: ast.AST, depth: int) -> tuple[set[str], bool, bool]:
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
                found, _, ok = self.classes_of(arg, at, depth + 1)
                names |= found
                resolved = resolved and ok
            # Each member is in the wrapper: a known one links, whatever the others are.
            return names, False, bool(names) or resolved
        # A foreign class (``MNIST(...)``) by naming convention; a factory
        # function (``build_dataset(cfg)``) may return anything.
        return set(), True, name[:1].isupper()

    def _split_source(self, name: ast.Name, at: ast.AST) -> tuple[ast.expr, ast.AST] | None:
        """``(ds, where)`` for ``train, val = random_split(ds, ...)``."""
        scope = enclosing_scope(at)
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
                        return node.value.args[0], node
        return None


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
            workers = datasets.workers(use.loader)
            if workers is not Workers.NONE:
                st = status(use.loader)
                if st is not LoaderStatus.IGNORED:
                    if workers is not use.loader.workers:  # the model knows: say so
                        use = replace(use, loader=replace(use.loader, workers=workers))
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
            if datasets.workers(loader) is not Workers.NONE
            and status(loader) is not LoaderStatus.IGNORED
        ]
        if unlinked:
            return Judgement(Exposure.UNLINKED, [], unlinked)
        return None  # every DataLoader that may receive it has no workers
    return Judgement(Exposure.INVISIBLE, [], [])


def related_message(loader: DataLoaderCall, exposure: Exposure) -> str:
    """What a DataLoader with workers does to the dataset, for ``related``."""
    phrase = located_phrase(loader)
    if loader.workers is not Workers.SOME and loader.workers_expr is not None:
        phrase += ","  # "num_workers=n, which may be > 0 at run time, may ..."
    if exposure is Exposure.UNLINKED:
        return f"{phrase} may receive this dataset"
    return f"{phrase} copies the dataset into each worker"


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
        bound = datasets.loaders.bound_values(expr, expr)
        if isinstance(bound, list) and len(bound) == 1:
            return resolve_function(bound[0][0], datasets, view, depth + 1)
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


def _alternatives(found: list[tuple[set[str], bool, bool]]) -> tuple[set[str], bool, bool]:
    """Values one of which the expression holds (branches, bindings, callers):
    known only when every one is, and the same classes in each (else "may")."""
    if not found or not all(ok for _, _, ok in found):
        return set(), True, False
    names = found[0][0]
    if any(f[0] != names for f in found[1:]):
        return set(), True, False
    return set(names), all(direct for _, direct, _ in found), True
