"""Which dataset a DataLoader holds (ctx.values.datasets, values/datasets.py):
each flow step of the layer, with near misses where the value is only
sometimes one class (then the dataset is unknown, never linked)."""

from __future__ import annotations

import textwrap

from tests.values.helpers import _context


def _links(code: str) -> list[tuple[int, set[str], bool, bool]]:
    """For each DataLoader call: (line, classes, direct, resolved)."""
    ctx = _context(textwrap.dedent(code), "example.py", None)
    datasets = ctx.values.datasets
    out = []
    for loader in ctx.facts.dataloaders:
        names, direct, resolved = datasets.classes_of(loader.dataset_expr, loader.node)
        out.append((loader.node.lineno, names, direct, resolved))
    return out


HEAD = """
from torch.utils.data import DataLoader, Dataset, Subset, random_split
from torchvision.datasets import MNIST
class A(Dataset): pass
class B(Dataset): pass
"""


def test_steps_that_link_a_dataset_class() -> None:
    code = (
        HEAD
        + """
def names():
    ds = A()
    return DataLoader(ds, num_workers=2)

class Holder:
    def __init__(self):
        self.ds = A()
    def loader(self):
        return DataLoader(self.ds, num_workers=2)

def wrapped():
    ds = A()
    ds = Subset(ds, [0, 1])
    return DataLoader(ds, num_workers=2)

def split():
    train, val = random_split(B(), [0.9, 0.1])
    return DataLoader(val, num_workers=2)

def make(ds):
    return DataLoader(ds, num_workers=2)

make(A())
make(A())

def same_on_both_branches(flag):
    ds = A() if flag else A()
    return DataLoader(ds, num_workers=2)

def listed():
    parts = []
    parts.append(B())
    return DataLoader(parts[0], num_workers=2)
"""
    )
    got = [(names, direct, resolved) for _, names, direct, resolved in _links(code)]
    assert got == [
        ({"A"}, True, True),
        ({"A"}, True, True),
        ({"A"}, False, True),
        ({"B"}, False, True),
        ({"A"}, True, True),  # every caller in the module passes an A
        ({"A"}, True, True),
        ({"B"}, True, True),
    ]


def test_near_misses_stay_unknown() -> None:
    code = (
        HEAD
        + """
def branches(flag):
    ds = A() if flag else B()
    return DataLoader(ds, num_workers=2)

def callers_disagree(ds):
    return DataLoader(ds, num_workers=2)

callers_disagree(A())
callers_disagree(B())

def one_branch(flag, other):
    ds = other
    if flag:
        ds = A()
    return DataLoader(ds, num_workers=2)

def factory(cfg):
    return DataLoader(build(cfg), num_workers=2)

def foreign():
    return DataLoader(MNIST("."), num_workers=2)
"""
    )
    got = [(names, resolved) for _, names, _, resolved in _links(code)]
    # A foreign class is known (not ours); the others are unknown: never linked.
    assert got == [(set(), False), (set(), False), (set(), False), (set(), False), (set(), True)]
