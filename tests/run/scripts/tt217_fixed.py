import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(16, 4), torch.randn(16, 1)
UNSCALE = True
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    scaler.scale(loss).backward()
    if UNSCALE:
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
