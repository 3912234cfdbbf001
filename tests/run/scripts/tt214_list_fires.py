# Every loss tensor is kept in a list for a plot at the end.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
history = []


def train_step(x, y):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


for step in range(24):
    loss = train_step(torch.randn(8, 16), torch.randn(8, 1))
    history.append(loss)
print("last", float(history[-1]))
