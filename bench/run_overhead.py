"""Overhead of `torchtrap run` on a small CPU training loop.

Runs the same seeded training script alternately as `python script.py` and
`torchtrap run script.py`, N times each, and compares the training loop's
own CPU time (its DataLoader workers included) and wall time, both measured
inside the script so that interpreter start-up and `import torch` (the same
in both) do not dilute the ratio, and the whole wall time. Each number is
the fastest of N runs: on a shared machine load only ever adds. Two loops:
a DataLoader with 2 workers (the worker checks), and one with no workers
(the forward and step hooks, on every module call and step).

    .venv/bin/python bench/run_overhead.py [--repeat 5] [--steps 400]
"""

from __future__ import annotations

import argparse
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
STEPS, WORKERS = int(sys.argv[1]), int(sys.argv[2])
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
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        model(x)
    # CPU seconds of the loop, the exited DataLoader workers included.
    print("loop_s", time.perf_counter() - started, cpu() - cpu_started, loss.item())
"""


def _once(command: list[str], cwd: str) -> tuple[float, float, float, str]:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    line = next(x for x in proc.stdout.splitlines() if x.startswith("loop_s"))
    _, loop, cpu, loss = line.split()
    return float(loop), float(cpu), wall, loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    env_python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "train.py").write_text(textwrap.dedent(SCRIPT))
        for workers in (2, 0):
            plain = [env_python, "train.py", str(args.steps), str(workers)]
            hooked = [
                env_python,
                "-m",
                "torchtrap",
                "run",
                "train.py",
                str(args.steps),
                str(workers),
            ]
            results: dict[str, list[tuple[float, float, float, str]]] = {"plain": [], "run": []}
            for _ in range(args.repeat):  # alternate: the machine's load drifts
                results["plain"].append(_once(plain, folder))
                results["run"].append(_once(hooked, folder))
            losses = {r[3] for rs in results.values() for r in rs}
            # The fastest of N: on a shared machine the load only ever adds time.
            loop = {k: min(r[0] for r in v) for k, v in results.items()}
            cpu = {k: min(r[1] for r in v) for k, v in results.items()}
            wall = {k: min(r[2] for r in v) for k, v in results.items()}
            print(
                f"workers={workers} steps={args.steps} repeat={args.repeat}:"
                f" loop CPU {cpu['plain']:.3f} s -> {cpu['run']:.3f} s"
                f" ({100 * (cpu['run'] / cpu['plain'] - 1):+.1f}%),"
                f" loop wall {loop['plain']:.3f} s -> {loop['run']:.3f} s"
                f" ({100 * (loop['run'] / loop['plain'] - 1):+.1f}%),"
                f" wall {wall['plain']:.2f} s -> {wall['run']:.2f} s"
                f" ({100 * (wall['run'] / wall['plain'] - 1):+.1f}%),"
                f" final losses identical: {len(losses) == 1}"
            )


if __name__ == "__main__":
    main()
