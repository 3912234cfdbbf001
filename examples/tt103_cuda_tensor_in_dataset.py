"""TT103 cuda-tensor-in-dataset: a CUDA tensor held by a Dataset.

The seed note's dataset: ``self.tensor = torch.tensor(5).cuda()``. Starting
a DataLoader with a worker pickles the dataset under spawn (the default on
Windows, macOS and Python >= 3.14), which shares the CUDA storage through
CUDA IPC; pytorch issues #128497 and #156618 report the tensor reading as
zeros afterwards. Under fork, a worker that touches it fails with
"Cannot re-initialize CUDA in forked subprocess".

Needs a CUDA device: without one it prints RESULT: skipped. With one it
prints the tensor before and after starting the workers under spawn
(RESULT: bug if the value changed). Whether it changes depends on OS,
driver and torch version; ``torchtrap probe`` measures it on your machine.

    torchtrap check examples/tt103_cuda_tensor_in_dataset.py   # TT103 error
    torchtrap check --fix --unsafe-fixes examples/tt103_cuda_tensor_in_dataset.py  # workers=0
"""

import torch
from torch.utils.data import DataLoader, Dataset


class dataset(Dataset):
    def __init__(self):
        super().__init__()
        self.tensor = torch.tensor(5).cuda()

    def __getitem__(self, index):
        return 0

    def __len__(self):
        return 1000


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("this example needs a CUDA device; none found")
        print("RESULT: skipped")
        raise SystemExit(0)
    my_set = dataset()
    before = my_set.tensor.item()
    dataloder = DataLoader(
        my_set, batch_size=10, shuffle=False, num_workers=1, multiprocessing_context="spawn"
    )
    x = iter(dataloder)
    next(x)
    torch.cuda.synchronize()
    after = my_set.tensor.item()
    del x
    print(f"my_set.tensor before the workers started: {before}, after: {after}")
    print("RESULT: bug" if after != before else "RESULT: ok")
