from fancy.streams import Other
from torch.utils.data import DataLoader

from . import data


def make_loader():
    return DataLoader(data.Stream(), num_workers=2)


def make_other():
    return DataLoader(Other(), num_workers=2)
