"""TT224 constant-reseed-per-sample: a `worker_init_fn` that seeds from
`worker_id` alone.

DataLoader workers are started anew every epoch (without
`persistent_workers=True`), and this `worker_init_fn` seeds numpy with the
same numbers each time: every epoch replays the same "random" draws.

Run it, then `torchtrap check --fix --unsafe-fixes
examples/tt224_worker_id_seed.py` (it seeds from `torch.initial_seed()`,
which differs per worker and per epoch) and run it again.
"""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return round(float(np.random.uniform()), 4)


def seed_worker(worker_id):
    np.random.seed(worker_id)


def one_epoch(loader):
    return [x for batch in loader for x in batch.tolist()]


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(Noise(), batch_size=2, num_workers=2, worker_init_fn=seed_worker)
    epoch1, epoch2 = one_epoch(loader), one_epoch(loader)
    print(f"epoch 1: {epoch1}")
    print(f"epoch 2: {epoch2}")
    print(f"epoch 2 repeated epoch 1: {epoch1 == epoch2}")
    print("RESULT: bug" if epoch1 == epoch2 else "RESULT: ok")
