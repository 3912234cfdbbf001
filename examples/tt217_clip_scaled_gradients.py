"""TT217 clip-scaled-gradients: with a GradScaler, gradients are multiplied by
the scale (65,536 at the start) until `scaler.unscale_(optimizer)` runs, so
clipping them before that compares the threshold with a norm 65,536 times
too large.

One training step on CPU (`torch.amp.GradScaler("cpu")`) clips to
`max_norm=1.0` right after `scaler.scale(loss).backward()`: the clip sees a
norm in the hundreds of thousands and shrinks the gradients the optimizer
then uses to about 1/65,536 of the threshold instead of 1.0.

Run it, then `torchtrap check --fix examples/tt217_clip_scaled_gradients.py`
(it inserts `scaler.unscale_(optimizer)` before the clip) and run it again.
"""

import torch
import torch.nn as nn


def grad_norm(model):
    return torch.norm(torch.stack([p.grad.norm() for p in model.parameters()])).item()


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(32, 8), 10 * torch.randn(32, 1)

    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    seen = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item()
    scaler.step(optimizer)  # unscales the gradients (if not done yet), then steps
    scaler.update()
    used = grad_norm(model)

    print(f"gradient norm seen by clip_grad_norm_: {seen:,.1f}")
    print(f"gradient norm the optimizer used (max_norm=1.0): {used:.4g}")
    print("RESULT: ok" if abs(used - 1.0) < 1e-3 else "RESULT: bug")


if __name__ == "__main__":
    main()
