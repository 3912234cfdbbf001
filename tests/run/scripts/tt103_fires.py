import torch
from fakecuda import fake_cuda
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self):
        self.mean = fake_cuda(torch.zeros(3))
        self.items = [torch.full((3,), float(i)) for i in range(8)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


if __name__ == "__main__":
    loader = DataLoader(Features(), batch_size=4, num_workers=2)
    for batch in loader:
        print(batch.sum().item())
