# A Poisson regression whose rate goes through a ReLU: a rate of exactly 0
# makes torch.log(rate) -inf, and the loss NaN.
import torch
from torch import nn

torch.manual_seed(0)


class RateModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 1)

    def forward(self, x):
        return torch.relu(self.fc(x)).squeeze(1)


def poisson_loss(rate, counts):
    return (rate - counts * torch.log(rate)).mean()


model = RateModel()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    x = torch.randn(32, 6)
    counts = torch.poisson(torch.full((32,), 2.0))
    loss = poisson_loss(model(x), counts)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
