"""Subclasses that replace the method that runs in the workers."""

import itertools

import numpy as np
from datasets import BaseCoco, BaseLines
from torch.utils.data import get_worker_info


class ShardedLines(BaseLines):
    def __iter__(self):
        info = get_worker_info()
        stream = super().__iter__()
        if info is None:
            return stream
        return itertools.islice(stream, info.id, None, info.num_workers)


class ArrayCoco(BaseCoco):
    def __init__(self, path):
        super().__init__(path)
        self.boxes = np.array([a["bbox"] for a in self.annotations], dtype=np.float32)

    def __getitem__(self, index):
        return self.boxes[index]
