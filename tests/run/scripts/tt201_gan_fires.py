# A GAN step with two losses and two backward calls: the discriminator's
# loss takes the log of sigmoid outputs, which reach exactly 0 and 1 once
# the real samples grow. The line comes from the next graph of the same
# shape (the discriminator's loss of the next step), not the generator's.
import torch
from torch import nn

torch.manual_seed(0)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


disc, gen = Discriminator(), nn.Linear(2, 4)
opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
for step in range(5):
    real = torch.randn(16, 4) * (1 + 50 * step)
    fake = gen(torch.randn(16, 2))
    d_loss = -torch.log(disc(real)).mean() - torch.log(1 - disc(fake.detach())).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = -torch.log(disc(fake)).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
