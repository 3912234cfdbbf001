# The same GAN step on logits: logsigmoid stays finite for any logit
# (log(1 - sigmoid(z)) = logsigmoid(-z)).
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


disc, gen = Discriminator(), nn.Linear(2, 4)
opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
for step in range(5):
    real = torch.randn(16, 4) * (1 + 50 * step)
    fake = gen(torch.randn(16, 2))
    d_loss = -F.logsigmoid(disc(real)).mean() - F.logsigmoid(-disc(fake.detach())).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = -F.logsigmoid(disc(fake)).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
