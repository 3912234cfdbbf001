"""TT227 grad-mode-not-entered: `torch.no_grad()` as a statement builds the
context manager and throws it away; grad mode changes only inside `with`.

`predict` calls `torch.no_grad()` alone, so autograd still records the
forward pass and the predictions require grad. Run it, then
`torchtrap check --fix --unsafe-fixes examples/tt227_bare_no_grad.py` (it
wraps the rest of the function in `with torch.no_grad():`) and run it again.
"""

import torch
import torch.nn as nn


def predict(model, x):
    torch.no_grad()
    return model(x)


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    out = predict(model, torch.randn(4, 8))
    print(f"predictions require grad: {out.requires_grad}")
    print(f"predictions have a grad_fn: {out.grad_fn is not None}")
    print("RESULT: bug" if out.requires_grad else "RESULT: ok")


if __name__ == "__main__":
    main()
