"""Probe experiment `scaled-clip`: what does gradient clipping see before
`GradScaler.unscale_`?

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. One step of a linear layer
with `torch.amp.GradScaler("cpu")`: `clip_grad_norm_(..., max_norm=1.0)` right
after `scaler.scale(loss).backward()` (TT217's pattern), and again after
`scaler.unscale_(optimizer)`. Confirms TT217 when the clip sees the scaled
norm and leaves the real gradients far below max_norm.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _common import error_line  # noqa: E402

MAX_NORM = 1.0


def _step(unscale_first: bool) -> dict[str, float]:
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(32, 8), 10 * torch.randn(32, 1)
    scale = float(scaler.get_scale())
    loss = torch.nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    if unscale_first:
        scaler.unscale_(optimizer)
    seen = float(torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM))
    scaler.step(optimizer)
    scaler.update()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    used = float(torch.norm(torch.stack([g.norm() for g in grads])))
    return {"scale": scale, "norm_seen_by_clip": seen, "norm_used_by_optimizer": used}


def main() -> dict[str, Any]:
    evidence: dict[str, Any] = {"torch": torch.__version__, "max_norm": MAX_NORM}
    try:
        if not hasattr(torch, "amp") or not hasattr(torch.amp, "GradScaler"):
            raise RuntimeError("torch.amp.GradScaler is not in this torch")
        evidence["clip_before_unscale"] = _step(False)
        evidence["clip_after_unscale"] = _step(True)
    except Exception as exc:
        evidence["error"] = error_line(exc)
        return {
            "verdict": "error",
            "summary": f"the GradScaler step failed: {evidence['error']}",
            "rules": {"TT217": "error"},
            "evidence": evidence,
        }
    bad, good = evidence["clip_before_unscale"], evidence["clip_after_unscale"]
    line = (
        f"scale {bad['scale']:.0f}: the clip saw a norm of {bad['norm_seen_by_clip']:,.1f} "
        f"(true {good['norm_seen_by_clip']:.2f}); the optimizer got "
        f"{bad['norm_used_by_optimizer']:.3g} instead of {good['norm_used_by_optimizer']:.3g}"
    )
    confirmed = bad["norm_used_by_optimizer"] < 0.01 * good["norm_used_by_optimizer"]
    verdict = "confirmed" if confirmed else "not-reproduced"
    return {
        "verdict": verdict,
        "summary": line,
        "rules": {"TT217": verdict},
        "rule_evidence": {"TT217": line},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
