"""The DataLoader and iterator part of the value layer (ctx.values.dataloader /
ctx.values.iterator), with near misses: a value only sometimes a DataLoader."""

from __future__ import annotations

from tests.values.helpers import probe_calls


def _answers(code: str) -> list[bool]:
    """For each ``probe(x)``: is ``x`` a DataLoader (or an iterator over one)?"""
    ctx, calls = probe_calls(code)
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
            probe(mixed[1])
            probe(mixed[k])
        """
    # Appended in straight-line code: read by position (item 0 is the DataLoader);
    # an unknown index may be either item.
    assert _answers(code.replace("sets, extra", "sets, extra, k")) == [True, True, False, False]


def test_a_list_whose_order_is_not_certain() -> None:
    code = """
        from torch.utils.data import DataLoader

        def main(ds, extra, flag, fill):
            a = []
            if flag:
                a.append(extra)
            a.append(DataLoader(ds))
            probe(a[0])
            b = []
            b.append(extra)
            b.append(DataLoader(ds))
            probe(b[0])
            c = []
            c.append(extra)
            c.insert(0, DataLoader(ds))
            probe(c[0])
        """
    assert _answers(code) == [False, False, False]


def test_an_empty_container_never_filled_is_unknown() -> None:
    code = """
        def main():
            loaders = {}
            probe(loaders["train"])
        """
    assert _answers(code) == [False]


def test_a_method_that_returns_one_and_an_attribute_set_from_it() -> None:
    code = """
        from torch.utils.data import DataLoader

        class Trainer:
            def __init__(self):
                self.train_loader = None
                self.other = None

            def make(self, ds):
                return DataLoader(ds, batch_size=16)

            def setup(self, ds):
                self.train_loader = self.make(ds)

            def run(self):
                probe(self.train_loader)
                probe(self.other)

        trainer = Trainer()
        trainer = trainer.to("cpu")
        probe(trainer.train_loader)
        """
    assert _answers(code) == [True, False, True]


def test_a_name_rebound_later_is_what_reaches_the_use() -> None:
    code = """
        from torch.utils.data import DataLoader

        loader = DataLoader(ds)
        probe(iter(loader))
        loader = wrap(loader)
        probe(loader)
        for step in range(3):
            probe(it)
            it = iter(loader)
        it = iter(DataLoader(ds))
        for step in range(3):
            probe(it)
            it = make()
        """
    assert _answers(code) == [True, False, False, False]
