"""Probe experiment `fork-cuda`: what a fork worker gets when it touches CUDA.

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. The parent initialises CUDA,
then a fork DataLoader worker (a) computes with the Dataset's CUDA tensor and
(b) allocates a new one; each error is recorded (TT103 under fork).
`--device cpu` (tests only) runs the same mechanics on CPU tensors.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
from typing import Any

import torch
from _common import error_line
from torch.utils.data import DataLoader, Dataset

LOADER_TIMEOUT_S = 30  # a worker that sends nothing for this long is reported, not waited on


class CudaDataset(Dataset):
    def __init__(self, device: str) -> None:
        self.device = device
        self.values = torch.arange(1.0, 5.0, device=device)

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> dict[str, str]:
        # Errors are returned, not raised, so both touches are tried.
        result = {}
        try:
            result["use_existing"] = f"ok: {float((self.values + 1).sum().item())}"
        except Exception as exc:
            result["use_existing"] = error_line(exc)
        try:
            result["allocate_new"] = f"ok: {float(torch.ones(2, device=self.device).sum().item())}"
        except Exception as exc:
            result["allocate_new"] = error_line(exc)
        return result


def _skip(reason: str) -> dict[str, Any]:
    return {
        "verdict": "skipped",
        "summary": reason,
        "rules": {"TT103": "skipped"},
        "rule_evidence": {"TT103": reason},
        "evidence": {"reason": reason, "torch": torch.__version__},
    }


def main() -> dict[str, Any]:
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        return _skip(f"no CUDA device visible to torch {torch.__version__}")
    if "fork" not in multiprocessing.get_all_start_methods():
        return _skip("this OS has no fork start method")

    dataset = CudaDataset(device)
    float(dataset.values.sum().item())  # CUDA is now initialised in the parent, as in training
    loader = DataLoader(
        dataset,
        batch_size=None,
        num_workers=1,
        multiprocessing_context="fork",
        timeout=LOADER_TIMEOUT_S,
    )
    evidence: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else "CPU dry run",
        "device": device,
        "start_method": "fork",
    }
    try:
        item = next(iter(loader))
        evidence.update(item)
    except Exception as exc:  # e.g. the worker died from a signal
        evidence["loader_error"] = error_line(exc)

    errors = [
        f"{key}: {evidence[key]}"
        for key in ("use_existing", "allocate_new", "loader_error")
        if key in evidence and not str(evidence[key]).startswith("ok")
    ]
    if errors:
        verdict = "confirmed"
        note = "a fork worker touching a CUDA tensor fails: " + "; ".join(errors)
    else:
        verdict = "not-reproduced"
        note = "a fork worker used the parent's CUDA tensor without error"
    note += f" (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return {
        "verdict": verdict,
        "summary": note,
        "rules": {"TT103": verdict},
        "rule_evidence": {"TT103": note},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
