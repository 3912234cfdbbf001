"""Probe experiment `shm-capacity`: can a worker hand back a 256 MB batch?

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. A DataLoader worker collates
into shared memory (/dev/shm on Linux); when that is too small (Docker's
64 MB default) the worker dies with a bus error or "No space left on device".
The verdict is `confirmed` when the hand-off fails, `not-reproduced` when it works.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from typing import Any

import torch
from _common import error_line
from torch.utils.data import DataLoader, Dataset

LOADER_TIMEOUT_S = 30  # a worker that sends nothing for this long is reported, not waited on

BATCH_MIB = 256
ELEMENTS = BATCH_MIB * 2**20 // 4  # float32


class BigItem(Dataset):
    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((ELEMENTS,), float(index + 7))


def _shm_free_mib() -> int | None:
    if not os.path.isdir("/dev/shm") or not hasattr(os, "statvfs"):
        return None
    st = os.statvfs("/dev/shm")
    return round(st.f_bavail * st.f_frsize / 2**20)


def main() -> dict[str, Any]:
    import torch.multiprocessing as tmp

    evidence: dict[str, Any] = {
        "batch_mib": BATCH_MIB,
        "start_method": multiprocessing.get_start_method(),
        "sharing_strategy": tmp.get_sharing_strategy(),
        "shm_free_mib": _shm_free_mib(),
    }
    # batch_size=1: default_collate in a worker allocates the batch in shared memory.
    loader = DataLoader(BigItem(), batch_size=1, num_workers=1, timeout=LOADER_TIMEOUT_S)
    started = time.perf_counter()
    try:
        batch = next(iter(loader))
    except Exception as exc:
        evidence["error"] = error_line(exc)
        return {
            "verdict": "confirmed",
            "summary": f"a worker could not hand back a {BATCH_MIB} MB batch: {evidence['error']}",
            "rules": {},
            "evidence": evidence,
        }
    seconds = time.perf_counter() - started
    intact = (
        tuple(batch.shape) == (1, ELEMENTS)
        and float(batch[0, 0]) == 7.0
        and float(batch[0, -1]) == 7.0
    )
    evidence.update({"seconds": round(seconds, 3), "intact": intact, "shape": list(batch.shape)})
    if not intact:
        return {
            "verdict": "confirmed",
            "summary": f"a {BATCH_MIB} MB batch came back from a worker corrupted",
            "rules": {},
            "evidence": evidence,
        }
    free = evidence["shm_free_mib"]
    where = f", /dev/shm {free} MiB free" if free is not None else ""
    return {
        "verdict": "not-reproduced",
        "summary": f"a {BATCH_MIB} MB batch came back from a worker in {seconds:.2f} s{where}",
        "rules": {},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
