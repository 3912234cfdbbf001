"""What `torchtrap run`'s loss checks cost when they find something: the
one-time work on the steps where a check fires, next to a plain run.

A seeded CPU training script (bench/run_overhead.py's model, log of a softmax
at the end, every loss tensor appended to a list) runs alternately as
`python script.py` and `torchtrap run script.py`; the script times each of
its steps. The list makes the graph check fire at backward 16 (the watch of
the operations and appends that keep the graphs then runs for two steps),
and inputs scaled by 1e4 at step BAD make the loss inf there (the walk over
its graph, then anomaly mode for the next step to learn the line). Reported:
the median step of each, and the extra time of the steps where the checks
do their one-time work (best of the rounds, as load only adds).

    .venv/bin/python bench/run_loss_event_cost.py [--repeat 3] [--steps 120]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

BAD = 60
SCRIPT = """
import sys, time
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
STEPS, BAD = int(sys.argv[1]), int(sys.argv[2])
model = nn.Sequential(
    nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(),
    nn.Linear(256, 10), nn.Softmax(dim=1),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
history = []
times = []
for step in range(STEPS):
    x, y = torch.randn(64, 64) * (1e4 if step == BAD else 1.0), torch.randint(0, 10, (64,))
    started = time.perf_counter()
    opt.zero_grad()
    loss = nn.functional.nll_loss(torch.log(model(x)), y)
    loss.backward()
    opt.step()
    history.append(loss)
    times.append(time.perf_counter() - started)
print("times", " ".join("%.6f" % t for t in times))
"""


def _once(command: list[str], cwd: str) -> list[float]:
    proc = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=True, start_new_session=True
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("times"))
    return [float(t) for t in line.split()[1:]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "train.py").write_text(textwrap.dedent(SCRIPT))
        plain = [sys.executable, "train.py", str(args.steps), str(BAD)]
        hooked = [sys.executable, "-m", "torchtrap", "run", *plain[1:]]
        runs: dict[str, list[list[float]]] = {"plain": [], "run": []}
        for _ in range(args.repeat):  # alternate: the machine's load drifts
            runs["plain"].append(_once(plain, folder))
            runs["run"].append(_once(hooked, folder))
    best = {k: [min(r[i] for r in v) for i in range(args.steps)] for k, v in runs.items()}
    median = {k: statistics.median(v[20:BAD] + v[BAD + 3 :]) for k, v in best.items()}
    print(
        f"steps={args.steps} repeat={args.repeat}: median step (no check firing)"
        f" {1e3 * median['plain']:.3f} ms -> {1e3 * median['run']:.3f} ms"
        f" ({100 * (median['run'] / median['plain'] - 1):+.1f}%)"
    )
    for label, steps in (
        ("graph check fires, watch", range(15, 19)),
        ("loss not finite: walk", range(BAD, BAD + 1)),
        ("anomaly step for the line", range(BAD + 1, BAD + 2)),
    ):
        extra = [1e3 * (best["run"][i] - best["plain"][i]) for i in steps]
        print(f"  {label}: steps {list(steps)} extra " + ", ".join(f"{e:+.2f} ms" for e in extra))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
