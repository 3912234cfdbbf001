"""TT220 method-not-called: `model.eval` without `()` names the method and
throws it away, so the model stays in training mode and dropout stays on.

`evaluate` writes `model.eval`; two passes over the same batch then give
different predictions and `model.training` is still True.

Run it, then `torchtrap check --fix examples/tt220_eval_not_called.py`
(it adds the `()`) and run it again.
"""

import torch
import torch.nn as nn


def evaluate(model, x):
    model.eval
    with torch.no_grad():
        return model(x).argmax(1), model(x).argmax(1)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 4))
    x = torch.randn(64, 16)
    first, second = evaluate(model, x)
    changed = int((first != second).sum())
    print(f"model.training after evaluate: {model.training}")
    print(f"predictions that changed between two passes: {changed} of 64")
    print("RESULT: ok" if changed == 0 and not model.training else "RESULT: bug")


if __name__ == "__main__":
    main()
