import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 1), nn.Dropout(0.1), nn.Sigmoid())

    def forward(self, x):
        return self.body(x)
