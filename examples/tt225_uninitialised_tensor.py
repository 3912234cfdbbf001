"""TT225 uninitialised-tensor: `torch.empty` used as if it held zeros.

`feature_sums` accumulates into `torch.empty(dim)`: the memory is not
initialised, and here it is the memory of a temporary freed just before
(a tensor of 1.5s), so the sums start from 1.5 instead of from 0. Whether
the allocator hands back that block depends on the heap's layout, so the
example tries eight sizes; measured with torch 2.13 on CPU, seven or eight
of them come back dirty in every run.

Run it, then `torchtrap check --fix examples/tt225_uninitialised_tensor.py`
(it allocates with `torch.zeros`) and run it again.
"""

import torch


def feature_sums(batches, dim):
    total = torch.empty(dim)
    for batch in batches:
        total += batch.sum(0)
    return total


def main():
    keep = []
    dirty = 0
    sizes = (4096, 4000, 5000, 6000, 8192, 10000, 3000, 2048)
    for dim in sizes:
        batches = [torch.ones(4, dim) for _ in range(3)]
        scratch = torch.full((dim,), 1.5)  # a temporary, as any preprocessing makes
        keep.append(torch.ones(8))  # allocated after it, still alive
        del scratch
        sums = feature_sums(batches, dim)
        if not torch.equal(sums, torch.full((dim,), 12.0)):
            dirty += 1
            print(f"dim {dim}: sums start {sums[:3].tolist()} (expected 12.0 each)")
    print(f"sizes whose sums are wrong: {dirty} of {len(sizes)}")
    print("RESULT: bug" if dirty else "RESULT: ok")


if __name__ == "__main__":
    main()
