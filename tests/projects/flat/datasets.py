import numpy as np
import torch
from torch.utils.data import Dataset


class Noisy(Dataset):
    """Loaded with workers in train.py: TT101 and TT103 point there."""

    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.table = torch.ones(3).cuda()

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return self.table[0] + self.rng.normal()


class Quiet(Dataset):
    """Only ever loaded with num_workers=0 (in train.py): no finding."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return self.rng.normal()


class Reseeded(Dataset):
    """Its worker_init_fn in utils.py re-creates the generator: no finding."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return self.rng.normal()


class GlobalSeeded(Dataset):
    """Its worker_init_fn seeds only the global generators: TT101."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return self.rng.normal()


class Table:
    """No Dataset base, but a DataLoader with workers gets it: TT101."""

    def __init__(self):
        self.rng = np.random.default_rng(1)

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return self.rng.random()


class Unused:
    """__getitem__/__len__ and a generator, but no DataLoader gets it: no finding."""

    def __init__(self):
        self.rng = np.random.default_rng(1)

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return self.rng.random()
