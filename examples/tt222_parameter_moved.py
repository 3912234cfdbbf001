"""TT222 parameter-lost-by-move: `nn.Parameter(t).double()` converts the
parameter into a plain tensor, which the module does not register.

`Scaled.scale` is missing from `parameters()` (the optimizer never trains it)
and from `state_dict()` (a checkpoint loses it). Run it, then
`torchtrap check --fix examples/tt222_parameter_moved.py` (it moves the
conversion inside `nn.Parameter(...)`) and run it again.
"""

import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.linear = nn.Linear(n, n).double()
        self.scale = nn.Parameter(torch.ones(n)).double()

    def forward(self, x):
        return self.linear(x) * self.scale


def main():
    model = Scaled()
    names = [name for name, _ in model.named_parameters()]
    keys = list(model.state_dict())
    print(f"parameters: {names}")
    print(f"state_dict keys: {keys}")
    print(f"scale is a leaf: {model.scale.is_leaf}")
    ok = "scale" in names and "scale" in keys
    print("RESULT: ok" if ok else "RESULT: bug")


if __name__ == "__main__":
    main()
