"""What a DataLoader's ``worker_init_fn`` re-creates in each worker (TT101).

A generator stored on a Dataset is copied into every worker with the same
state, unless the worker's init function makes a new one or re-seeds it:
``info.dataset.rng = default_rng(seed)``, ``setattr(ds, "rng", ...)``,
``ds.rng.seed(...)``, or a call of a dataset method that does
``self.rng = ...``. Reached as ``ctx.values.worker_init_resets(loader,
attr, view)``; in this file the function is read through what it calls (three
levels deep), in another file through its summary (the attributes it
re-creates on ``<x>.dataset`` and the dataset methods it calls).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.datasets import DatasetView
from torchtrap.facts.generators import generator_use, setattr_name
from torchtrap.facts.index import walk
from torchtrap.facts.remote import is_remote
from torchtrap.project.index import Project
from torchtrap.values.datasets import DatasetFacts, resolve_function
from torchtrap.values.remote import remote_fact

# A worker_init_fn is read this many calls deep (its own body is depth 0),
# as the value layer follows calls (at least three).
MAX_DEPTH = 3


def resets(
    loader: DataLoaderCall,
    attr: str,
    datasets: DatasetFacts,
    view: DatasetView,
    project: Callable[[], Project | None],
) -> bool | None:
    """Whether ``loader``'s worker_init_fn re-creates or re-seeds
    ``<x>.attr`` in each worker: False without one, None for one that
    cannot be read (not in this file nor in the index, or calling further
    than ``MAX_DEPTH`` functions deep)."""
    init = loader.argument("worker_init_fn")
    if init is None:
        return False
    if is_remote(loader):
        return _remote(loader, attr, datasets, view, project())
    fn = resolve_function(init, datasets, view)
    if fn is None:
        return None
    return _rebuilds(fn, attr, datasets, view, 0)


def _remote(
    loader: DataLoaderCall,
    attr: str,
    datasets: DatasetFacts,
    view: DatasetView,
    project: Project | None,
) -> bool | None:
    """Another file's DataLoader: what its worker_init_fn's summary records
    (a function that only seeds the global generators re-creates nothing)."""
    found = remote_fact(loader, project) if project is not None else None
    fn = project.function(found[1]) if project is not None and found and found[1] else None
    if fn is None:
        return None
    if attr in fn.rebuilds:
        return True
    unknown = False
    for entry in fn.rebuilds:
        method = view.methods.get(entry[:-2]) if entry.endswith("()") else None
        rebuilt = _rebuilds(method, attr, datasets, view, 1) if method is not None else False
        if rebuilt:
            return True
        unknown = unknown or rebuilt is None
    return None if unknown else False


def _rebuilds(
    fn: ast.AST, attr: str, datasets: DatasetFacts, view: DatasetView, depth: int
) -> bool | None:
    """True: ``fn`` re-creates or re-seeds ``<x>.attr``; None: it calls a
    function of this file past the cut-off (not read, so not a "no")."""
    cut_off = False
    for node in walk(fn):
        if isinstance(node, ast.Attribute) and node.attr == attr:
            if isinstance(node.ctx, ast.Store) or generator_use(node) == "reseed":
                return True
        elif isinstance(node, ast.Call):
            if setattr_name(node) == attr:
                return True
            target: ast.AST | None = None
            if isinstance(node.func, ast.Attribute) and node.func.attr in view.methods:
                target = view.methods[node.func.attr]
            elif isinstance(node.func, ast.Name):
                target = resolve_function(node.func, datasets, view)
            if target is None or target is fn:
                continue
            found = (
                _rebuilds(target, attr, datasets, view, depth + 1) if depth < MAX_DEPTH else None
            )
            if found:
                return True
            cut_off = cut_off or found is None
    return None if cut_off else False
