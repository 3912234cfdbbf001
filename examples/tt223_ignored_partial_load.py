"""TT223 ignored-partial-load: `load_state_dict(..., strict=False)` whose
result is thrown away.

A checkpoint saved from `nn.DataParallel` has every key prefixed with
`module.`; loaded into the bare model with `strict=False`, no key matches,
no weight changes, and the only sign of it, the returned missing and
unexpected keys, is dropped: the model trains on from random weights.

Run it, then `torchtrap check --fix examples/tt223_ignored_partial_load.py`
(it keeps the result and prints it) and run it again: the failed load is
no longer silent.
"""

import contextlib
import io
import os
import tempfile

import torch
import torch.nn as nn


def restore(model, path):
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=False)
    return model


def main():
    torch.manual_seed(0)
    trained = nn.DataParallel(nn.Linear(8, 2))
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    torch.save(trained.state_dict(), path)  # keys: module.weight, module.bias

    model = nn.Linear(8, 2)
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        restore(model, path)
    loaded = torch.equal(model.weight, trained.module.weight)
    reported = "module.weight" in said.getvalue()
    print(f"checkpoint keys: {sorted(torch.load(path, weights_only=True))}")
    print(f"weights loaded: {loaded}; mismatch reported: {reported}")
    print(said.getvalue().strip())
    print("RESULT: ok" if loaded or reported else "RESULT: bug")


if __name__ == "__main__":
    main()
