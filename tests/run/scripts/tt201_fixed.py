# The same classifier with log_softmax: finite for any logits.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return torch.log_softmax(self.fc(x), dim=1)


model = Classifier()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(8):
    x = torch.randn(64, 8) * (1 + 20 * step)
    y = torch.randint(0, 4, (64,))
    loss = F.nll_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
