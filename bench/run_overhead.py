"""Overhead of `torchtrap run` on a small CPU training loop.

Runs the same seeded training script alternately as `python script.py` and
`torchtrap run script.py`, N times each, and compares the training loop's
own CPU time (its DataLoader workers included) and wall time, both measured
inside the script so that interpreter start-up and `import torch` (the same
in both) do not dilute the ratio, and the whole wall time. Each is given as
the fastest of N runs (on a shared machine load only ever adds) and the
median. The fastest single step of each run (wall time, the DataLoader's
fetch included) is the number that load disturbs least: an uninterrupted
step shows what the hooks add per step. Two loops: a DataLoader with 2
workers (the worker checks), and one with no workers (the forward and step
hooks). With `--epochs`, each loop runs that many epochs (DataLoader workers
start again each epoch, the worker checks with them): issue 36 measured
`--configs 0x2,2x2,2x6` (workers x epochs). The load average is printed with
the results. The plain script runs in a session of its own, as `torchtrap
run` starts the script.

    .venv/bin/python bench/run_overhead.py [--repeat 5] [--steps 400] [--configs 2x1,0x1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SCRIPT = """
import resource, sys, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
STEPS, WORKERS, EPOCHS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
model = nn.Sequential(
    nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(),
    nn.Linear(256, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(64 * STEPS, 64), torch.randint(0, 10, (64 * STEPS,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=WORKERS)
def cpu():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    started, cpu_started = time.perf_counter(), cpu()
    fastest = float("inf")
    step_started = time.perf_counter()
    for epoch in range(EPOCHS):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            now = time.perf_counter()
            fastest, step_started = min(fastest, now - step_started), now
    model.eval()
    with torch.no_grad():
        model(x)
    # CPU seconds of the loop, the exited DataLoader workers included.
    print("loop_s", time.perf_counter() - started, cpu() - cpu_started, loss.item(), fastest)
"""


# loop wall, loop CPU, wall, loss, fastest step, CPU of the whole process tree (the CLI,
# the launcher's watchdog, the interpreter start-up and import torch included)
Result = tuple[float, float, float, str, float, float]


def _tree_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _once(command: list[str], cwd: str) -> Result:
    started, cpu_started = time.perf_counter(), _tree_cpu()
    # Its own session, as the launcher gives the script: with the kernel's
    # autogroup scheduling a session is scheduled as one group, so a plain
    # script left in ours would compete with whatever else runs here.
    proc = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=True, start_new_session=True
    )
    wall, tree = time.perf_counter() - started, _tree_cpu() - cpu_started
    line = next(x for x in proc.stdout.splitlines() if x.startswith("loop_s"))
    _, loop, cpu, loss, fastest = line.split()
    return float(loop), float(cpu), wall, loss, float(fastest), tree


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _best(results: dict[str, list[Result]], index: int) -> dict[str, float]:
    return {k: min(float(r[index]) for r in v) for k, v in results.items()}


def _median(results: dict[str, list[Result]], index: int) -> dict[str, float]:
    return {k: statistics.median(float(r[index]) for r in v) for k, v in results.items()}


def _change(before: float, after: float) -> str:
    return f"{100 * (after / before - 1):+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400, help="optimizer steps per epoch")
    parser.add_argument(
        "--configs", default="2x1,0x1", help="comma-separated WORKERSxEPOCHS (default 2x1,0x1)"
    )
    args = parser.parse_args()
    configs = [tuple(int(n) for n in c.split("x")) for c in args.configs.split(",")]
    env_python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "train.py").write_text(textwrap.dedent(SCRIPT))
        for workers, epochs in configs:
            shape = [str(args.steps), str(workers), str(epochs)]
            plain = [env_python, "train.py", *shape]
            hooked = [
                env_python,
                "-m",
                "torchtrap",
                "run",
                "train.py",
                *shape,
            ]
            results: dict[str, list[Result]] = {"plain": [], "run": []}
            loads = [_load()]
            for _ in range(args.repeat):  # alternate: the machine's load drifts
                results["plain"].append(_once(plain, folder))
                results["run"].append(_once(hooked, folder))
                loads.append(_load())
            losses = {r[3] for rs in results.values() for r in rs}

            cpu, loop, wall, step = (_best(results, i) for i in (1, 0, 2, 4))
            cpu_median = _median(results, 1)
            wall_median = _median(results, 2)
            tree, tree_median = _best(results, 5), _median(results, 5)
            print(
                f"workers={workers} epochs={epochs} steps/epoch={args.steps}"
                f" repeat={args.repeat}:"
                f" loop CPU best {cpu['plain']:.3f} s -> {cpu['run']:.3f} s"
                f" ({_change(cpu['plain'], cpu['run'])}),"
                f" median {cpu_median['plain']:.3f} s -> {cpu_median['run']:.3f} s"
                f" ({_change(cpu_median['plain'], cpu_median['run'])});"
                f" fastest step {1e3 * step['plain']:.3f} ms -> {1e3 * step['run']:.3f} ms"
                f" ({_change(step['plain'], step['run'])});"
                f" loop wall best {loop['plain']:.3f} s -> {loop['run']:.3f} s"
                f" ({_change(loop['plain'], loop['run'])});"
                f" wall best {wall['plain']:.2f} s -> {wall['run']:.2f} s"
                f" ({_change(wall['plain'], wall['run'])}),"
                f" median {wall_median['plain']:.2f} s -> {wall_median['run']:.2f} s"
                f" ({_change(wall_median['plain'], wall_median['run'])});"
                f" whole CPU best {tree['plain']:.2f} s -> {tree['run']:.2f} s"
                f" ({_change(tree['plain'], tree['run'])}),"
                f" median {tree_median['plain']:.2f} s -> {tree_median['run']:.2f} s"
                f" ({_change(tree_median['plain'], tree_median['run'])});"
                f" final losses identical: {len(losses) == 1};"
                f" load average {' '.join(loads)}"
            )


if __name__ == "__main__":
    main()
