from datasets import GlobalSeeded, Noisy, Quiet, Reseeded, Table
from torch.utils.data import DataLoader
from utils import reseed_dataset, seed_globals

train = DataLoader(Noisy(), batch_size=2, num_workers=4)
quiet = DataLoader(Quiet(), batch_size=2, num_workers=0)
reseeded = DataLoader(Reseeded(), num_workers=2, worker_init_fn=reseed_dataset)
seeded = DataLoader(GlobalSeeded(), num_workers=2, worker_init_fn=seed_globals)
table = DataLoader(Table(), num_workers=2)

import torch  # noqa: E402
from losses import bce, nll  # noqa: E402
from models import Discriminator  # noqa: E402
from utils import probs, safe_probs  # noqa: E402

disc = Discriminator()


def gan_loss(x, y):
    return bce(disc(x), y) + nll(safe_probs(x), y)


def log_likelihoods(z):
    bad = torch.log(probs(z))  # TT201: utils.probs returns a sigmoid
    good = torch.log(safe_probs(z))  # clamped in utils.py: no finding
    return bad, good


def fit(loader, device):
    for t in loader:
        X, y = t["X"], t["y"]
        X.to(device)  # TT202: X is a batch item of the DataLoader fit() is given
        disc.to(device)  # a module: in place, no finding
        y.cuda()  # TT202


def replay(items, device):
    for t in items:
        t["X"].to(device)  # items is a list of dicts, not a DataLoader: no finding


fit(train, "cuda")
replay([{"X": torch.zeros(1)}], "cuda")
