# Targets stored in float16 to save memory: they are rounded before the
# float32 model is trained on them.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(512, 4)
targets = (x @ torch.tensor([1.5, -2.0, 0.25, 3.0]) + 1000.0).unsqueeze(1).half()
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(4):
    batch = slice(step * 128, (step + 1) * 128)
    loss = F.l1_loss(model(x[batch]), targets[batch])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
