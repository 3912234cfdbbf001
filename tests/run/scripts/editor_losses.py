# The three loss bugs in one script, for the editor test: a classifier whose
# forward takes the log of a softmax (inf loss), then a regression whose
# MSELoss broadcasts (N, 1) against (N,) and whose loss tensors an
# AverageMeter (meters.py) sums with their graphs.
import torch
from torch import nn
import torch.nn.functional as F

from meters import AverageMeter

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return torch.log(self.softmax(self.fc(x)))


classifier = Classifier()
opt = torch.optim.SGD(classifier.parameters(), lr=0.5)
for step in range(6):
    x = torch.randn(64, 8) * (1 + 20 * step)
    y = torch.randint(0, 4, (64,))
    loss = F.nll_loss(classifier(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

regressor = nn.Linear(5, 1)
criterion = nn.MSELoss()
opt = torch.optim.SGD(regressor.parameters(), lr=0.01)
meter = AverageMeter()
for step in range(24):
    x, y = torch.randn(16, 5), torch.randn(16)
    loss = criterion(regressor(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    meter.update(loss, x.size(0))
print("done")
