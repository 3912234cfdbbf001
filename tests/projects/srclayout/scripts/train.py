import vision.data as vd
from torch.utils.data import DataLoader

loader = DataLoader(vd.Crops(), batch_size=2, num_workers=3)
