"""TT216 train-mode-not-restored: `model.eval()` stays in effect until
`model.train()`. Here the validation at the end of each epoch switches the
model to eval mode and nothing switches it back, so from the second epoch on
the "training" steps run with Dropout off.

A forward hook counts the activations Dropout(0.5) zeroes in each epoch's
training steps: about half in epoch 1, none in epoch 2.

Run it, then `torchtrap check --fix examples/tt216_train_mode_not_restored.py`
(it inserts `model.train()` at the start of the epoch's training loop) and
run it again.
"""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 64)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(64, 1)

    def forward(self, x):
        return self.out(self.drop(torch.relu(self.hidden(x))))


def validate(model, batches):
    model.eval()
    with torch.no_grad():
        return sum(nn.functional.mse_loss(model(x), y).item() for x, y in batches)


def main():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(4)]

    seen = []  # per training forward: (non-zero inputs, of them zeroed by Dropout)
    model.drop.register_forward_hook(
        lambda module, inputs, output: seen.append(
            ((inputs[0] != 0).sum().item(), ((inputs[0] != 0) & (output == 0)).sum().item())
        )
    )
    fractions = []
    for epoch in range(2):
        seen.clear()
        for x, y in batches:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        fractions.append(sum(z for _, z in seen) / sum(n for n, _ in seen))
        validate(model, batches)

    for epoch, fraction in enumerate(fractions, 1):
        print(f"epoch {epoch}: Dropout(0.5) zeroed {fraction:.0%} of activations in training")
    print("RESULT: ok" if fractions[1] > 0.25 else "RESULT: bug")


if __name__ == "__main__":
    main()
