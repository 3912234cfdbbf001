"""TT225 uninitialised-tensor: an `nn.Parameter` of `torch.empty` nothing fills.

`Localizer.bg_embeddings` is `nn.Parameter(torch.empty(1, dim))` and no
`reset_parameters`, `nn.init` call or checkpoint fills it, so training starts
from whatever the allocator hands back, as STALE's background embedding did
(its issue 16: NaN gradients). The example builds the module for eight sizes
after freeing temporaries and counts the parameters that do not start from a
defined value (zeros after the fix). Measured with torch 2.13 on CPU: 7 or 8
of 8 start from heap leftovers (values like -5e16 or 8e24, subnormals, the
1.0s of a freed tensor).

Run it, then `torchtrap check --fix --unsafe-fixes
examples/tt225_uninitialised_parameter.py` (it allocates with `torch.zeros`;
unsafe because a weight may want a random init instead) and run it again.
"""

import torch
import torch.nn as nn


class Localizer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bg_embeddings = nn.Parameter(torch.empty(1, dim))

    def forward(self, text_cls):
        return torch.cat([text_cls, self.bg_embeddings], dim=0).sum()


def main():
    keep = []
    dirty = 0
    sizes = (4096, 4000, 5000, 6000, 8192, 10000, 3000, 2048)
    for dim in sizes:
        scratch = torch.full((dim,), 1.5)  # a temporary, as any preprocessing makes
        keep.append(torch.ones(8))  # allocated after it, still alive
        del scratch
        model = Localizer(dim)
        start = model.bg_embeddings.detach()
        if not torch.equal(start, torch.zeros(1, dim)):
            dirty += 1
            print(f"dim {dim}: bg_embeddings start {start[0, :3].tolist()}")
        model(torch.ones(2, dim)).backward()
    print(f"sizes whose parameter starts from garbage: {dirty} of {len(sizes)}")
    print("RESULT: bug" if dirty else "RESULT: ok")


if __name__ == "__main__":
    main()
