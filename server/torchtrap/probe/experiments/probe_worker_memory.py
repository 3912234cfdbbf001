"""Probe experiment `worker-memory`: do workers copy a dataset's Python objects?

Runs in the user's interpreter (stdlib + torch + numpy), never imports
torchtrap. Prints one JSON object on its last stdout line. The same
annotations (N dicts, as `json.load` gives them) are held once as Python
objects and once as numpy arrays; each dataset goes through one shuffled
epoch with 2 workers (default start method) kept alive by
`persistent_workers`, and each worker's private memory (USS) and PSS growth
is read from `/proc/<pid>/smaps_rollup` after the epoch. Also reports the machine's
available memory, the cgroup memory limit, and how many workers would fit
for 1 GiB of such objects. Confirms TT107 when the objects' workers grow
well beyond the arrays' ones. Linux only.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _common import error_line  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None  # type: ignore[assignment]

N = 200_000
WORKERS = 2
LOADER_TIMEOUT_S = 60
MIB = 2**20


def _rollup(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 3 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return {
        "uss": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
        "pss": fields.get("Pss", 0),
    }


class Objects(Dataset):
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[int, int]:
        item = self.items[index]
        return os.getpid(), len(item["file"]) + item["label"]


class Arrays(Dataset):
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.files = np.array([it["file"] for it in items])
        self.labels = np.array([it["label"] for it in items])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return os.getpid(), len(self.files[index]) + int(self.labels[index])


def _epoch(dataset: Dataset) -> dict[str, list[float]]:
    loader = DataLoader(
        dataset,
        batch_size=2000,
        shuffle=True,
        num_workers=WORKERS,
        persistent_workers=True,
        timeout=LOADER_TIMEOUT_S,
    )
    batches = iter(loader)
    pids: set[int] = set()
    while len(pids) < WORKERS:  # one batch from each: every worker has started
        got, _ = next(batches)
        pids.update(got.tolist())
    before = {pid: _rollup(pid) for pid in pids}
    for _ in batches:
        pass
    after = {pid: _rollup(pid) for pid in pids}
    del batches, loader
    order = sorted(pids)
    uss = [(after[p]["uss"] - before[p]["uss"]) / MIB for p in order]
    pss = [(after[p]["pss"] - before[p]["pss"]) / MIB for p in order]
    return {
        # Private memory after the epoch: a worker's garbage collection may
        # copy every dict's page before its first batch, so growth alone
        # understates what the objects cost.
        "uss_after_mib": [round(after[p]["uss"] / MIB, 1) for p in order],
        "uss_growth_mib": [round(x, 1) for x in uss],
        "pss_growth_mib": [round(x, 1) for x in pss],
    }


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
        return None  # "max": no limit
    return None


def main() -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "torch": torch.__version__,
        "start_method": multiprocessing.get_start_method(),
        "items": N,
        "num_workers": WORKERS,
        "available_mib": None,
        "cgroup_limit_mib": None,
    }
    if not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
        return {
            "verdict": "skipped",
            "summary": "no /proc/<pid>/smaps_rollup (Linux only)",
            "rules": {"TT107": "skipped"},
            "evidence": evidence,
        }
    if np is None:
        return {
            "verdict": "skipped",
            "summary": "numpy is not installed in this interpreter",
            "rules": {"TT107": "skipped"},
            "evidence": evidence,
        }
    available, limit = _meminfo_available(), _cgroup_limit()
    evidence["available_mib"] = None if available is None else available // MIB
    evidence["cgroup_limit_mib"] = None if limit is None else limit // MIB
    import tracemalloc

    tracemalloc.start()
    items = [{"file": f"images/{i:08d}.jpg", "label": i % 1000} for i in range(N)]
    objects_mib = tracemalloc.get_traced_memory()[0] / MIB
    tracemalloc.stop()
    evidence["objects_mib"] = round(objects_mib, 1)
    try:
        evidence["python_objects"] = _epoch(Objects(items))
        evidence["numpy_arrays"] = _epoch(Arrays(items))
    except Exception as exc:
        evidence["error"] = error_line(exc)
        return {
            "verdict": "error",
            "summary": f"the DataLoader failed: {evidence['error']}",
            "rules": {"TT107": "error"},
            "evidence": evidence,
        }
    objects = max(evidence["python_objects"]["uss_after_mib"])
    arrays = max(evidence["numpy_arrays"]["uss_after_mib"])
    # What a worker copied because of the objects: its private memory beyond
    # the same worker's with arrays, per MiB of objects.
    ratio = max(objects - arrays, 0.0) / objects_mib if objects_mib else 0.0
    evidence["growth_per_mib_of_objects"] = round(ratio, 3)
    known = [x for x in (available, limit) if x is not None]
    budget = min(known) if known else None
    if budget is not None and ratio > 0:
        evidence["max_workers_for_1_gib_of_objects"] = int(budget / (ratio * 1024 * MIB))
    line = (
        f"{N:,} dicts ({objects_mib:.0f} MiB of objects), {WORKERS} workers, one shuffled epoch: "
        f"each worker held up to {objects:.0f} MiB of private memory; with numpy arrays "
        f"{arrays:.0f} MiB"
    )
    if budget is not None and "max_workers_for_1_gib_of_objects" in evidence:
        line += (
            f"; with {budget // MIB:,} MiB available, about "
            f"{evidence['max_workers_for_1_gib_of_objects']} workers fit for 1 GiB of objects"
        )
    verdict = "confirmed" if objects - arrays > max(0.25 * objects_mib, 5.0) else "not-reproduced"
    return {
        "verdict": verdict,
        "summary": line,
        "rules": {"TT107": verdict},
        "rule_evidence": {"TT107": line},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
