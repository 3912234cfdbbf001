"""Project-index benchmark: ``torchtrap check -j 1`` with the index, cold and cached.

    python bench/index_bench.py --corpus /tmp/corpus/timm --corpus /tmp/corpus/detectron2
    python bench/index_bench.py --corpus ... --repeat 5 --check

Each corpus folder is passed to ``check`` as its own project root (the CLI
indexes it, then lints). Child processes, alternated, best of ``--repeat``:

- ``ast.parse`` alone: a child that reads and parses the same files the
  CLI discovers (same interpreter, same I/O, nothing else);
- ``check -j 1 --exit-zero`` cold: an empty cache folder each time
  (``TORCHTRAP_CACHE_DIR``), index included;
- ``check -j 1 --exit-zero`` again on the unchanged tree with that cache.

Budgets (issue 8): cold <= 2.0x ``ast.parse``; cached <= 0.25x. ``--check``
exits 1 when one is blown. Timing is never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from torchtrap.discovery import ConfigLookup, iter_python_files  # noqa: E402

BUDGET_COLD = 2.0
BUDGET_CACHED = 0.25

AST_CHILD = """
import ast, sys, warnings
warnings.simplefilter("ignore")
for p in open(sys.argv[1], encoding="utf-8").read().splitlines():
    with open(p, "rb") as f:
        data = f.read()
    try:
        ast.parse(data, filename=p)
    except (SyntaxError, ValueError):
        pass
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def measure(corpus: Path, repeat: int) -> tuple[int, float, float, float]:
    files = [str(p) for p in iter_python_files([str(corpus)], ConfigLookup()) if p.suffix == ".py"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    check = [sys.executable, "-m", "torchtrap", "check", "-j", "1", "--exit-zero", str(corpus)]
    best_ast = best_cold = best_warm = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp, "files.txt")
        listing.write_text("\n".join(files), encoding="utf-8")
        cache = Path(tmp, "cache")
        env["TORCHTRAP_CACHE_DIR"] = str(cache)
        for _ in range(repeat):
            best_ast = min(best_ast, timed([sys.executable, "-c", AST_CHILD, str(listing)], env))
            shutil.rmtree(cache, ignore_errors=True)
            best_cold = min(best_cold, timed(check, env))
            best_warm = min(best_warm, timed(check, env))
    return len(files), best_ast, best_cold, best_warm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is blown")
    args = parser.parse_args()
    print(
        "| corpus | files | `ast.parse` | `check` cold | cold / ast "
        "| `check` cached | cached / ast |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    totals = [0, 0.0, 0.0, 0.0]
    blown = False
    for corpus in args.corpus:
        n, ast_s, cold, warm = measure(corpus, args.repeat)
        for i, v in enumerate((n, ast_s, cold, warm)):
            totals[i] += v
        print(
            f"| {corpus.name} | {n:,} | {ast_s:.2f} s | {cold:.2f} s | {cold / ast_s:.2f}x "
            f"| {warm:.2f} s | {warm / ast_s:.2f}x |"
        )
    n, ast_s, cold, warm = totals
    print(
        f"| all | {int(n):,} | {ast_s:.2f} s | {cold:.2f} s | **{cold / ast_s:.2f}x** "
        f"| {warm:.2f} s | **{warm / ast_s:.2f}x** |"
    )
    if cold / ast_s > BUDGET_COLD or warm / ast_s > BUDGET_CACHED:
        blown = True
    return 1 if blown and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
