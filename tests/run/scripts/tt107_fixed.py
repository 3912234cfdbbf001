import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

N = 200_000


class Annotations(Dataset):
    def __init__(self):
        items = [{"file": f"images/{i:07d}.jpg", "label": i % 10} for i in range(N)]
        # numpy arrays: one object each, reading an item writes no reference count
        self.files = np.array([it["file"] for it in items])
        self.labels = np.array([it["label"] for it in items])

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return len(self.files[i]) + int(self.labels[i])


if __name__ == "__main__":
    loader = DataLoader(Annotations(), batch_size=1000, shuffle=True, num_workers=2)
    total = 0
    for batch in loader:
        total += int(batch.sum())
    print(total)
