import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 4), torch.randn(32, 1)
RESTORE = False


def validate():
    model.eval()
    with torch.no_grad():
        return ((model(x) - y) ** 2).mean().item()


for epoch in range(2):
    for step in range(2):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    print(epoch, validate())
    if RESTORE:
        model.train()
