import torch.multiprocessing as mp
from datasets import PinnedScored
from torch.utils.data import DataLoader

mp.set_start_method("fork")
pinned = DataLoader(PinnedScored([1, 2]), num_workers=4)
