"""Probe experiment `worker-rng`: do DataLoader workers share RNG streams?

Runs in the user's interpreter (stdlib + torch, numpy optional), never imports
torchtrap. Prints one JSON object on its last stdout line. Confirms TT101
(generator object stored on a Dataset) and reports TT102 (global np.random,
a bug on torch < 1.9 only). `--start-method NAME` exists for tests only.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import sys
from typing import Any

import torch
from _common import error_line
from torch.utils.data import DataLoader, Dataset, get_worker_info

LOADER_TIMEOUT_S = 30  # a worker that sends nothing for this long is reported, not waited on

try:
    import numpy as np
except ImportError:  # numpy is optional: its kinds are skipped
    np = None  # type: ignore[assignment]

ITEMS = 8  # 4 items per worker
WORKERS = 2
EPOCHS = 2
HIGH = 2**31 - 1

GLOBAL_NUMPY = "global np.random"
STORED_TORCH = "stored torch.Generator"


def _kinds() -> list[str]:
    kinds = []
    if np is not None:
        kinds.append(GLOBAL_NUMPY)
    kinds += ["global random", "global torch"]
    if np is not None:
        kinds += ["stored np.random.default_rng", "stored np.random.RandomState"]
    kinds.append("stored random.Random")
    return kinds


class RngDataset(Dataset):
    """Draws one number per RNG kind for each item, tagged with the worker id."""

    def __init__(self, kinds: list[str]) -> None:
        self.kinds = kinds
        # Seeded in the parent, as users do in __init__; the workers get copies.
        if np is not None:
            self.default_rng = np.random.default_rng(0)
            self.random_state = np.random.RandomState(123)
        self.py_random = random.Random(0)
        if STORED_TORCH in kinds:
            self.torch_gen = torch.Generator().manual_seed(0)

    def __len__(self) -> int:
        return ITEMS

    def _draw(self, kind: str) -> int:
        if kind == GLOBAL_NUMPY:
            return int(np.random.randint(0, HIGH))
        if kind == "global random":
            return random.randint(0, HIGH)
        if kind == "global torch":
            return int(torch.randint(0, HIGH, (1,)).item())
        if kind == "stored np.random.default_rng":
            return int(self.default_rng.integers(0, HIGH))
        if kind == "stored np.random.RandomState":
            return int(self.random_state.randint(0, HIGH))
        if kind == "stored random.Random":
            return self.py_random.randint(0, HIGH)
        return int(torch.randint(0, HIGH, (1,), generator=self.torch_gen).item())

    def __getitem__(self, index: int) -> list[int]:
        info = get_worker_info()
        worker = info.id if info is not None else -1
        return [worker] + [self._draw(kind) for kind in self.kinds]


def _one_epoch(kinds: list[str], context: str | None) -> dict[str, dict[int, list[int]]]:
    """kind -> worker id -> the numbers that worker drew, in order."""
    loader = DataLoader(
        RngDataset(kinds),
        batch_size=None,  # no collation: items come back as plain lists
        num_workers=WORKERS,
        multiprocessing_context=context,
        timeout=LOADER_TIMEOUT_S,
    )
    streams: dict[str, dict[int, list[int]]] = {kind: {} for kind in kinds}
    for item in loader:
        worker = int(item[0])
        for i, kind in enumerate(kinds):  # no zip(strict=): runs on Python < 3.10 too
            streams[kind].setdefault(worker, []).append(int(item[i + 1]))
    return streams


def _compare(kinds: list[str], context: str | None) -> dict[str, dict[str, Any]]:
    epochs = [_one_epoch(kinds, context) for _ in range(EPOCHS)]
    result = {}
    for kind in kinds:
        first, second = epochs[0][kind], epochs[1][kind]
        per_worker = list(first.values())
        identical = len(per_worker) == WORKERS and all(s == per_worker[0] for s in per_worker)
        result[kind] = {
            "stored": kind.startswith("stored"),
            "across_workers": "identical" if identical else "distinct",
            "next_epoch": "repeats" if first == second else "differs",
            "worker0_epoch1": first.get(0, [])[:4],
            "worker1_epoch1": first.get(1, [])[:4],
        }
    return result


def _is_bug(row: dict[str, Any]) -> bool:
    return row.get("across_workers") == "identical" or row.get("next_epoch") == "repeats"


def main() -> dict[str, Any]:
    context = None
    if "--start-method" in sys.argv:
        context = sys.argv[sys.argv.index("--start-method") + 1]
    start_method = context or multiprocessing.get_start_method()
    kinds = _kinds()
    results = _compare(kinds, context)
    # Alone, because under spawn/forkserver unpickling a torch.Generator in the
    # worker crashes it (pytorch #146828) and must not take the other kinds down.
    try:
        results.update(_compare([STORED_TORCH], context))
    except Exception as exc:  # the crash is the evidence
        results[STORED_TORCH] = {"stored": True, "error": error_line(exc)}

    where = f"torch {torch.__version__}, start method {start_method}"
    stored_bad = [k for k, row in results.items() if row["stored"] and _is_bug(row)]
    crashed = [k for k, row in results.items() if "error" in row]
    rules: dict[str, str] = {}
    notes: dict[str, str] = {}
    if stored_bad or crashed:
        rules["TT101"] = "confirmed"
        parts = []
        if stored_bad:
            names = ", ".join(k.replace("stored ", "") for k in stored_bad)
            parts.append(
                f"{names} stored on a Dataset gave identical streams in {WORKERS} workers"
                " and repeated them next epoch"
                if all(
                    results[k]["across_workers"] == "identical"
                    and results[k]["next_epoch"] == "repeats"
                    for k in stored_bad
                )
                else f"{names} stored on a Dataset repeated across workers or epochs"
            )
        if crashed:
            parts.append("a stored torch.Generator crashed the workers")
        notes["TT101"] = "; ".join(parts) + f" ({where})"
    else:
        rules["TT101"] = "not-reproduced"
        notes["TT101"] = f"stored generators gave distinct streams per worker ({where})"
    if GLOBAL_NUMPY in results:
        row = results[GLOBAL_NUMPY]
        if _is_bug(row):
            rules["TT102"] = "confirmed"
            notes["TT102"] = (
                f"global np.random: {row['across_workers']} across workers, "
                f"{row['next_epoch']} next epoch ({where})"
            )
        else:
            rules["TT102"] = "not-reproduced"
            notes["TT102"] = (
                f"global np.random gave distinct streams per worker and new ones each epoch"
                f" ({where}; torch seeds numpy per worker since 1.9)"
            )
    else:
        rules["TT102"] = "skipped"
        notes["TT102"] = "numpy is not installed in this interpreter"

    verdict = "confirmed" if "confirmed" in rules.values() else "not-reproduced"
    same = [k.replace("stored ", "") for k in stored_bad]
    summary = (
        f"stored {', '.join(same)}: identical across workers" if same else "stored generators ok"
    )
    if crashed:
        summary += "; stored torch.Generator crashed the workers"
    if GLOBAL_NUMPY in results:
        summary += f"; global np.random {results[GLOBAL_NUMPY]['across_workers']}"
    return {
        "verdict": verdict,
        "summary": f"{summary} ({where})",
        "rules": rules,
        "rule_evidence": notes,
        "evidence": {
            "torch": torch.__version__,
            "numpy": None if np is None else np.__version__,
            "start_method": start_method,
            "num_workers": WORKERS,
            "items_per_epoch": ITEMS,
            "epochs": EPOCHS,
            "kinds": results,
        },
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
