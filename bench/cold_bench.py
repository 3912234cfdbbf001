"""Cold and cached ``check -j 1`` against ``ast.parse``, CPU time and peak memory, one run.

    python bench/cold_bench.py --corpus /tmp/corpus/timm --corpus /tmp/corpus/detectron2 \\
        --baseline /path/to/other/server --repeat 3

Child processes, alternated within each repeat so that a change of load hits
every variant alike; best of ``--repeat`` CPU seconds (user + system, from
``wait4`` of each child, so a neighbour's work is not counted):

- ``ast.parse``: a child that reads and parses the files the CLI discovers;
- ``check -j 1 --exit-zero`` cold: an empty ``TORCHTRAP_CACHE_DIR``;
- the same again on the unchanged tree: cached;
- with ``--baseline`` (another checkout's ``server/``), its cold and cached
  runs too, in the same repeats.

Peak memory is each child's maximum resident set (``ru_maxrss``), the
largest over the repeats. Every corpus is measured alone, then all of them
in one run (each still its own project root); the budgets (issue 32: cold
<= 2.0x, cached <= 0.25x, peak <= 1 GB) are judged on that last row. The
load average is printed before and after: on a shared machine, numbers
taken at different loads do not compare. Timing is never asserted in the
test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_bench import AST_CHILD  # noqa: E402

from torchtrap.discovery import ConfigLookup, iter_python_files  # noqa: E402

BUDGET_COLD = 2.0
BUDGET_CACHED = 0.25
BUDGET_PEAK_MB = 1024


@dataclass
class Best:
    cpu: float = float("inf")
    peak_mb: float = 0.0
    runs: list[float] = field(default_factory=list)

    def add(self, cpu: float, peak_mb: float) -> None:
        self.runs.append(round(cpu, 3))
        self.cpu = min(self.cpu, cpu)
        self.peak_mb = max(self.peak_mb, peak_mb)


def child(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + system) and peak resident MB of one child."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped above
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(corpora: list[Path], servers: dict[str, Path], repeat: int) -> dict[str, object]:
    files = [
        str(p)
        for corpus in corpora
        for p in iter_python_files([str(corpus)], ConfigLookup())
        if p.suffix == ".py"
    ]
    parse = Best()
    cold = {name: Best() for name in servers}
    warm = {name: Best() for name in servers}
    check = [sys.executable, "-m", "torchtrap", "check", "-j", "1", "--exit-zero"]
    check += [str(c) for c in corpora]
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp, "files.txt")
        listing.write_text("\n".join(files), encoding="utf-8")
        cache = Path(tmp, "cache")
        for _ in range(repeat):
            parse.add(*child([sys.executable, "-c", AST_CHILD, str(listing)], dict(os.environ)))
            for name, server in servers.items():
                env = dict(os.environ, PYTHONPATH=str(server), TORCHTRAP_CACHE_DIR=str(cache))
                shutil.rmtree(cache, ignore_errors=True)
                cold[name].add(*child(check, env))
                warm[name].add(*child(check, env))
    row: dict[str, object] = {"files": len(files), "ast": parse.cpu, "ast_runs": parse.runs}
    for name in servers:
        row[name] = {
            "cold": cold[name].cpu,
            "cold_ratio": cold[name].cpu / parse.cpu,
            "cold_runs": cold[name].runs,
            "cold_peak_mb": cold[name].peak_mb,
            "cached": warm[name].cpu,
            "cached_ratio": warm[name].cpu / parse.cpu,
            "cached_runs": warm[name].runs,
        }
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout's server/ folder")
    parser.add_argument("--only-all", action="store_true", help="skip the per-corpus rows")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is blown")
    args = parser.parse_args()
    servers = {"branch": ROOT / "server"}
    if args.baseline:
        servers["baseline"] = args.baseline.resolve()
    rows = [] if args.only_all else [[c] for c in args.corpus]
    if len(args.corpus) > 1 or args.only_all:
        rows.append(list(args.corpus))
    print(f"load average before: {os.getloadavg()}")
    header = "| corpus | files | `ast.parse` |"
    for name in servers:
        header += f" {name} cold | / ast | {name} cached | / ast | {name} peak |"
    print(header)
    print("|---|---:|---:|" + "---:|" * 5 * len(servers))
    results = {}
    last: dict[str, object] = {}
    for corpora in rows:
        name = corpora[0].name if len(corpora) == 1 else "all, one run"
        last = results[name] = measure(corpora, servers, args.repeat)
        line = f"| {name} | {last['files']:,} | {last['ast']:.2f} s |"
        for variant in servers:
            r = last[variant]
            assert isinstance(r, dict)
            line += (
                f" {r['cold']:.2f} s | {r['cold_ratio']:.2f}x | {r['cached']:.2f} s"
                f" | {r['cached_ratio']:.2f}x | {r['cold_peak_mb']:.0f} MB |"
            )
        print(line, flush=True)
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    branch = last["branch"]
    assert isinstance(branch, dict)
    blown = (
        branch["cold_ratio"] > BUDGET_COLD
        or branch["cached_ratio"] > BUDGET_CACHED
        or branch["cold_peak_mb"] > BUDGET_PEAK_MB
    )
    return 1 if blown and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
