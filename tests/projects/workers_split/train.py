from datasets import Captions, ForkScored, Lines, QuietCoco, QuietLines, QuietScored, Scored
from torch.utils.data import DataLoader

scored = DataLoader(Scored([1, 2]), batch_size=2, num_workers=4)
lines = DataLoader(Lines("data.txt"), batch_size=4, num_workers=4)
captions = DataLoader(Captions("captions.txt"), num_workers=4)

quiet_scored = DataLoader(QuietScored([1, 2]), num_workers=0)
quiet_lines = DataLoader(QuietLines("data.txt"), batch_size=4, num_workers=0)
quiet_coco = DataLoader(QuietCoco("train.json"), num_workers=0)
forked = DataLoader(ForkScored([1, 2]), num_workers=4, multiprocessing_context="fork")

from subclasses import ArrayCoco, ShardedLines  # noqa: E402

sharded = DataLoader(ShardedLines("data.txt"), batch_size=4, num_workers=4)
boxes = DataLoader(ArrayCoco("train.json"), num_workers=4)
