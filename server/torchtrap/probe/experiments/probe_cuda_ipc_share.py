"""Probe experiment `cuda-ipc-share`: CUDA tensors read as zeros
after DataLoader workers start under spawn (TT103).

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. Three checks, each comparing
the parent's CUDA tensors before and after:
  1. `storage._share_cuda_()` called directly (what reduce_tensor calls);
  2. a Dataset holding CUDA tensors, iterated by 1 spawn worker, plus a
     bystander tensor from the same allocator block that is never pickled;
  3. a model's weight reached only through a bound-method `collate_fn`.
`--device cpu` (tests only) runs the same mechanics on CPU tensors, with
`share_memory_()` in place of `_share_cuda_()`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch
from _common import error_line
from torch.utils.data import DataLoader, Dataset

LOADER_TIMEOUT_S = 30  # a worker that sends nothing for this long is reported, not waited on

CONTEXT = "spawn"  # the pickling path; the default on Windows, macOS and Python 3.14+


def _storage(t: torch.Tensor) -> Any:
    # untyped_storage() since torch 2.0; storage() (TypedStorage) before.
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


class CudaDataset(Dataset):
    """The seed's Dataset: CUDA tensors as attributes, CPU items."""

    def __init__(self, device: str) -> None:
        self.scalar = torch.tensor(5).to(device)  # the seed's exact tensor
        self.values = torch.arange(1.0, 9.0, device=device)

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        return index


class PlainDataset(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        return index


class Trainer:
    """Holds a CUDA model; its bound method as collate_fn pickles all of it."""

    def __init__(self, device: str) -> None:
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 4).to(device)

    def collate(self, batch: list[int]) -> torch.Tensor:
        return torch.tensor(batch)


def _watch(named: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    # .tolist() copies to the host, which waits for the GPU.
    return {name: [float(x) for x in t.detach().flatten().tolist()] for name, t in named.items()}


def _changed(before: dict[str, list[float]], after: dict[str, list[float]]) -> list[str]:
    return [name for name in before if before[name] != after[name]]


def _shown(snapshot: dict[str, list[float]]) -> dict[str, list[float]]:
    """The first values of each tensor: enough to see zeros in the report."""
    return {name: [round(x, 4) for x in values[:4]] for name, values in snapshot.items()}


def _through_workers(loader: DataLoader, named: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Snapshots after the worker starts (the pickling happens in Process.start),
    after one batch, after shutdown; the first is where the seed saw zeros."""
    before = _watch(named)
    snapshots: dict[str, dict[str, list[float]]] = {}
    row: dict[str, Any] = {"before": _shown(before)}
    try:
        it = iter(loader)
        snapshots["after_start"] = _watch(named)
        next(it)
        snapshots["after_batch"] = _watch(named)
        del it  # shuts the worker down
        snapshots["after_shutdown"] = _watch(named)
    except Exception as exc:
        row["error"] = error_line(exc)
    changed: list[str] = []
    for stage, snapshot in snapshots.items():
        row[stage] = _shown(snapshot)
        for name in _changed(before, snapshot):
            if not any(c.startswith(name + " ") for c in changed):
                changed.append(f"{name} ({stage})")
    row["changed"] = changed
    return row


def check_share(device: str) -> dict[str, Any]:
    named = {
        "tensor(5)": torch.tensor(5).to(device),
        "arange(1, 9)": torch.arange(1.0, 9.0, device=device),
    }
    before = _watch(named)
    row: dict[str, Any] = {"before": _shown(before), "changed": []}
    try:
        for t in named.values():
            if device == "cuda":
                _storage(t)._share_cuda_()
            else:
                t.share_memory_()
        after = _watch(named)
        row["after"] = _shown(after)
        row["changed"] = _changed(before, after)
    except Exception as exc:
        row["error"] = error_line(exc)
    return row


def check_dataset(device: str) -> dict[str, Any]:
    dataset = CudaDataset(device)
    bystander = torch.tensor(5).to(device)  # same allocator block, never pickled
    loader = DataLoader(
        dataset,
        batch_size=1,
        num_workers=1,
        multiprocessing_context=CONTEXT,
        timeout=LOADER_TIMEOUT_S,
    )
    named = {
        "dataset.scalar": dataset.scalar,
        "dataset.values": dataset.values,
        "bystander": bystander,
    }
    return _through_workers(loader, named)


def check_bound_collate(device: str) -> dict[str, Any]:
    trainer = Trainer(device)
    loader = DataLoader(
        PlainDataset(),
        batch_size=2,
        num_workers=1,
        multiprocessing_context=CONTEXT,
        collate_fn=trainer.collate,
        timeout=LOADER_TIMEOUT_S,
    )
    return _through_workers(loader, {"model.weight": trainer.model.weight})


def check_control() -> str | None:
    """A spawn worker with nothing on the GPU: tells a CUDA failure from a
    spawn failure. Returns the error line, None when it works."""
    loader = DataLoader(
        PlainDataset(),
        batch_size=2,
        num_workers=1,
        multiprocessing_context=CONTEXT,
        timeout=LOADER_TIMEOUT_S,
    )
    try:
        next(iter(loader))
    except Exception as exc:
        return error_line(exc)
    return None


def main() -> dict[str, Any]:
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        reason = f"no CUDA device visible to torch {torch.__version__}"
        return {
            "verdict": "skipped",
            "summary": reason,
            "rules": {"TT103": "skipped"},
            "rule_evidence": {"TT103": reason},
            "evidence": {"reason": reason, "torch": torch.__version__},
        }

    share = check_share(device)
    dataset = check_dataset(device)
    collate = check_bound_collate(device)
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "CPU dry run"
    evidence: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": gpu,
        "device": device,
        "start_method": CONTEXT,
        "share_cuda": share,
        "dataset_worker": dataset,
        "bound_collate_fn": collate,
    }
    where = f"torch {torch.__version__}, CUDA {torch.version.cuda}, {gpu}"

    zeroed = []
    if share["changed"]:
        zeroed.append("storage._share_cuda_() changed " + ", ".join(share["changed"]))
    if dataset["changed"]:
        zeroed.append("a spawn worker start changed " + ", ".join(dataset["changed"]))
    if collate["changed"]:
        zeroed.append("a bound-method collate_fn changed " + ", ".join(collate["changed"]))
    failures = [
        f"{label}: {row['error']}"
        for label, row in (("_share_cuda_", share), ("dataset", dataset), ("collate_fn", collate))
        if "error" in row
    ]
    control = check_control() if failures else None
    evidence["control_error"] = control

    if zeroed:
        verdict = "confirmed"
        note = "; ".join(zeroed) + f" ({where})"
    elif failures and control is None:
        verdict = "confirmed"
        note = "CUDA tensors pickled into spawn workers break them: " + "; ".join(failures)
        note += f" ({where})"
    elif failures:
        verdict = "error"
        note = f"spawn workers fail even without CUDA tensors: {control}"
    else:
        verdict = "not-reproduced"
        note = (
            "CUDA tensors kept their values through _share_cuda_(), a spawn worker start"
            f" and a bound-method collate_fn ({where})"
        )
    return {
        "verdict": verdict,
        "summary": note,
        "rules": {"TT103": verdict},
        "rule_evidence": {"TT103": note},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
