from torch.utils.data import DataLoader
from vendorlib.data import Vendored, VendoredLines  # third-party: not datasets.py's classes

vendored = DataLoader(Vendored("train.json"), num_workers=4)
vendored_lines = DataLoader(VendoredLines("data.txt"), num_workers=4)
