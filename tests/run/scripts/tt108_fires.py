import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

data = TensorDataset(torch.arange(16.0))
sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True)
loader = DataLoader(data, batch_size=4, sampler=sampler)
SET_EPOCH = False
for epoch in range(3):
    if SET_EPOCH:
        sampler.set_epoch(epoch)
    for (batch,) in loader:
        print(epoch, batch.tolist())
