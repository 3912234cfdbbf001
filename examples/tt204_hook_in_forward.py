"""TT204 hook-in-forward: seed 003's gradient-reversal layer registers a
tensor hook inside `forward`. Training works; the first evaluation under
`torch.no_grad()` fails, because a tensor computed without grad does not
require it and `register_hook` refuses such a tensor.

Run it, then `torchtrap check --fix examples/tt204_hook_in_forward.py` (it
wraps the hook in `if x.requires_grad:`) and run it again: training still
reverses the gradient, and evaluation runs.
"""

import torch
import torch.nn as nn


class AdversarialNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 1)

    def forward(self, x):
        x = x * 1.0
        x.register_hook(lambda grad: -grad)  # gradient reversal
        return self.layer(x)


def main():
    torch.manual_seed(0)
    model = AdversarialNetwork()
    features = torch.randn(2, 4, requires_grad=True)
    model(features).sum().backward()
    reversed_grad = torch.allclose(features.grad, -model.layer.weight.expand(2, 4))
    print(f"training step: input gradient reversed: {reversed_grad}")
    try:
        with torch.no_grad():
            model(torch.randn(2, 4))
        print("evaluation under torch.no_grad(): ran")
        ok = reversed_grad
    except RuntimeError as err:
        print(f"evaluation under torch.no_grad(): RuntimeError: {err}")
        ok = False
    print("RESULT: ok" if ok else "RESULT: bug")


if __name__ == "__main__":
    main()
