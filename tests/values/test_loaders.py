"""The DataLoader and iterator part of the value layer (ctx.values.dataloader /
ctx.values.iterator), with near misses: a value only sometimes a DataLoader."""

from __future__ import annotations

import ast
import textwrap

from tests.values.helpers import _context


def _answers(code: str) -> list[bool]:
    """For each ``probe(x)``: is ``x`` a DataLoader (or an iterator over one)?"""
    ctx = _context(textwrap.dedent(code), "example.py", None)
    calls = sorted(
        (
            n
            for n in ast.walk(ctx.tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "probe"
        ),
        key=lambda c: c.lineno,
    )
    out = []
    for call in calls:
        arg = call.args[0]
        out.append(ctx.values.dataloader(arg) is not None or ctx.values.iterator(arg) is not None)
    return out


def test_a_dict_filled_by_item_assignment() -> None:
    code = """
        from torch.utils.data import DataLoader

        def main(ds, other, k):
            loaders = {}
            loaders["train"] = DataLoader(ds, num_workers=4)
            loaders["meta"] = other
            probe(loaders["train"])
            probe(iter(loaders["train"]))
            probe(loaders["meta"])
            probe(loaders[k])
        """
    assert _answers(code) == [True, True, False, False]


def test_a_list_filled_by_append() -> None:
    code = """
        from torch.utils.data import DataLoader

        def main(sets, extra):
            loaders = []
            for ds in sets:
                loaders.append(DataLoader(ds))
            probe(loaders[0])
            mixed = []
            mixed.append(DataLoader(sets[0]))
            mixed.append(extra)
            probe(mixed[0])
        """
    assert _answers(code) == [True, False]


def test_an_empty_container_never_filled_is_unknown() -> None:
    code = """
        def main():
            loaders = {}
            probe(loaders["train"])
        """
    assert _answers(code) == [False]
