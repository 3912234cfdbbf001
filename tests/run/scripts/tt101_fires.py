import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jitter:
    def __init__(self):
        self.rng = random.Random(0)

    def __call__(self, x):
        return x + self.rng.random()


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.transform = Jitter()

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor(self.transform(self.rng.random()))


if __name__ == "__main__":
    loader = DataLoader(Noisy(), batch_size=2, num_workers=2)
    for epoch in range(2):
        for batch in loader:
            print(batch.tolist())
