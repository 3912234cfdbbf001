"""The cache's unpickler admits every class a cache entry can hold.

A class a summary gains but the allow-list lacks makes every cached read
fail ("unexpected ... in the cache") and every run cold, without a test
failing: the cache only warns and rebuilds.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

from torchtrap.project.build import summarize_source
from torchtrap.project.cache import _ALLOWED, Cache, Entry


def _dataclasses_reachable(root: type) -> set[type]:
    seen: set[type] = set()
    todo: list[object] = [root]
    while todo:
        hint = todo.pop()
        args = typing.get_args(hint)
        if args:
            todo.extend(args)
            continue
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and hint not in seen:
            seen.add(hint)
            todo.extend(typing.get_type_hints(hint).values())
    return seen


def test_every_class_an_entry_holds_is_allowed() -> None:
    reachable = _dataclasses_reachable(Entry)
    assert len(reachable) > 5  # Entry, ModuleSummary and its facts
    missing = sorted(
        f"{c.__module__}.{c.__qualname__}"
        for c in reachable
        if c.__qualname__ not in _ALLOWED.get(c.__module__, ())
    )
    assert missing == []


DRIVER = """
import torch
from torch import nn
from torch.utils.data import DataLoader
from data import Pairs
from nets import Net


def split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x[:1], x[1:]


class Solver:
    def __init__(self, net):
        self.net = net.to("cuda")

    def test(self, net):
        with torch.no_grad():
            return net(torch.ones(1))


def main():
    net = Net()
    loader = DataLoader(Pairs(), num_workers=4)
    solver = Solver(loader)
    solver.test(net)


if __name__ == "__main__":
    main()
"""


def test_a_driver_modules_summary_comes_back_from_the_cache(tmp_path: Path) -> None:
    summary = summarize_source(DRIVER, "train.py", ("train", False))
    assert summary is not None and summary.passing  # the sites that needed PassingSite
    cache = Cache(tmp_path)
    cache.put("/x/train.py", Entry("k", summary, []))
    cache.save()
    again = Cache(tmp_path)
    again.load()
    entry = again.get("/x/train.py", "k")
    assert entry is not None and entry.summary == summary
