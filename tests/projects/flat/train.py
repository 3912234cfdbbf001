from datasets import GlobalSeeded, Noisy, Quiet, Reseeded, Table
from torch.utils.data import DataLoader
from utils import reseed_dataset, seed_globals

train = DataLoader(Noisy(), batch_size=2, num_workers=4)
quiet = DataLoader(Quiet(), batch_size=2, num_workers=0)
reseeded = DataLoader(Reseeded(), num_workers=2, worker_init_fn=reseed_dataset)
seeded = DataLoader(GlobalSeeded(), num_workers=2, worker_init_fn=seed_globals)
table = DataLoader(Table(), num_workers=2)
