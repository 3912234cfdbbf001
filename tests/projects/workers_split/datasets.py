"""Datasets whose DataLoaders are all in other files (train.py, vendor_train.py)."""

import json

import torch
from torch.utils.data import Dataset, IterableDataset


# TT104: num_workers=4 in train.py
class Scored(Dataset):
    def __init__(self, items):
        self.items = items
        self.scorer = torch.nn.Linear(4, 1)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


# near miss: only num_workers=0
class QuietScored(Scored):
    pass


# near miss: multiprocessing_context="fork"
class ForkScored(Scored):
    pass


# near miss: fork_train.py calls set_start_method("fork")
class PinnedScored(Scored):
    pass


# TT105: num_workers=4 in train.py
class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as fh:
            for line in fh:
                yield line.rstrip("\n")


# near miss: only num_workers=0
class QuietLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as fh:
            for line in fh:
                yield line.rstrip("\n")


# TT107: num_workers=4 in train.py
class Captions(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.lines = fh.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i].strip()


# near miss: only num_workers=0
class QuietCoco(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.annotations = json.load(fh)["annotations"]

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        return self.annotations[index]["bbox"]


# near miss: vendor_train.py loads a third-party `Vendored`
class Vendored(Dataset):
    def __init__(self, path):
        self.model = torch.nn.Linear(4, 1)
        with open(path) as fh:
            self.annotations = json.load(fh)["annotations"]

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        return self.annotations[index]["bbox"]


# near miss: same, third-party in vendor_train.py
class VendoredLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as fh:
            yield from fh


# near miss: its only DataLoader gets a subclass with its own, sharded `__iter__`
class BaseLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as fh:
            for line in fh:
                yield line.rstrip("\n")


# near miss: its only DataLoader gets a subclass whose `__getitem__` reads an array
class BaseCoco(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.annotations = json.load(fh)["annotations"]

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        return self.annotations[index]["bbox"]
