# Binary labels stored in float16: 0 and 1 are exact in float16, nothing is lost.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(256, 4)
labels = (x[:, :1] > 0).half()
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for step in range(4):
    loss = F.mse_loss(torch.sigmoid(model(x)), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
