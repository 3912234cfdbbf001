"""A CPU tensor that says it lives on a GPU: this machine has none, and what
the run checks is the walk that finds such tensors (`t.is_cuda`), not CUDA."""

import torch


class FakeCuda(torch.Tensor):
    @property
    def is_cuda(self):
        return True

    @property
    def device(self):
        return torch.device("cuda", 0)


def fake_cuda(tensor):
    return tensor.as_subclass(FakeCuda)
