"""TT106 workers-without-main-guard: workers started at module level.

Under spawn and forkserver (Windows, macOS, Linux from Python 3.14) each
DataLoader worker re-imports the main module and runs its top level again;
iterating the DataLoader there raises "An attempt has been made to start a
new process before the current process has finished its bootstrapping
phase" in the worker, and the script dies. This example asks for spawn so
that it shows the bug on any OS.

    python examples/tt106_main_guard.py          # RESULT: bug
    torchtrap check --fix examples/tt106_main_guard.py
    python examples/tt106_main_guard.py          # RESULT: ok
"""

import torch
from torch.utils.data import DataLoader

data = torch.arange(8)
try:
    loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context="spawn")
    batches = [batch.tolist() for batch in loader]
    print(f"batches: {batches}")
    print("RESULT: ok")
except RuntimeError as err:
    if __name__ != "__main__":
        raise  # a worker re-importing this file (as __mp_main__): the error ends it
    first = next(line.strip() for line in str(err).splitlines() if line.strip())
    print(f"the main process got: {first}")
    print("RESULT: bug")
