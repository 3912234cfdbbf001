"""Probe experiment `iterable-duplicates`: does every worker yield the whole stream?

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. An IterableDataset that
never consults `get_worker_info()` yields `range(10)` through
`DataLoader(batch_size=4, num_workers=2)` (default start method): each
worker runs `__iter__` on its own copy. Confirms TT105 when items repeat.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

# The helper sits next to this script; put its folder first so the import
# works also when the interpreter runs with PYTHONSAFEPATH=1.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _common import error_line  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset  # noqa: E402

LOADER_TIMEOUT_S = 30
ITEMS = 10
WORKERS = 2
BATCH = 4


class Stream(IterableDataset):
    def __iter__(self) -> Iterator[int]:
        return iter(range(ITEMS))


def main() -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "torch": torch.__version__,
        "start_method": multiprocessing.get_start_method(),
        "items_in_dataset": ITEMS,
        "num_workers": WORKERS,
        "batch_size": BATCH,
        "expected_batches": -(-ITEMS // BATCH),
    }
    loader = DataLoader(Stream(), batch_size=BATCH, num_workers=WORKERS, timeout=LOADER_TIMEOUT_S)
    try:
        batches = [batch.tolist() for batch in loader]
    except Exception as exc:
        evidence["error"] = error_line(exc)
        return {
            "verdict": "error",
            "summary": f"the DataLoader failed: {evidence['error']}",
            "rules": {"TT105": "error"},
            "evidence": evidence,
        }
    items = [x for batch in batches for x in batch]
    counts = Counter(items)
    duplicates = sum(n - 1 for n in counts.values())
    evidence.update(
        {
            "batches": len(batches),
            "items_received": len(items),
            "distinct_items": len(counts),
            "duplicates": duplicates,
        }
    )
    line = (
        f"{ITEMS} items, {WORKERS} workers, batch_size={BATCH}: {len(batches)} batches, "
        f"{len(items)} items ({duplicates} duplicates; {evidence['start_method']})"
    )
    verdict = "confirmed" if duplicates else "not-reproduced"
    return {
        "verdict": verdict,
        "summary": line,
        "rules": {"TT105": verdict},
        "rule_evidence": {"TT105": line},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
