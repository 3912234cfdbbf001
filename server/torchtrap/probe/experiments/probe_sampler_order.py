"""Probe experiment `sampler-order`: does a DistributedSampler reshuffle
between epochs without `set_epoch`?

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. Rank 0 of a
`DistributedSampler(range(16), num_replicas=2, rank=0)` (no process group is
needed to build it) is iterated for three epochs without `set_epoch`, then
for three epochs with `set_epoch(epoch)`. Confirms TT108 when the epochs
without it repeat one order.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _common import error_line  # noqa: E402

ITEMS = 16
EPOCHS = 3


def main() -> dict[str, Any]:
    evidence: dict[str, Any] = {"torch": torch.__version__, "items": ITEMS, "epochs": EPOCHS}
    try:
        from torch.utils.data import DistributedSampler, TensorDataset

        dataset = TensorDataset(torch.arange(ITEMS))
        sampler: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=2, rank=0)
        without = [list(sampler) for _ in range(EPOCHS)]
        with_epoch = []
        for epoch in range(EPOCHS):
            sampler.set_epoch(epoch)
            with_epoch.append(list(sampler))
    except Exception as exc:
        evidence["error"] = error_line(exc)
        return {
            "verdict": "error",
            "summary": f"the sampler failed: {evidence['error']}",
            "rules": {"TT108": "error"},
            "evidence": evidence,
        }
    distinct_without = len({tuple(o) for o in without})
    distinct_with = len({tuple(o) for o in with_epoch})
    evidence.update(
        {
            "orders_without_set_epoch": without,
            "orders_with_set_epoch": with_epoch,
            "distinct_without_set_epoch": distinct_without,
            "distinct_with_set_epoch": distinct_with,
        }
    )
    line = (
        f"rank 0 of 2, {EPOCHS} epochs: {distinct_without} distinct order(s) without set_epoch "
        f"(first {without[0]}), {distinct_with} with set_epoch(epoch)"
    )
    verdict = "confirmed" if distinct_without == 1 else "not-reproduced"
    return {
        "verdict": verdict,
        "summary": line,
        "rules": {"TT108": verdict},
        "rule_evidence": {"TT108": line},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
