"""What the loss checks of `torchtrap run` add per call, in one process:
`F.mse_loss` plain and through the checks' wrapper, and the checks' work at
one `backward()` (`_before` + `_after`, the backward itself left out), in
short interleaved blocks; the fastest block of each (load only adds).

    .venv/bin/python bench/run_loss_call_cost.py [--blocks 300] [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def _block(function: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=300)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server")
    sys.path.insert(0, os.path.abspath(here))
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    plain_mse = F.mse_loss
    from torchtrap.runtime_hooks import events, losses

    events.configure(tempfile.mkdtemp(prefix="torchtrap-loss-cost-"))
    events.add_skip_dir(os.path.dirname(os.path.abspath(str(torch.__file__))))
    losses.install(torch)
    checked_mse = F.mse_loss
    x = torch.randn(64, 10, requires_grad=True)
    y = torch.randn(64, 10)
    loss = plain_mse(x, y)

    def at_backward() -> None:
        losses._before(loss)
        losses._after(loss)

    cases = {
        "mse_loss plain": lambda: plain_mse(x, y),
        "mse_loss checked": lambda: checked_mse(x, y),
        "checks at one backward": at_backward,
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.blocks):
        for name, function in cases.items():
            best[name] = min(best[name], _block(function, args.calls))
    plain, checked = best["mse_loss plain"] * 1e6, best["mse_loss checked"] * 1e6
    print(
        f"mse_loss {plain:.2f} -> {checked:.2f} us ({checked - plain:+.2f} us);"
        f" checks at one backward {best['checks at one backward'] * 1e6:.2f} us;"
        f" {args.blocks} blocks of {args.calls} calls; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
