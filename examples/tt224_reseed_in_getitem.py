"""TT224 constant-reseed-per-sample: `np.random.seed(0)` in `__getitem__`.

The Dataset adds a random shift to each sample as an augmentation, but it
re-seeds numpy's generator with the same value for every sample, so every
sample gets the very same "random" shift: the augmentation does nothing.

Run it, then `torchtrap check --fix --unsafe-fixes
examples/tt224_reseed_in_getitem.py` (it removes the per-sample seeding)
and run it again.
"""

import numpy as np
from torch.utils.data import Dataset


class Shifted(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        np.random.seed(0)
        shift = np.random.uniform(-1, 1)
        return index, round(float(shift), 4)


if __name__ == "__main__":
    np.random.seed(0)  # once, at start-up: reproducible runs
    dataset = Shifted(8)
    shifts = [dataset[i][1] for i in range(len(dataset))]
    print(f"random shifts of 8 samples: {shifts}")
    print(f"distinct shifts: {len(set(shifts))}")
    print("RESULT: bug" if len(set(shifts)) == 1 else "RESULT: ok")
