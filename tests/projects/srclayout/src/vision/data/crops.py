import torch
from torch.utils.data import Dataset


class Crops(Dataset):
    def __init__(self):
        self.gen = torch.Generator().manual_seed(0)

    def __len__(self):
        return 8

    def __getitem__(self, index):
        return torch.randint(0, 10, (1,), generator=self.gen)
