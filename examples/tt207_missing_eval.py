"""TT207 missing-eval: evaluating under `torch.no_grad()` does not switch
Dropout or BatchNorm to inference behaviour; only `model.eval()` does.

`evaluate` runs the classifier twice on the same validation batch under
`torch.no_grad()` without calling `.eval()`: Dropout still zeroes about
half of the hidden units, so the two "evaluations" disagree and the
accuracy moves from run to run.

Run it, then `torchtrap check --fix --unsafe-fixes examples/tt207_missing_eval.py`
(it inserts `model.eval()` before the block) and run it again.
"""

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 64)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(64, 3)

    def forward(self, x):
        return self.out(self.drop(torch.relu(self.hidden(x))))


@torch.no_grad()
def evaluate(model, x):
    return model(x)


def main():
    torch.manual_seed(0)
    model = Classifier()
    x_val = torch.randn(32, 8)
    first = evaluate(model, x_val)
    second = evaluate(model, x_val)
    diff = (first - second).abs().max().item()
    changed = (first.argmax(1) != second.argmax(1)).sum().item()
    print(f"largest difference between two evaluations: {diff:.4f}")
    print(f"predictions that changed: {changed} of {len(x_val)}")
    print("RESULT: ok" if diff == 0 else "RESULT: bug")


if __name__ == "__main__":
    main()
