"""Probe experiment `pin-memory`: pinned host-to-device copies work, and how
much faster they are than pageable ones.

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. The verdict is `confirmed`
when pinned memory is broken here (allocation, copy or DataLoader pinning
fails), `not-reproduced` when it works; the bandwidths are evidence.
"""

from __future__ import annotations

import json
import time
from typing import Any

import torch
from _common import error_line
from torch.utils.data import DataLoader, Dataset

LOADER_TIMEOUT_S = 30  # a worker that sends nothing for this long is reported, not waited on

MIB = 2**20
COPY_MIB = 128
ELEMENTS = COPY_MIB * MIB // 4  # float32
REPEATS = 5


class SmallBatches(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((256,), float(index))


def _bandwidth_gbs(src: torch.Tensor, dst: torch.Tensor) -> float:
    dst.copy_(src, non_blocking=True)  # warm-up
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(REPEATS):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return round(src.numel() * src.element_size() * REPEATS / seconds / 1e9, 2)


def _skip(reason: str) -> dict[str, Any]:
    return {
        "verdict": "skipped",
        "summary": reason,
        "rules": {},
        "evidence": {"reason": reason, "torch": torch.__version__},
    }


def main() -> dict[str, Any]:
    if not torch.cuda.is_available():
        return _skip(f"no CUDA device visible to torch {torch.__version__}")

    evidence: dict[str, Any] = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "copy_mib": COPY_MIB,
        "repeats": REPEATS,
    }
    problems = []
    try:
        device = torch.empty(ELEMENTS, device="cuda")
        pageable = torch.full((ELEMENTS,), 2.0)
        pinned = torch.full((ELEMENTS,), 3.0).pin_memory()
        evidence["is_pinned"] = bool(pinned.is_pinned())
        evidence["pageable_gbs"] = _bandwidth_gbs(pageable, device)
        evidence["pinned_gbs"] = _bandwidth_gbs(pinned, device)
        ends = [float(device[0].item()), float(device[-1].item())]
        evidence["pinned_copy_correct"] = ends == [3.0, 3.0]
        if not evidence["is_pinned"]:
            problems.append("pin_memory() returned an unpinned tensor")
        if not evidence["pinned_copy_correct"]:
            problems.append(f"pinned copy arrived as {ends}, expected [3.0, 3.0]")
    except Exception as exc:
        problems.append(f"pinned copy: {error_line(exc)}")
    try:
        loader = DataLoader(
            SmallBatches(), batch_size=2, num_workers=1, pin_memory=True, timeout=LOADER_TIMEOUT_S
        )
        batch = next(iter(loader))
        evidence["loader_batch_pinned"] = bool(batch.is_pinned())
        if not evidence["loader_batch_pinned"]:
            problems.append("DataLoader(pin_memory=True) returned an unpinned batch")
    except Exception as exc:
        problems.append(f"DataLoader(pin_memory=True): {error_line(exc)}")
    evidence["problems"] = problems

    if problems:
        return {
            "verdict": "confirmed",
            "summary": "pinned memory is broken here: " + "; ".join(problems),
            "rules": {},
            "evidence": evidence,
        }
    pinned_gbs, pageable_gbs = evidence["pinned_gbs"], evidence["pageable_gbs"]
    speedup = pinned_gbs / pageable_gbs if pageable_gbs else 0.0
    evidence["speedup"] = round(speedup, 2)
    return {
        "verdict": "not-reproduced",
        "summary": (
            f"pinned host-to-device {pinned_gbs} GB/s vs pageable {pageable_gbs} GB/s"
            f" ({speedup:.1f}x); DataLoader(pin_memory=True) batches are pinned"
        ),
        "rules": {},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
