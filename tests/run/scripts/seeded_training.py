# A seeded CPU training run: shuffled 2-worker DataLoader with a random
# augmentation, dropout, SGD. Prints every loss.
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(64, 8, generator=g)
        self.y = torch.randn(64, 1, generator=g)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.x[i] + 0.1 * torch.randn(8), self.y[i]


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Data(), batch_size=16, shuffle=True, num_workers=2)
    for epoch in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            print(f"loss {loss.item():.10f}")
