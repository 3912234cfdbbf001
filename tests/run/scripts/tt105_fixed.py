import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        start, step = 0, 1
        if SHARD:
            info = get_worker_info()
            if info is not None:
                start, step = info.id, info.num_workers
        for i in range(start, self.n, step):
            yield torch.tensor([i, i * i])


SHARD = True

if __name__ == "__main__":
    loader = DataLoader(Stream(40), batch_size=4, num_workers=2)
    print(sum(len(b) for b in loader), "items")
