"""TT226 clip-outside-step: `clip_grad_norm_` after `optimizer.step()`.

The clip runs after the optimizer has already used the gradients, so the
step applies the unclipped gradient (norm 100 here) instead of one of norm
`max_norm=1.0`.

Run it, then `torchtrap check --fix examples/tt226_clip_after_step.py` (it
moves the clip between `backward()` and `step()`) and run it again.
"""

import torch
import torch.nn as nn


def train(model, optimizer, batches):
    used = []
    for x, y in batches:
        before = [p.detach().clone() for p in model.parameters()]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        # SGD with lr=1: the change of the weights is the gradient the step used.
        params = list(model.parameters())
        deltas = [(b - p.detach()).flatten() for b, p in zip(before, params, strict=True)]
        moved = torch.cat(deltas)
        used.append(moved.norm().item())
    return used


def main():
    torch.manual_seed(0)
    model = nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    x = torch.ones(1, 4)
    y = torch.full((1, 1), -25.0)  # d(mse)/dw = 2 * 25 * x: a gradient of norm 100
    used = train(model, optimizer, [(x, y)])
    print(f"gradient norm the step used (max_norm=1.0): {used[0]:.4f}")
    print("RESULT: bug" if used[0] > 1.0 + 1e-4 else "RESULT: ok")


if __name__ == "__main__":
    main()
