# Keeps the last and the best loss tensors (with their graphs) across steps:
# at most two graphs stay alive, memory does not grow.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
best = None
last = None
for step in range(32):
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    last = loss
    if best is None or loss.item() < best.item():
        best = loss
print("best", best.item(), "last", last.item())
