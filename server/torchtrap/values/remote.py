"""DataLoaders of other files that load a dataset class of this one.

The project queries behind :func:`~torchtrap.facts.datasets.judge`'s
``remote``: through ``ctx.project`` (:mod:`torchtrap.project.index`), turned
into :class:`~torchtrap.facts.DataLoaderCall` stand-ins by
:mod:`torchtrap.facts.remote`. Here, above both ``facts`` and ``project``,
so that neither imports the other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Protocol

from torchtrap.facts.dataloaders import DataLoaderCall, LoaderUse, Workers
from torchtrap.facts.index import parent
from torchtrap.facts.remote import REMOTE_ATTR, parsed_expr, remote_node
from torchtrap.project.index import Project, ProjectLoader
from torchtrap.project.summary import Span


def remote_loader(use: ProjectLoader, folder: str) -> DataLoaderCall:
    fact = use.fact
    node = remote_node(use.path, fact.span, use.where(folder), "DataLoader")
    arguments = {name: parsed_expr(text) for name, text in fact.arguments}
    return DataLoaderCall(
        node=node,
        arguments=arguments,
        has_splat=fact.has_splat,
        dataset_expr=None,
        dataset_class=None,
        dataset_class_name=None,
        workers=Workers(fact.workers),
        workers_expr=arguments.get("num_workers"),
    )


def remote_fact(loader: DataLoaderCall, project: Project) -> tuple[str, str | None] | None:
    """(the other file's path, the worker_init_fn's absolute reference)."""
    remote = getattr(loader.node, REMOTE_ATTR, None)
    if remote is None:
        return None
    summary = project.summary(remote[0])
    if summary is None:
        return remote[0], None
    for fact in summary.dataloaders:
        if fact.span.range() == remote[1]:
            ref = fact.ref("worker_init_fn")
            return remote[0], project.resolve(ref, remote[0]) if ref else None
    return remote[0], None


def _may_name(project: Project, where: str, ref: str, class_path: str) -> bool:
    """Code in the file ``where`` may build an instance of the class ``ref``
    itself: it is the class's file, or imports the class or its module (or
    everything, with ``*``). A DataLoader with workers in a file that names
    neither gets its dataset from elsewhere (a top-level ``import pkg`` is
    mostly for ``pkg.__version__``)."""
    if where == class_path:
        return True
    summary = project.summary(where)
    if summary is None or summary.star_imports:
        return True
    module = ref.rpartition(".")[0]
    return any(target in (ref, module) for target in summary.imports.values())


def project_uses(
    project: Project | None, path: str, class_name: str, overridden: tuple[str, ...] = ()
) -> list[LoaderUse]:
    """The DataLoaders in the project's other files that get an instance of
    the class ``class_name`` of the file at ``path`` (or of a subclass).
    A subclass that defines one of the methods ``overridden`` itself (or
    through a base between it and the class) does not run the class's
    own: its DataLoaders are left out.

    When none of them may have workers but some DataLoader with workers in
    the project gets a dataset the index cannot trace, that one may receive
    it too: the result then is empty (unknown, as without a project)."""

    if project is None:
        return []
    ref = project.ref(path, class_name)
    if ref is None:
        return []
    found = project.dataloaders_loading(ref, exclude_path=path)
    if overridden:
        found = [u for u in found if not _overrides(project, u, ref, overridden)]
    if not found:
        return []
    if all(u.fact.workers == Workers.NONE.value for u in found) and any(
        u.fact.dataset is None
        and u.fact.workers != Workers.NONE.value
        and _may_name(project, u.path, ref, path)
        for u in project.dataloaders()
    ):
        return []
    return [LoaderUse(remote_loader(u, project.root), u.fact.direct) for u in found]


def _overrides(project: Project, use: ProjectLoader, ref: str, methods: tuple[str, ...]) -> bool:
    """The class ``use`` loads is a subclass of ``ref`` that defines one of
    ``methods`` (itself or through a project base below ``ref``)."""
    loaded = project.resolve(use.fact.dataset, use.path) if use.fact.dataset else None
    below = project.subclasses(ref)
    seen: set[str] = set()
    todo = [loaded] if loaded is not None else []
    while todo:
        current = todo.pop()
        if current == ref or current in seen or current not in below:
            continue
        seen.add(current)
        found = project.class_fact(current)
        if found is not None and any(m in found[1].methods for m in methods):
            return True
        todo.extend(b for b in project.bases(current) if b is not None)
    return False


class _HasProject(Protocol):
    @property
    def project(self) -> Project | None: ...

    path: str


def remote_uses(
    ctx: _HasProject, class_name: str, overridden: tuple[str, ...] = ()
) -> Callable[[], list[LoaderUse]]:
    """For :func:`~torchtrap.facts.datasets.judge`'s ``remote``: reads
    ``ctx.project`` only when called (it may raise NeedsProject).
    ``overridden``: see :func:`project_uses`."""
    return lambda: project_uses(ctx.project, ctx.path, class_name, overridden)


def passed_model_layers(
    project: Project | None, path: str, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> list[tuple[str, str, Span]] | None:
    """The train-mode layers (path, qualname, span) of the models that the
    call sites in other files pass to ``function``'s parameter ``name`` (a
    module-level function, or a method of a module-level class called as
    ``obj.m(...)`` with ``obj = Cls(...)``): a model is the instance of a
    project class, built there or by a project factory (``vgg16_bn(...)``
    → ``_vgg`` → ``VGG``). None when unknown: no such caller, a caller
    passing anything else or switching the mode, a factory not followed,
    or a class without Dropout/BatchNorm (every caller must agree)."""
    if project is None:
        return None
    owner = parent(function)
    method: str | None = None
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    index = positional.index(name) if name in positional else None
    keyword = name if name not in [a.arg for a in function.args.posonlyargs] else None
    if isinstance(owner, ast.ClassDef) and isinstance(parent(owner), ast.Module):
        if function.decorator_list or not positional or positional[0] != "self":
            return None  # a static or class method, a property: not followed
        qual = f"{owner.name}.{function.name}"
        method = function.name
        index = index - 1 if index is not None else None
        if index == -1:
            return None
    elif isinstance(owner, ast.Module):
        qual = function.name
    else:
        return None
    base = project.ref(path, qual.split(".", 1)[0])
    if base is None:
        return None
    ref = f"{base}.{function.name}" if method is not None else base
    passed = project.passed_values(ref, index, keyword)
    if passed is None:
        return None
    found: list[tuple[str, str, Span]] = []
    for where, _site, made in passed:
        cls = project.made_class(made, where)
        layers = project.train_mode_layers(cls) if cls is not None else None
        if not layers:
            return None
        found.extend(layers)
    return found
