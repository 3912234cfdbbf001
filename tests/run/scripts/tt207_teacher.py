# A teacher evaluated under no_grad inside each training step: not an evaluation.
import torch
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))
student = nn.Linear(4, 1)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(32, 4)
for step in range(3):
    opt.zero_grad()
    with torch.no_grad():
        target = teacher(x)
    loss = ((student(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
