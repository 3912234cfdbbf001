# A regression towards one constant target: (N,) against (1,) broadcasts to
# (N,), each output meets the target once.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
goal = torch.tensor([0.5])
for step in range(4):
    pred = model(torch.randn(32, 5)).squeeze(1)
    loss = nn.functional.smooth_l1_loss(pred, goal)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
