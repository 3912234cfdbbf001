"""Probe experiment `pickle-reach`: what a bound-method collate_fn drags along.

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. Under spawn, a DataLoader
pickles its collate_fn into each worker; a bound method pickles its whole
object. Counts the tensors that went through torch's `reduce_tensor` for
`collate_fn=trainer.collate` (a trainer holding a 2-layer model) and for a
tokenizer's method (no tensors), and whether the model's weights became
shared in the parent. With CUDA, also checks that a CUDA model's weights
read back unchanged afterwards. Confirms TT104 when the model's tensors
were sent.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _common import error_line  # noqa: E402
from torch.multiprocessing import reductions  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

WORKERS = 2
LOADER_TIMEOUT_S = 60
SENT = {"tensors": 0, "bytes": 0}


def _counting(tensor: torch.Tensor) -> Any:
    SENT["tensors"] += 1
    SENT["bytes"] += tensor.numel() * tensor.element_size()
    return reductions.reduce_tensor(tensor)


class Trainer:
    def __init__(self, device: str) -> None:
        self.model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 4)).to(device)

    def collate(self, batch: list[int]) -> torch.Tensor:
        return torch.tensor(batch)


class Tokenizer:
    def __init__(self) -> None:
        self.vocab = {"a": 1}

    def collate(self, batch: list[int]) -> torch.Tensor:
        return torch.tensor(batch)


def _run(holder: Any) -> dict[str, Any]:
    SENT.update(tensors=0, bytes=0)
    model = getattr(holder, "model", None)
    weight = model[0].weight if model is not None else None
    snapshot = weight.detach().cpu().clone() if weight is not None else None
    shared_before = weight.is_shared() if weight is not None else None
    loader: DataLoader[int] = DataLoader(
        list(range(8)),  # type: ignore[arg-type]
        batch_size=4,
        num_workers=WORKERS,
        collate_fn=holder.collate,
        multiprocessing_context="spawn",
        timeout=LOADER_TIMEOUT_S,
    )
    row: dict[str, Any] = {}
    try:
        row["batches"] = len([b for b in loader])
    except Exception as exc:
        row["error"] = error_line(exc)
    row["tensors_sent"] = SENT["tensors"]
    row["bytes_sent"] = SENT["bytes"]
    if weight is not None and snapshot is not None:
        row["weights_shared_before"] = shared_before
        row["weights_shared_after"] = weight.is_shared()
        row["weights_unchanged"] = bool(torch.equal(weight.detach().cpu(), snapshot))
    return row


def main() -> dict[str, Any]:
    from multiprocessing.reduction import ForkingPickler

    # torch registers reduce_tensor for these; count each call, then delegate.
    for cls in (torch.Tensor, torch.nn.parameter.Parameter):
        ForkingPickler.register(cls, _counting)
    evidence: dict[str, Any] = {"torch": torch.__version__, "num_workers": WORKERS}
    evidence["cpu_trainer"] = _run(Trainer("cpu"))
    evidence["tokenizer"] = _run(Tokenizer())
    if torch.cuda.is_available():
        evidence["cuda_trainer"] = _run(Trainer("cuda"))
    cpu = evidence["cpu_trainer"]
    if "error" in cpu:
        return {
            "verdict": "error",
            "summary": f"the spawn DataLoader failed: {cpu['error']}",
            "rules": {"TT104": "error"},
            "evidence": evidence,
        }
    params = sum(1 for _ in Trainer("cpu").model.parameters())
    line = (
        f"spawn, {WORKERS} workers: collate_fn=trainer.collate sent {cpu['tensors_sent']} tensors "
        f"through reduce_tensor ({params} parameters x {WORKERS} workers), the parent's weights "
        f"became shared ({cpu['weights_shared_before']} -> {cpu['weights_shared_after']}); "
        f"a tokenizer's method sent {evidence['tokenizer']['tensors_sent']}"
    )
    cuda = evidence.get("cuda_trainer")
    if cuda is not None:
        state = "unchanged" if cuda.get("weights_unchanged") else "CHANGED"
        line += f"; a CUDA model's weights read back {state}"
    verdict = "confirmed" if cpu["tensors_sent"] > 0 else "not-reproduced"
    return {
        "verdict": verdict,
        "summary": line,
        "rules": {"TT104": verdict},
        "rule_evidence": {"TT104": line},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
