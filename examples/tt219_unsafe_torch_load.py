"""TT219 unsafe-torch-load: `torch.load(..., weights_only=False)` is
`pickle.load`, and a checkpoint can make it call anything.

The "checkpoint" here carries, next to a real state dict, an object whose
`__reduce__` tells pickle to call `Path.write_text` on a marker file: a
harmless stand-in for the shell command a hostile file would run. Loading
it writes the marker (only inside a temporary folder) before any of the
checkpoint is used.

Run it, then `torchtrap check --fix --unsafe-fixes examples/tt219_unsafe_torch_load.py`
(it loads with `weights_only=True`) and run it again: the payload is refused
and nothing is written.
"""

import pathlib
import pickle
import tempfile

import torch
import torch.nn as nn


class Payload:
    """What a hostile checkpoint holds: unpickling it calls `write_text`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.write_text, (pathlib.Path(self.marker), "code ran on load\n"))


def load_checkpoint(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        marker = pathlib.Path(tmp) / "marker.txt"
        path = pathlib.Path(tmp) / "downloaded.pt"
        model = nn.Linear(4, 2)
        torch.save({"model": model.state_dict(), "extra": Payload(marker)}, path)
        try:
            checkpoint = load_checkpoint(path)
            print(f"loaded keys: {sorted(checkpoint)}")
        except pickle.UnpicklingError as error:
            print(f"refused: {str(error).splitlines()[0]}")
        written = marker.exists()
        print(f"marker file written by the checkpoint: {written}")
        if written:
            print(f"marker says: {marker.read_text().strip()}")
        clean = pathlib.Path(tmp) / "weights.pt"
        torch.save(model.state_dict(), clean)
        state = load_checkpoint(clean)
        print(f"a plain state_dict still loads: {sorted(state)}")
    print("RESULT: bug" if written else "RESULT: ok")


if __name__ == "__main__":
    main()
