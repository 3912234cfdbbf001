"""TT215 missing-zero-grad: `backward()` adds to `.grad`, it does not replace
it. A loop that steps the optimizer without zeroing the gradients makes every
step use the sum of all gradients so far.

Three steps on the same batch: the gradient the optimizer gets doubles in
the second step and triples in the third, so the effective learning rate
grows with every step.

Run it, then `torchtrap check --fix --unsafe-fixes examples/tt215_missing_zero_grad.py`
(it inserts `optimizer.zero_grad()` before the backward) and run it again.
"""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    x, y = torch.randn(16, 4), torch.randn(16, 1)

    norms = []
    for step in range(3):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        norms.append(model.weight.grad.norm().item())

    ratios = [n / norms[0] for n in norms]
    print("gradient norm per step, relative to the first:", ", ".join(f"{r:.2f}" for r in ratios))
    print("RESULT: ok" if max(ratios) < 1.5 else "RESULT: bug")


if __name__ == "__main__":
    main()
