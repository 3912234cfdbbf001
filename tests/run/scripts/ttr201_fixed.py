# A Poisson regression whose model predicts the log of the rate: the loss
# never takes the log of 0.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class RateModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 1)

    def forward(self, x):
        return self.fc(x).squeeze(1)


def poisson_loss(log_rate, counts):
    return F.poisson_nll_loss(log_rate, counts, log_input=True)


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
