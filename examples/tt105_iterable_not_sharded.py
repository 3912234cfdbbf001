"""TT105 iterable-dataset-not-sharded: every worker yields the whole stream.

An IterableDataset is copied into each DataLoader worker and each copy's
``__iter__`` runs from the start: with 2 workers every item arrives twice
(10 items, batch_size=4: 6 batches instead of 3), with no warning.

    python examples/tt105_iterable_not_sharded.py          # RESULT: bug
    torchtrap check --fix examples/tt105_iterable_not_sharded.py
    python examples/tt105_iterable_not_sharded.py          # RESULT: ok
"""

from torch.utils.data import DataLoader, IterableDataset


class Numbers(IterableDataset):
    """The numbers 0..n-1, as a stream read from a file would be."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        yield from range(self.n)


if __name__ == "__main__":
    loader = DataLoader(Numbers(10), batch_size=4, num_workers=2)
    batches = [batch.tolist() for batch in loader]
    items = sorted(x for batch in batches for x in batch)
    print(f"{len(batches)} batches: {batches}")
    print(f"{len(items)} items for a dataset of 10")
    print("RESULT: bug" if items != list(range(10)) else "RESULT: ok")
