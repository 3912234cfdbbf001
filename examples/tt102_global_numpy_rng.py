"""TT102 numpy-global-rng-legacy-torch: global np.random in a Dataset.

The seed note's example (batch_size=2, 4 workers). Before torch 1.9 the
workers did not seed numpy, so under fork all 4 workers returned the same
"random" rows. Torch 1.9 added numpy seeding to workers (#56488): on the
torch you run this with (>= 1.9) the rows differ, so this prints
RESULT: ok, and TT102 stays silent unless the project declares an older
torch, e.g. ``[tool.torchtrap] torch-version = "1.8.1"`` or
``torchtrap check --torch-version 1.8.1``. Then its fix adds a
``worker_init_fn`` that seeds numpy from ``torch.initial_seed()``.

    python examples/tt102_global_numpy_rng.py     # RESULT: ok on torch >= 1.9
"""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class RandomDataset(Dataset):
    def __getitem__(self, index):
        worker = torch.utils.data.get_worker_info().id
        return worker, np.random.randint(0, 1000, 3)

    def __len__(self):
        return 16


if __name__ == "__main__":
    torch.manual_seed(0)
    dataloader = DataLoader(RandomDataset(), batch_size=2, num_workers=4)
    rows = {}
    for workers, batch in dataloader:
        print(batch)
        for worker, row in zip(workers.tolist(), batch.tolist()):
            rows.setdefault(worker, []).append(row)
    identical = all(rows[w] == rows[0] for w in rows)
    print(f"torch {torch.__version__}: all 4 workers drew the same rows: {identical}")
    print("RESULT: bug" if identical else "RESULT: ok")
