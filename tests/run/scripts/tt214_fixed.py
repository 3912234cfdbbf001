# The running loss is kept in an AverageMeter as a float: no graph
# is kept.
import torch
from torch import nn

from meters import AverageMeter

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
meter = AverageMeter()
for step in range(24):
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    meter.update(loss.item(), x.size(0))
print("avg", float(meter.avg))
