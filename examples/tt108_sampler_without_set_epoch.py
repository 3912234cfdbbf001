"""TT108 sampler-without-set-epoch: `DistributedSampler` shuffles with a
generator seeded by `seed + epoch`, and the epoch only changes through
`sampler.set_epoch(epoch)`. Without it every epoch visits the data in the
same order.

Rank 0 of 2 (`num_replicas=2, rank=0`: no process group is needed to build
the sampler) iterates a 16-item dataset for three epochs and prints the
indices it gets in each.

Run it, then `torchtrap check --fix examples/tt108_sampler_without_set_epoch.py`
(it inserts `sampler.set_epoch(epoch)` at the top of the epoch loop) and run
it again.
"""

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dataset = TensorDataset(torch.arange(16))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)

    orders = []
    for epoch in range(3):
        order = []
        for (batch,) in loader:
            order.extend(batch.tolist())
        orders.append(order)
        print(f"epoch {epoch}: {order}")
    distinct = len({tuple(o) for o in orders})
    print(f"distinct orders in 3 epochs: {distinct}")
    print("RESULT: ok" if distinct == 3 else "RESULT: bug")


if __name__ == "__main__":
    main()
