# The model predicts (N, 1), the targets are (N,): MSELoss broadcasts them to
# (N, N) and PyTorch only warns.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features, prices = torch.randn(256, 5), torch.randn(256)
loader = DataLoader(TensorDataset(features, prices), batch_size=32)
model = nn.Linear(5, 1)
criterion = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    pred = model(x)
    loss = criterion(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
