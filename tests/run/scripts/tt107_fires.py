import torch
from torch.utils.data import DataLoader, Dataset

N = 200_000


class Annotations(Dataset):
    def __init__(self):
        # as json.load gives them: one dict per item
        self.items = [{"file": f"images/{i:07d}.jpg", "label": i % 10} for i in range(N)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        item = self.items[i]
        return len(item["file"]) + item["label"]


if __name__ == "__main__":
    loader = DataLoader(Annotations(), batch_size=1000, shuffle=True, num_workers=2)
    total = 0
    for batch in loader:
        total += int(batch.sum())
    print(total)
