import random

from torch.utils.data import IterableDataset

__all__ = ["Other", "Stream"]


class Stream(IterableDataset):
    def __init__(self):
        self.r = random.Random(0)

    def __iter__(self):
        for _ in range(4):
            yield self.r.random()


class Other(IterableDataset):
    """Same generator, but the only DataLoader getting an `Other` gets a
    third-party class of that name: the warning stays the one-file warning
    (a package's users may load it with workers)."""

    def __init__(self):
        self.r = random.Random(0)

    def __iter__(self):
        for _ in range(4):
            yield self.r.random()
