"""TT218 unregistered-submodules: layers kept in a plain Python list are not
submodules, so the optimizer, `state_dict()` and `.to()` never see them.

`MLP` keeps three hidden blocks in a list next to a registered head. The
optimizer built from `model.parameters()` gets only the head's 2 tensors, a
training step leaves the blocks unchanged, the checkpoint has no keys for
them, and `model.double()` leaves them float32.

Run it, then `torchtrap check --fix --unsafe-fixes examples/tt218_layers_in_a_list.py`
(it wraps the list in `nn.ModuleList`) and run it again.
"""

import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, d=8, n=3):
        super().__init__()
        self.blocks = [nn.Linear(d, d) for _ in range(n)]
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


def main():
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tensors = sum(len(group["params"]) for group in optimizer.param_groups)
    print(f"parameter tensors the optimizer trains: {tensors} of 8")
    before = model.blocks[0].weight.detach().clone()
    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    moved = not torch.equal(before, model.blocks[0].weight)
    print(f"first block changed by a training step: {moved}")
    print(f"state_dict keys: {len(model.state_dict())} of 8")
    model.double()
    print(f"first block's dtype after model.double(): {model.blocks[0].weight.dtype}")
    print("RESULT: ok" if tensors == 8 and moved else "RESULT: bug")


if __name__ == "__main__":
    main()
