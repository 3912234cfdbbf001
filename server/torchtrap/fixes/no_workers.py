"""The ``num_workers=0`` fix shared by the worker rules (TT103, TT104)."""

from __future__ import annotations

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.datasets import literal
from torchtrap.findings import Edit
from torchtrap.fixes.edits import replace
from torchtrap.source import SourceText


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
