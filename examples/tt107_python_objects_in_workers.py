"""TT107 python-objects-in-worker-dataset: each worker copies what it reads.

The dataset keeps a file's lines as a Python list. Forked workers share its
pages copy-on-write, but reading a Python object writes its reference
count, so every page a worker reads from is copied into that worker: its
private memory (USS) grows with the data it touched. As a numpy array the
same lines are one buffer that reading never writes (measured with N = 1,000,000:
about 45 MB per worker for the list, under 5 MB for the array). Linux only (reads
``/proc/<pid>/smaps_rollup``); a small N keeps it quick.

    python examples/tt107_python_objects_in_workers.py          # RESULT: bug
    torchtrap check --fix --unsafe-fixes examples/tt107_python_objects_in_workers.py
    python examples/tt107_python_objects_in_workers.py          # RESULT: ok
"""

import os
import sys
import tempfile

from torch.utils.data import DataLoader, Dataset

N = 1_000_000


class Captions(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.lines = fh.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        return os.getpid(), len(self.lines[index])


def private_mb(pid):
    """Private (unshared) memory of a process, from smaps_rollup."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total / 1024


if __name__ == "__main__":
    if not os.path.exists("/proc/self/smaps_rollup"):
        print("RESULT: skipped")
        sys.exit(0)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as out:
        out.writelines(f"images/{i:08d}.jpg a caption\n" for i in range(N))
    try:
        dataset = Captions(out.name)
    finally:
        os.unlink(out.name)
    loader = DataLoader(
        dataset, batch_size=5000, shuffle=True, num_workers=2, persistent_workers=True
    )
    batches = iter(loader)
    seen = set()
    while len(seen) < 2:  # one batch from each worker: both have started
        pids, _ = next(batches)
        seen.update(pids.tolist())
    before = {pid: private_mb(pid) for pid in seen}
    for _ in batches:
        pass
    growth = [private_mb(pid) - before[pid] for pid in sorted(seen)]
    print(
        f"{N} lines; private memory growth per worker over one epoch: "
        + ", ".join(f"{g:.1f} MB" for g in growth)
    )
    print("RESULT: bug" if max(growth) > 20 else "RESULT: ok")
