import torch.nn as nn
from backbones import Backbone


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))


class NormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))

    def forward(self, x):
        return self.body(x)


class PlainNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class ZeroDropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.0)
        self.norm = nn.BatchNorm1d(2, track_running_stats=False)

    def forward(self, x):
        return self.norm(self.fc(self.drop(x)))


class DeepDropNet(DropNet):
    def forward(self, x):
        return super().forward(x) * 2


class NotAModule:
    def __init__(self):
        self.drop = nn.Dropout(0.5)

    def __call__(self, x):
        return self.drop(x)


class WrappedNet(Backbone):
    """A base outside the project: maybe not an nn.Module, unknown."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
