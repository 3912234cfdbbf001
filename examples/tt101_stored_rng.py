"""TT101 stored-rng-in-dataset: a generator object stored on a Dataset.

Each DataLoader worker gets an identical copy of ``self.rng``, so the
workers draw the same "random" jitter, and because the dataset is copied
again every epoch, epoch 2 repeats epoch 1.

    python examples/tt101_stored_rng.py          # RESULT: bug
    torchtrap check --fix examples/tt101_stored_rng.py
    python examples/tt101_stored_rng.py          # RESULT: ok
"""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jittered(Dataset):
    """Item i with a random brightness jitter, as an augmentation would add."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 8

    def __getitem__(self, index):
        worker = torch.utils.data.get_worker_info().id
        return worker, round(float(self.rng.uniform(-1, 1)), 4)


def one_epoch(loader):
    """The jitter values each worker drew, in order."""
    drawn = {}
    for workers, jitters in loader:
        for worker, jitter in zip(workers.tolist(), jitters.tolist()):
            drawn.setdefault(worker, []).append(jitter)
    return drawn


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(Jittered(), batch_size=2, num_workers=2)
    epoch1 = one_epoch(loader)
    epoch2 = one_epoch(loader)
    for epoch, drawn in ((1, epoch1), (2, epoch2)):
        for worker, jitters in sorted(drawn.items()):
            print(f"epoch {epoch}, worker {worker}: {jitters}")
    same_across_workers = epoch1[0] == epoch1[1]
    epoch_repeats = epoch1 == epoch2
    print(f"workers drew identical jitter: {same_across_workers}")
    print(f"epoch 2 repeated epoch 1: {epoch_repeats}")
    print("RESULT: bug" if same_across_workers or epoch_repeats else "RESULT: ok")
