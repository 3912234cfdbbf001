"""TT206 unregistered-tensor-attribute: a plain tensor on an nn.Module is
neither saved nor converted with the module.

`Projector` keeps a fixed projection matrix as `self.proj = torch.eye(4)`.
It is missing from `state_dict()`, and `model.double()` converts the
Linear layer's weights to float64 but leaves `proj` float32, so the next
forward in double precision fails with a dtype mismatch (on a GPU,
`model.cuda()` leaves it on the CPU the same way).

Run it, then `torchtrap check --fix examples/tt206_plain_tensor_attribute.py`
(it registers `proj` as a non-persistent buffer) and run it again.
"""

import torch
import torch.nn as nn


class Projector(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.proj = torch.eye(4)

    def forward(self, x):
        return self.fc(x) @ self.proj


def main():
    model = Projector()
    print(f"state_dict keys: {sorted(model.state_dict())}")
    model.double()
    print(f"after .double(): fc.weight {model.fc.weight.dtype}, proj {model.proj.dtype}")
    try:
        out = model(torch.ones(1, 4, dtype=torch.float64))
        print(f"double forward: {out.dtype}")
        ok = model.proj.dtype == torch.float64
    except RuntimeError as err:
        print(f"double forward: RuntimeError: {err}")
        ok = False
    print("RESULT: ok" if ok else "RESULT: bug")


if __name__ == "__main__":
    main()
