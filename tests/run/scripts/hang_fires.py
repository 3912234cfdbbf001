import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

HANG = "--no-hang" not in sys.argv


class Slow(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        if HANG and i == 7:
            Path("stuck").write_text("stuck")
            while True:  # a read that never returns (a dead network mount)
                time.sleep(0.05)
        return torch.tensor([float(i)])


if __name__ == "__main__":
    loader = DataLoader(Slow(), batch_size=2, num_workers=2)
    for batch in loader:
        print(batch.flatten().tolist(), flush=True)
