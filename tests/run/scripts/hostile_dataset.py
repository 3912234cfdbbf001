import numpy as np
import torch
from fakecuda import fake_cuda
from torch.utils.data import DataLoader, Dataset


class Hostile(Dataset):
    def __init__(self):
        self.mean = fake_cuda(torch.zeros(3))
        self.rng = np.random.default_rng(0)
        # a huge graph: 100 lists of 1000 dicts
        self.index = [[{"i": i, "j": j} for j in range(1000)] for i in range(100)]

    @property
    def broken(self):
        raise RuntimeError("property read")

    def __getattr__(self, name):
        if not name.startswith("__"):  # torch itself asks for __getitems__
            print("getattr was called for", name)
        raise AttributeError(name)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor(self.rng.random())


if __name__ == "__main__":
    loader = DataLoader(Hostile(), batch_size=2, num_workers=2)
    for batch in loader:
        pass
