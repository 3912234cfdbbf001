"""The ``num_workers=0`` fix shared by the worker rules (TT103, TT104).

It is never safe: loading in the main process changes the program's speed
(no parallel loading) and turns a ``worker_init_fn`` into dead code, so
``check --fix`` and Fix All on save never change a worker count."""

from __future__ import annotations

from collections.abc import Sequence

from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.datasets import literal
from torchtrap.findings import Applicability, Edit, Fix, unsafe_title
from torchtrap.fixes.edits import replace
from torchtrap.source import SourceText

NO_WORKERS_TITLE = "Load in the main process (`num_workers=0`)"


def can_set_no_workers(loader: DataLoaderCall) -> bool:
    # With **kwargs and no explicit num_workers, an added keyword may clash.
    return "num_workers" in loader.arguments


def no_workers_edits(source: SourceText, loader: DataLoaderCall) -> list[Edit]:
    """``num_workers=0``, and the options that raise without workers reset:
    ``persistent_workers`` (ValueError), ``prefetch_factor`` (ValueError),
    ``multiprocessing_context`` (ValueError), measured in torch 2.13's
    DataLoader.__init__."""
    edits = [replace(source, loader.arguments["num_workers"], "0")]
    for name, off in (
        ("persistent_workers", "False"),
        ("prefetch_factor", "None"),
        ("multiprocessing_context", "None"),
    ):
        value = loader.arguments.get(name)
        if value is not None and literal(value) not in (None, False):
            edits.append(replace(source, value, off))
    return edits


def no_workers_why(loaders: Sequence[DataLoaderCall]) -> str:
    """Why the fix is unsafe, for these loaders."""
    why = "loading is no longer parallel"
    if any(lo.argument("worker_init_fn") is not None for lo in loaders):
        why += ", `worker_init_fn` never runs"
    if any(lo.workers is not Workers.SOME for lo in loaders):
        why += ", it replaces a worker count set at run time"
    return why


def no_workers_fix(source: SourceText, loaders: Sequence[DataLoaderCall]) -> Fix:
    """``num_workers=0`` on every loader, always UNSAFE: a worker count is
    the program's own choice of speed, and hooks that run in workers stop
    running."""
    chosen = list(loaders)
    return Fix(
        unsafe_title(NO_WORKERS_TITLE, no_workers_why(chosen)),
        Applicability.UNSAFE,
        lambda: [e for lo in chosen for e in no_workers_edits(source, lo)],
    )
