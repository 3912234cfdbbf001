import torch
from fakecuda import fake_cuda
from torch.utils.data import DataLoader, Dataset, default_collate


class Trainer:
    def __init__(self):
        self.weights = fake_cuda(torch.ones(3))

    def collate(self, batch):
        return default_collate(batch)


class Features(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.full((3,), float(i))


if __name__ == "__main__":
    trainer = Trainer()
    loader = DataLoader(Features(), batch_size=4, num_workers=2, collate_fn=default_collate)
    for batch in loader:
        print(batch.sum().item())
