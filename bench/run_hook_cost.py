"""What `torchtrap run`'s hooks add to one training step, measured in one
process so that a loaded machine disturbs it least.

Installs the hooks (`runtime_hooks`, as the launcher does), then times single
steps of `bench/run_overhead.py`'s model (zero_grad, forward, backward,
SGD step; no DataLoader) in blocks that alternate hooks on (installed) and
off (torch's own methods and hook tables put back), and reports the fastest
and the median step of each: an uninterrupted step shows what the hooks cost
per step, which a subprocess timing on a busy machine cannot resolve.

    .venv/bin/python bench/run_hook_cost.py [--server PATH] [--blocks 40] [--steps 50]
        [--hooks all|losses|others] [--loss cross_entropy|mse]

`--hooks losses` installs only the loss checks (issue 36 items 1-3: a
finiteness test and a weak reference to the graph at each backward, a shape
and dtype comparison at each regression loss), `others` all but those;
`--loss mse` trains on `mse_loss`, whose wrapper the loss checks add.

`--server` is the folder holding the `torchtrap` package whose hooks to
measure (another checkout's `server/`, to compare builds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any


def _spots(torch: Any) -> list[Any]:
    """Everything the hooks patch: classes and modules whose attributes change."""
    import torch.nn.modules.module
    import torch.optim.optimizer

    found: list[Any] = [
        torch.nn.Module,
        torch.optim.Optimizer,
        torch.Tensor,
        torch.utils.data.DataLoader,
        torch.nn.utils,
        torch.nn.functional,
        getattr(torch.nn.utils, "clip_grad", None),
    ]
    grad_mode = torch.autograd.grad_mode
    found += [getattr(grad_mode, n, None) for n in ("set_grad_enabled", "enable_grad")]
    found += [getattr(grad_mode, n, None) for n in ("inference_mode", "no_grad")]
    scaler = getattr(getattr(getattr(torch, "amp", None), "grad_scaler", None), "GradScaler", None)
    found.append(scaler)
    try:
        from torch.utils.data.distributed import DistributedSampler

        found.append(DistributedSampler)
    except ImportError:
        pass
    return [s for s in found if s is not None]


def _tables(torch: Any) -> list[dict[Any, Any]]:
    import torch.nn.modules.module as module
    import torch.optim.optimizer as optimizer

    names = ("_global_forward_pre_hooks", "_global_forward_hooks")
    tables = [getattr(module, n) for n in names]
    names = ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks")
    return tables + [getattr(optimizer, n) for n in names]


def main() -> None:
    parser = argparse.ArgumentParser()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server")
    parser.add_argument("--server", default=here)
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--hooks", choices=("all", "losses", "others"), default="all")
    parser.add_argument("--loss", choices=("cross_entropy", "mse"), default="cross_entropy")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.server))
    import torch
    from torch import nn

    spots = _spots(torch)
    tables = _tables(torch)
    plain = [dict(vars(s)) for s in spots]
    plain_tables = [dict(t) for t in tables]
    from torchtrap.runtime_hooks import events, loaders, training

    events.configure(tempfile.mkdtemp(prefix="torchtrap-hook-cost-"))
    events.add_skip_dir(os.path.dirname(os.path.abspath(str(torch.__file__))))
    if args.hooks != "losses":
        loaders.install(torch)
        training.install(torch, 0)
    if args.hooks != "others":
        from torchtrap.runtime_hooks import losses

        losses.install(torch)
    hooked = [dict(vars(s)) for s in spots]
    hooked_tables = [dict(t) for t in tables]
    changed = [
        [n for n in set(before) | set(after) if before.get(n) is not after.get(n)]
        for before, after in zip(plain, hooked, strict=True)
    ]

    def switch(on: bool) -> None:
        nonlocal hooked_tables
        if not on:  # the hooks add and remove their forward hook: keep its state
            hooked_tables = [dict(t) for t in tables]
        for spot, before, after, names in zip(spots, plain, hooked, changed, strict=True):
            for name in names:
                value = (after if on else before).get(name)
                if value is None:
                    if name in vars(spot):
                        delattr(spot, name)
                else:
                    setattr(spot, name, value)
        for table, before, after in zip(tables, plain_tables, hooked_tables, strict=True):
            table.clear()
            table.update(after if on else before)

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Linear(64, 256),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(256, 256),
        nn.BatchNorm1d(256),
        nn.ReLU(),
        nn.Linear(256, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    target = torch.nn.functional.one_hot(y, 10).float()

    def loss_of(out: Any) -> Any:
        if args.loss == "mse":
            return nn.functional.mse_loss(out, target)
        return nn.functional.cross_entropy(out, y)

    times: dict[bool, list[float]] = {False: [], True: []}
    for block in range(args.blocks + 2):
        for on in (False, True) if block % 2 else (True, False):
            switch(on)
            for _ in range(args.steps):
                started = time.perf_counter()
                opt.zero_grad()
                loss_of(model(x)).backward()
                opt.step()
                if block >= 2:  # the first blocks warm up (and let the hooks learn)
                    times[on].append(time.perf_counter() - started)
            model.eval()
            with torch.no_grad():  # an evaluation each block: the no_grad path runs too
                model(x)
            model.train()
    switch(False)
    off, on_ = times[False], times[True]
    fast_off, fast_on = min(off) * 1e6, min(on_) * 1e6
    med_off, med_on = statistics.median(off) * 1e6, statistics.median(on_) * 1e6
    print(
        f"hooks ({args.hooks}, {args.loss}) from {os.path.abspath(args.server)}:"
        f" {len(off)} steps each;"
        f" fastest step {fast_off:.1f} -> {fast_on:.1f} us ({fast_on - fast_off:+.1f} us,"
        f" {100 * (fast_on / fast_off - 1):+.1f}%);"
        f" median {med_off:.1f} -> {med_on:.1f} us ({100 * (med_on / med_off - 1):+.1f}%);"
        f" load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
