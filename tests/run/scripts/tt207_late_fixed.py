# An evaluation after 50 steps of each epoch, gradients turned off by an
# inference_mode decorator and by a bare set_grad_enabled(False): still seen.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 4), torch.randn(32, 1)
EVAL = True


@torch.inference_mode()
def predict():
    return model(x).mean().item()


for epoch in range(2):
    for step in range(50):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if EVAL:
        model.eval()
    print(epoch, predict(), predict())
    torch.set_grad_enabled(False)
    val = [model(x).sum().item() for _ in range(2)]
    torch.set_grad_enabled(True)
    model.train()
