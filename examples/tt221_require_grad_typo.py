"""TT221 misspelled-grad-flag: `p.require_grad = False` sets a new attribute
on the tensor; `p.requires_grad` stays True and the "frozen" layer trains.

The backbone is meant to be frozen while the head trains. Run it, then
`torchtrap check --fix examples/tt221_require_grad_typo.py` (it renames the
attribute to `requires_grad`) and run it again.
"""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    backbone = nn.Linear(8, 8)
    head = nn.Linear(8, 2)
    for param in backbone.parameters():
        param.require_grad = False
    params = [p for p in [*backbone.parameters(), *head.parameters()] if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.1)
    before = backbone.weight.detach().clone()
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    loss = nn.functional.cross_entropy(head(torch.relu(backbone(x))), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    changed = not torch.equal(before, backbone.weight)
    print(f"backbone.weight.requires_grad: {backbone.weight.requires_grad}")
    print(f"backbone changed by a training step: {changed}")
    print("RESULT: bug" if changed else "RESULT: ok")


if __name__ == "__main__":
    main()
