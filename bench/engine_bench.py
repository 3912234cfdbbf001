"""Engine benchmark: TorchTrap vs ``ast.parse`` alone vs TorchFix, same files, one run.

    python bench/engine_bench.py                        # 200 generated files x ~1,500 lines
    python bench/engine_bench.py --corpus /tmp/corpus/timm --corpus /tmp/corpus/detectron2
    python bench/engine_bench.py --with-torchfix --check

Everything runs in a single process (or one child process at a time), so the
ratios compare like with like on the same machine at the same moment:

- ``ast.parse`` alone: the floor; every Python linter pays at least this.
- ``lint()`` in-process: decode + parse + facts + every rule, no fixes.
- ``torchtrap check -j 1 --exit-zero --format json`` as a child process, against
  a child process that reads and ``ast.parse``-s the same files (both pay
  interpreter start-up, imports and file I/O).
- TorchFix 0.7.0 ``--select ALL -j 1`` (``--with-torchfix``; installed in its
  own venv because it needs ``libcst<1.6``).
- One 5,000-line generated file (and the corpus's largest file), median ms.

Budgets (issue): lint <= 2.5x ast.parse; >= 10x faster than TorchFix; a
5,000-line file in <= 100 ms. ``--check`` exits 1 when one is blown. Timing
is never asserted in the test suite: shared CI machines are too noisy.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate, write_corpus  # noqa: E402

BUDGET_AST_RATIO = 2.5
BUDGET_TORCHFIX_SPEEDUP = 10.0
BUDGET_BIG_FILE_MS = 100.0
BIG_FILE_LINES = 5000
BIG_FILE_SEED = 10_000  # fixed: the same 5,000-line file on every run

TORCHFIX_VERSION = "0.7.0"
DEFAULT_TORCHFIX_VENV = Path.home() / ".cache" / "torchtrap-bench" / "torchfix-venv"

# Folders no linter run on a checkout would look into (mirrors the CLI's
# discovery closely enough that both see the same files; we pass the CLI an
# explicit file list anyway).
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "build", "dist", "__pycache__"}

# The ast.parse baseline as a child process: same interpreter, same file list,
# same I/O as the CLI, nothing else.
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


@dataclass
class Corpus:
    name: str
    paths: list[Path]
    data: list[bytes]
    lines: int
    planted: Counter[str] = field(default_factory=Counter)  # generated files only

    @property
    def files(self) -> int:
        return len(self.paths)


@dataclass
class Result:
    label: str
    seconds: float
    runs: int = 1
    note: str = ""


@dataclass
class Budget:
    name: str
    measured: float
    limit: float
    unit: str
    ok: bool | None  # None: not measured

    def line(self) -> str:
        verdict = "SKIP" if self.ok is None else ("PASS" if self.ok else "FAIL")
        if self.ok is None:
            return f"[{verdict}] {self.name}: not measured"
        limit = f"budget {self.limit:g}{self.unit}"
        return f"[{verdict}] {self.name}: {self.measured:.2f}{self.unit} ({limit})"


# -- corpora -------------------------------------------------------------------


def collect(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        found.extend(Path(folder, f) for f in sorted(files) if f.endswith(".py"))
    return found


def load(name: str, paths: list[Path]) -> Corpus:
    data = [p.read_bytes() for p in paths]
    lines = sum(d.count(b"\n") for d in data)
    return Corpus(name, paths, data, lines)


def generated_corpus(out: Path, files: int, lines: int, seed: int) -> Corpus:
    paths = write_corpus(out, files, lines, seed)
    corpus = load(f"generated ({files} x ~{lines} lines, seed {seed})", paths)
    for i in range(files):
        for bug in generate(seed * 1_000_003 + i, lines).planted:
            corpus.planted[bug.code] += 1
    return corpus


# -- timing --------------------------------------------------------------------


def parse_all(corpus: Corpus) -> None:
    with warnings.catch_warnings():
        # SyntaxWarnings (invalid escapes in old code) would otherwise be printed.
        warnings.simplefilter("ignore")
        for data, path in zip(corpus.data, corpus.paths, strict=True):
            with contextlib.suppress(SyntaxError, ValueError):
                ast.parse(data, filename=str(path))


def lint_all(corpus: Corpus) -> Counter[str]:
    from torchtrap.config import Config
    from torchtrap.engine import lint

    config = Config()  # every rule, default severities, no fixes
    counts: Counter[str] = Counter()
    for data, path in zip(corpus.data, corpus.paths, strict=True):
        for finding in lint(data, str(path), config):
            counts[finding.code] += 1
    return counts


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()  # garbage from the previous pass is not this pass's cost
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best-of-N for each, alternating A B A B so that drift (thermal, a noisy
    neighbour) hits both sides alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            best[name] = min(best[name], best_of(fn, 1))
    return best


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def wall(
    cmd: Sequence[str], repeat: int = 1, env: dict[str, str] | None = None
) -> tuple[float, str]:
    """Best wall time of a child process; its stdout from the last run."""
    best, out = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        best = min(best, time.perf_counter() - start)
        out = proc.stdout
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return best, out


# -- the CLI and TorchFix --------------------------------------------------------


def cli_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torchtrap.cli") is not None


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    return env


def run_cli(corpus: Corpus, list_file: Path, repeat: int) -> tuple[float, float, int | None]:
    """(check seconds, ast child seconds, findings the CLI reported).

    Default text output, as a user runs it (``--format json`` also builds
    every fix's edits, which is fix work the budget leaves out).
    """
    files = [str(p) for p in corpus.paths]
    cli = [sys.executable, "-m", "torchtrap", "check", "-j", "1", "--exit-zero"]
    cli += ["--color", "never", *files]
    base = [sys.executable, "-c", AST_CHILD, str(list_file)]
    env = child_env()
    cli_s, ast_s, out = float("inf"), float("inf"), ""
    for _ in range(repeat):
        t, out = wall(cli, env=env)
        cli_s = min(cli_s, t)
        ast_s = min(ast_s, wall(base, env=env)[0])
    found = re.search(r"^Found (\d+) issues?", out, re.M)
    if found:
        return cli_s, ast_s, int(found.group(1))
    return cli_s, ast_s, 0 if "All checks passed" in out else None


def startup(tmp: Path, repeat: int = 5) -> tuple[float, float]:
    """(check, ast child) wall seconds on one empty file: the fixed cost."""
    empty = tmp / "empty.py"
    empty.write_text("", encoding="utf-8")
    listed = tmp / "empty.txt"
    listed.write_text(str(empty), encoding="utf-8")
    env = child_env()
    cli = [sys.executable, "-m", "torchtrap", "check", "-j", "1", "--exit-zero", str(empty)]
    base = [sys.executable, "-c", AST_CHILD, str(listed)]
    return wall(cli, repeat, env)[0], wall(base, repeat, env)[0]


def torchfix_exe(venv: Path, create: bool) -> Path | None:
    exe = venv / "bin" / "torchfix"
    if exe.exists():
        return exe
    if not create:
        return None
    print(f"TorchFix: creating {venv} (torchfix=={TORCHFIX_VERSION}; needs libcst<1.6)")
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"torchfix=={TORCHFIX_VERSION}"],
            check=True,
        )
    except (subprocess.CalledProcessError, OSError) as err:
        print(f"TorchFix: skipped, could not install it ({err})")
        shutil.rmtree(venv, ignore_errors=True)
        return None
    return exe if exe.exists() else None


def run_torchfix(exe: Path, corpus: Corpus) -> float:
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout
    if TORCHFIX_VERSION not in version:
        print(f"  note: TorchFix reports version {version.strip()!r}, not {TORCHFIX_VERSION}")
    cmd = [str(exe), "--select", "ALL", "-j", "1", *map(str, corpus.paths)]
    seconds, _ = wall(cmd, env=child_env())
    return seconds


# -- per-stage profile (where the engine's time goes) ----------------------------


def profile_stages(corpus: Corpus) -> dict[str, float]:
    """Seconds per stage over the corpus: parse, shared facts, each rule.
    Uses engine internals; the sum is close to, not exactly, lint()."""
    from torchtrap.config import Config
    from torchtrap.facts import ModuleFacts
    from torchtrap.rules import ALL_RULES, Context
    from torchtrap.source import SourceText, UndecodableSource, decode_source

    config = Config()
    acc: Counter[str] = Counter()
    clock = time.perf_counter
    for data, path in zip(corpus.data, corpus.paths, strict=True):
        t0 = clock()
        try:
            text = decode_source(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text, filename=str(path))
        except (UndecodableSource, SyntaxError, ValueError):
            continue
        t1 = clock()
        facts = ModuleFacts(tree)
        # Touch every lazy fact so that the first rule asking is not billed.
        _ = facts.imports, facts.classes, facts.dataloaders
        ctx = Context(SourceText(text), str(path), tree, facts, config)
        t2 = clock()
        acc["parse (decode + ast.parse)"] += t1 - t0
        acc["facts (index, imports, classes, loaders)"] += t2 - t1
        for rule in ALL_RULES:
            t = clock()
            if rule.matches_text(text):
                # A crash is reported by the lint pass; only timing here.
                with contextlib.suppress(Exception):
                    list(rule(ctx).check())
            acc[f"rule {rule.code}"] += clock() - t
    return dict(acc)


# -- report --------------------------------------------------------------------


def rate(corpus: Corpus, seconds: float) -> str:
    return (
        f"{seconds:8.3f} s  {corpus.files / seconds:8.1f} files/s  "
        f"{corpus.lines / seconds / 1000:8.1f} k lines/s"
    )


def loadavg() -> str:
    # Other processes on a small machine skew every number; say how busy it was.
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model
            )
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def bench_corpus(
    corpus: Corpus, args: argparse.Namespace, tmp: Path, torchfix: Path | None
) -> dict[str, Any]:
    print(f"\n== {corpus.name}: {corpus.files} files, {corpus.lines:,} lines")
    # Warm-up: imports, rule registry, page cache, CPU caches.
    parse_all(corpus)
    findings = lint_all(corpus)
    best = interleaved(
        {"ast": lambda: parse_all(corpus), "lint": lambda: lint_all(corpus)}, args.repeat
    )
    res: dict[str, Any] = {
        "name": corpus.name,
        "files": corpus.files,
        "lines": corpus.lines,
        "ast_parse_s": best["ast"],
        "lint_s": best["lint"],
        "lint_vs_ast": best["lint"] / best["ast"],
        "findings": dict(sorted(findings.items())),
    }
    print(f"  ast.parse alone (in-process, best of {args.repeat})  {rate(corpus, best['ast'])}")
    print(f"  torchtrap lint() (in-process, best of {args.repeat}) {rate(corpus, best['lint'])}")
    print(f"  lint / ast.parse = {res['lint_vs_ast']:.2f}x")

    if args.no_cli or not cli_available():
        print("  torchtrap check: skipped" + ("" if args.no_cli else " (no torchtrap.cli yet)"))
    else:
        list_file = tmp / f"files-{abs(hash(corpus.name))}.txt"
        list_file.write_text("\n".join(str(p) for p in corpus.paths), encoding="utf-8")
        cli_s, ast_child_s, cli_findings = run_cli(corpus, list_file, args.cli_repeat)
        res.update(cli_s=cli_s, ast_child_s=ast_child_s, cli_vs_ast=cli_s / ast_child_s)
        print(f"  python -c 'ast.parse each file' (child)   {rate(corpus, ast_child_s)}")
        print(f"  torchtrap check -j 1 (child)              {rate(corpus, cli_s)}")
        print(f"  check / ast.parse child = {res['cli_vs_ast']:.2f}x")
        if cli_findings != sum(findings.values()):
            print(f"  note: the CLI reported {cli_findings} findings, lint() {findings.total()}")

    if torchfix is not None:
        print("  TorchFix --select ALL -j 1 (child, one run; slow) ...", flush=True)
        tf_s = run_torchfix(torchfix, corpus)
        ours = res.get("cli_s", best["lint"])
        res.update(torchfix_s=tf_s, torchfix_speedup=tf_s / ours)
        print(f"  TorchFix {TORCHFIX_VERSION} -j 1 (child)               {rate(corpus, tf_s)}")
        what = "check -j 1" if "cli_s" in res else "lint() in-process"
        print(f"  TorchFix / torchtrap {what} = {res['torchfix_speedup']:.1f}x")

    if findings:
        print("  findings: " + ", ".join(f"{c} {n}" for c, n in sorted(findings.items())))
    if corpus.planted:
        planted = ", ".join(f"{c} {n}" for c, n in sorted(corpus.planted.items()))
        print(f"  planted bugs (generator's own count): {planted}")
        res["planted"] = dict(sorted(corpus.planted.items()))
        if corpus.planted["TT102"] and not findings["TT102"]:
            print("  (TT102 fires only when the project's torch is < 1.9; unknown here)")

    if args.profile:
        stages = profile_stages(corpus)
        res["stages_s"] = stages
        print("  where lint() spends its time:")
        for stage, secs in sorted(stages.items(), key=lambda kv: -kv[1]):
            print(f"    {stage:<45} {secs:7.3f} s")
    return res


def bench_file(label: str, path: str, data: bytes, runs: int) -> dict[str, Any]:
    from torchtrap.config import Config
    from torchtrap.engine import lint

    config = Config()
    lines = data.count(b"\n")

    def parse() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data)

    lint_ms = median_ms(lambda: lint(data, path, config), runs)
    ast_ms = median_ms(parse, runs)
    print(
        f"  {label}: {lines:,} lines: lint {lint_ms:.1f} ms, ast.parse {ast_ms:.1f} ms "
        f"(median of {runs}), {lint_ms / lines * 1000:.1f} ms per 1,000 lines"
    )
    return {"label": label, "path": path, "lines": lines, "lint_ms": lint_ms, "ast_ms": ast_ms}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--corpus",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a checkout (or file) to benchmark; repeatable; default: generated files",
    )
    p.add_argument("--files", type=int, default=200, help="generated files (default 200)")
    p.add_argument("--lines", type=int, default=1500, help="lines per generated file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--keep-generated",
        type=Path,
        metavar="DIR",
        help="write generated files here and keep them (default: a temp dir)",
    )
    p.add_argument(
        "--combined",
        action="store_true",
        help="with several --corpus: also measure them as one corpus (TorchFix: that one only)",
    )
    p.add_argument("--repeat", type=int, default=5, help="best-of-N for in-process passes")
    p.add_argument("--cli-repeat", type=int, default=1, help="best-of-N for the CLI")
    p.add_argument("--big-runs", type=int, default=21, help="runs for the per-file median")
    p.add_argument("--no-cli", action="store_true", help="skip torchtrap check")
    p.add_argument(
        "--with-torchfix",
        action="store_true",
        help=f"run TorchFix {TORCHFIX_VERSION} (creates its venv if missing)",
    )
    p.add_argument("--torchfix-venv", type=Path, default=DEFAULT_TORCHFIX_VENV)
    p.add_argument("--profile", action="store_true", help="time parse, facts and each rule")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    p.add_argument("--check", action="store_true", help="exit 1 if a budget is blown")
    args = p.parse_args(argv)

    print(f"machine: {machine()}; load average {loadavg()}")
    from torchtrap import __version__
    from torchtrap.rules import ALL_RULES

    codes = ", ".join(r.code for r in ALL_RULES) or "none registered yet"
    print(f"torchtrap {__version__}, rules: {codes}")
    torchfix = torchfix_exe(args.torchfix_venv, create=True) if args.with_torchfix else None
    if not args.with_torchfix:
        print("TorchFix: skipped (pass --with-torchfix)")

    tmp = Path(tempfile.mkdtemp(prefix="torchtrap-bench-"))
    try:
        corpora: list[Corpus] = []
        if args.corpus:
            for root in args.corpus:
                corpora.append(load(root.name or str(root), collect(root)))
            if args.combined and len(corpora) > 1:
                paths = [p for c in corpora for p in c.paths]
                corpora.append(load("all corpora together", paths))
        else:
            out = args.keep_generated or tmp / "generated"
            corpora.append(generated_corpus(out, args.files, args.lines, args.seed))

        # TorchFix takes minutes per 100k lines: with --combined, run it once,
        # on the combined corpus only.
        combined = corpora[-1] if args.combined and len(corpora) > 1 else None
        results = [
            bench_corpus(c, args, tmp, torchfix if combined in (None, c) else None) for c in corpora
        ]
        fixed_cost: dict[str, float] = {}
        if not args.no_cli and cli_available():
            check_s, ast_s = startup(tmp)
            fixed_cost = {"check_s": check_s, "ast_child_s": ast_s}
            print(
                f"\n== start-up (one empty file): torchtrap check {check_s * 1000:.0f} ms, "
                f"python + ast {ast_s * 1000:.0f} ms"
            )

        print("\n== single files (in-process)")
        big_path = tmp / "big_5000.py"
        big_path.write_text(generate(BIG_FILE_SEED, BIG_FILE_LINES).text, encoding="utf-8")
        files = [
            bench_file(
                "generated 5,000-line file", str(big_path), big_path.read_bytes(), args.big_runs
            )
        ]
        for corpus in corpora[: len(args.corpus)]:
            i = max(range(corpus.files), key=lambda k: corpus.data[k].count(b"\n"))
            files.append(
                bench_file(
                    f"largest in {corpus.name} ({corpus.paths[i].name})",
                    str(corpus.paths[i]),
                    corpus.data[i],
                    args.big_runs,
                )
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    budgets = evaluate(results, files[0])
    print(f"\n== budgets (load average now {loadavg()})")
    for b in budgets:
        print(b.line())
    if args.json:
        doc = {
            "machine": machine(),
            "corpora": results,
            "files": files,
            "startup": fixed_cost,
            "budgets": [b.__dict__ for b in budgets],
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    blown = any(b.ok is False for b in budgets)
    return 1 if args.check and blown else 0


def evaluate(results: Iterable[dict[str, Any]], big: dict[str, Any]) -> list[Budget]:
    """One line per budget."""
    results = list(results)

    def worst(key: str, pick: Callable[[Iterable[float]], float]) -> float | None:
        values = [r[key] for r in results if key in r]
        return pick(values) if values else None

    out = []
    v = worst("lint_vs_ast", max)
    out.append(
        Budget(
            "lint() / ast.parse, in-process, worst corpus",
            v or 0.0,
            BUDGET_AST_RATIO,
            "x",
            None if v is None else v <= BUDGET_AST_RATIO,
        )
    )
    # End to end, fixed start-up (interpreter, imports) swamps a small corpus;
    # judge it on the largest corpus measured, where per-file cost dominates.
    with_cli = [r for r in results if "cli_vs_ast" in r]
    largest = max(with_cli, key=lambda r: r["lines"]) if with_cli else None
    v = largest["cli_vs_ast"] if largest else None
    out.append(
        Budget(
            "torchtrap check / ast.parse, end to end" + (f", {largest['name']}" if largest else ""),
            v or 0.0,
            BUDGET_AST_RATIO,
            "x",
            None if v is None else v <= BUDGET_AST_RATIO,
        )
    )
    v = worst("torchfix_speedup", min)
    out.append(
        Budget(
            "TorchFix time / torchtrap time",
            v or 0.0,
            BUDGET_TORCHFIX_SPEEDUP,
            "x",
            None if v is None else v >= BUDGET_TORCHFIX_SPEEDUP,
        )
    )
    out.append(
        Budget(
            f"{big['lines']:,}-line file, median lint",
            big["lint_ms"],
            BUDGET_BIG_FILE_MS,
            " ms",
            big["lint_ms"] <= BUDGET_BIG_FILE_MS,
        )
    )
    return out


if __name__ == "__main__":
    sys.exit(main())
