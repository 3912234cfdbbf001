"""TT212 dropout-ignores-eval: `F.dropout` reads only its `training`
argument (default True), not the module's mode, so `model.eval()` does not
turn it off.

`evaluate` switches the classifier to eval mode and runs it twice on the
same validation batch: with `F.dropout(h, 0.5)` in `forward` about half of
the hidden units are zeroed (the rest doubled) in each pass, so the two
evaluations disagree.

Run it, then `torchtrap check --fix examples/tt212_functional_dropout.py`
(it adds `training=self.training`) and run it again.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 64)
        self.out = nn.Linear(64, 3)

    def forward(self, x):
        h = torch.relu(self.hidden(x))
        h = F.dropout(h, 0.5)
        return self.out(h)


@torch.no_grad()
def evaluate(model, x):
    model.eval()
    return model(x)


def main():
    torch.manual_seed(0)
    model = Classifier()
    x_val = torch.randn(32, 8)
    first = evaluate(model, x_val)
    second = evaluate(model, x_val)
    diff = (first - second).abs().max().item()
    changed = (first.argmax(1) != second.argmax(1)).sum().item()
    print(f"largest difference between two eval-mode passes: {diff:.4f}")
    print(f"predictions that changed: {changed} of {len(x_val)}")
    print("RESULT: ok" if diff == 0 else "RESULT: bug")


if __name__ == "__main__":
    main()
