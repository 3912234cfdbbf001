"""TT213 double-normalised-loss: `F.cross_entropy` applies `log_softmax`
itself, so a softmax output fed to it is normalised twice.

A linear classifier on three well-separated clusters is trained for 300
SGD steps. With `cross_entropy(softmax(logits))` the loss can never go
below about 0.55 (the predicted distribution of a softmax of values in
[0, 1] cannot get close to one-hot) and the first gradient is about 4
times smaller, so the loss barely moves: 1.05 to 0.56, against 1.47 to
0.01 once the extra softmax is gone.

Run it, then `torchtrap check --fix examples/tt213_softmax_into_cross_entropy.py`
(it drops the extra softmax) and run it again.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def loss_fn(logits, y):
    return F.cross_entropy(torch.softmax(logits, dim=1), y)


def main():
    torch.manual_seed(0)
    centres = torch.tensor([[3.0, 0.0], [-3.0, 0.0], [0.0, 3.0]])
    y = torch.arange(3).repeat(100)
    x = centres[y] + 0.5 * torch.randn(len(y), 2)
    model = nn.Linear(2, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    first = None
    for step in range(300):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if first is None:
            first = loss.item()
            grad = model.weight.grad.norm().item()
        optimizer.step()
    last = loss_fn(model(x), y).item()
    print(f"training loss: {first:.2f} -> {last:.2f} after 300 steps")
    print(f"first gradient norm: {grad:.3f}")
    print("RESULT: ok" if last < 0.3 else "RESULT: bug")


if __name__ == "__main__":
    main()
