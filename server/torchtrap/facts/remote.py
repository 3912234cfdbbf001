"""DataLoaders in other files, as the dataset rules see local ones.

A DataLoader found through the project index (``ctx.project``) becomes a
:class:`DataLoaderCall` built from its summary: its arguments are parsed
back from their text, and its node carries the other file's location
(``REMOTE_ATTR``), which ``Context.related`` turns into a related location
in that file. Fixes never edit another file: :func:`is_remote` tells.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from torchtrap.facts.dataloaders import DataLoaderCall, LoaderUse, Workers

if TYPE_CHECKING:
    from torchtrap.project.index import Project, ProjectLoader
    from torchtrap.project.summary import Span

REMOTE_ATTR = "_tt_remote"


def _expr(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return ast.Name("unknown", ast.Load())


def remote_node(path: str, span: Span, where: str, name: str = "remote") -> ast.Call:
    """A stand-in node for code in another file: ``Context.related`` turns
    it into a related location there; ``lineno`` is that file's line."""
    node = ast.Call(func=ast.Name(name, ast.Load()), args=[], keywords=[])
    node.lineno, node.col_offset = span.line, span.col
    node.end_lineno, node.end_col_offset = span.end_line, span.end_col
    setattr(node, REMOTE_ATTR, (path, span.range(), where))
    return node


def remote_loader(use: ProjectLoader, folder: str) -> DataLoaderCall:
    fact = use.fact
    node = remote_node(use.path, fact.span, use.where(folder), "DataLoader")
    arguments = {name: _expr(text) for name, text in fact.arguments}
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


def is_remote(loader: DataLoaderCall) -> bool:
    return hasattr(loader.node, REMOTE_ATTR)


def remote_path(loader: DataLoaderCall) -> str | None:
    """The path of the other file a DataLoader is in; None for a local one."""
    remote = getattr(loader.node, REMOTE_ATTR, None)
    return None if remote is None else str(remote[0])


def remote_where(loader: DataLoaderCall | ast.AST, here: str | None = None) -> str | None:
    """``train.py:31`` for a DataLoader (or a stand-in node) in another
    file; "line 31" when it is in ``here`` after all."""
    node = loader.node if isinstance(loader, DataLoaderCall) else loader
    remote = getattr(node, REMOTE_ATTR, None)
    if remote is None:
        return None
    if here is not None and same_file(remote[0], here):
        return f"line {remote[1].start.line}"
    return str(remote[2])


MESSAGE_LIMIT = 120  # a Problems-panel line; longer details go to related information


def with_location(message: str, loaders: list[DataLoaderCall]) -> str:
    """The message naming the other file's DataLoader line (``... DataLoader
    workers (train.py:31): ...``, else ``... (DataLoader at train.py:31)``)
    when it still fits one Problems-panel line; else the message alone (the
    related location names the line either way)."""
    where = next((remote_where(lo) for lo in loaders if is_remote(lo)), None)
    if where is None:
        return message
    match = re.search(r"DataLoader workers?", message)
    if match is not None:  # "... 4 DataLoader workers (train.py:5): ..."
        longer = f"{message[: match.end()]} ({where}){message[match.end() :]}"
    else:
        longer = f"{message} (DataLoader at {where})"
    return longer if len(longer) <= MESSAGE_LIMIT else message


def same_file(a: str, b: str) -> bool:
    return a == b or os.path.abspath(a) == os.path.abspath(b)


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
