"""Building a structural fix's edits (libcst) on a 5,000-line file.

Each builder parses only the enclosing top-level statement(s); this checks
that the cost stays independent of the file's size. Three cases on a
generated 5,000-line module (bench/generate.py) with a 40-line script
appended at its end:

- wrap two statements of a method in ``if x.requires_grad:`` (TT204's guard),
- replace a method's body by a template around it (TT105's sharded iterator),
- move the script into ``def main():`` under a ``__main__`` guard (TT106).

Timed from the ``ast`` tree (the rule's work is done) to the edits, after a
warm-up call that imports libcst (once per process, timed separately in
a fresh interpreter). Budget: p95 <= 50 ms each.

    .venv/bin/python bench/structural_bench.py [--runs 50] [--check]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "server")]

from generate import generate_file  # noqa: E402

from torchtrap.facts.index import NodeIndex  # noqa: E402
from torchtrap.findings import Edit  # noqa: E402
from torchtrap.fixes.structural import (  # noqa: E402
    move_into_main,
    replace_statements,
    wrap_in_if,
)
from torchtrap.source import SourceText  # noqa: E402

BUDGET_MS = 50.0

SCRIPT = """

# the training script
parser_args = {"epochs": 2, "workers": 4}
data = list(range(64))
loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=parser_args["workers"])
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(parser_args["epochs"]):
    for batch in loader:
        x = batch.float().unsqueeze(1)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(
        f\"\"\"epoch {epoch}:
loss {loss.item():.3f}\"\"\"
    )
"""


def _module(lines: int) -> tuple[str, ast.Module]:
    text = generate_file(seed=7, lines=lines) + SCRIPT * 2
    tree = ast.parse(text)
    NodeIndex(tree)
    return text, tree


def _largest_method(tree: ast.Module) -> ast.FunctionDef:
    methods = [
        fn
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for fn in cls.body
        if isinstance(fn, ast.FunctionDef) and len(fn.body) >= 3
    ]
    return max(methods, key=lambda fn: (fn.end_lineno or 0) - fn.lineno)


def cases(text: str, tree: ast.Module) -> dict[str, Callable[[], Sequence[Edit]]]:
    source = SourceText(text)
    method = _largest_method(tree)
    script_start = next(
        i
        for i, s in enumerate(tree.body)
        if isinstance(s, ast.Assign) and s.lineno > 100 and ast.unparse(s).startswith("parser_args")
    )
    moved = [
        s
        for s in tree.body[script_start:]
        if not isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
    ]
    return {
        "wrap in `if` (2 statements of a method)": lambda: wrap_in_if(
            source, tree, method.body[1:3], "x.requires_grad"
        ),
        "replace a method body by a template": lambda: replace_statements(
            source, tree, method.body, "def inner():\n    __body__\n\nreturn inner()\n"
        ),
        f"move {len(moved)} script statements into main()": lambda: move_into_main(
            source, tree, moved
        ),
    }


def first_import_ms() -> float:
    code = (
        "import time; t = time.perf_counter(); import libcst; "
        "from libcst.metadata import PositionProvider; "
        "print((time.perf_counter() - t) * 1000)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--check", action="store_true", help="exit 1 over budget")
    args = parser.parse_args()
    text, tree = _module(args.lines)
    print(f"file: {len(text.splitlines())} lines; libcst first import: {first_import_ms():.0f} ms")
    print("| case | p50 ms | p95 ms | max ms | edited lines |")
    print("|---|---:|---:|---:|---:|")
    over = False
    for name, build in cases(text, tree).items():
        edits = build()  # warm-up (imports libcst)
        assert edits, name
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            build()
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        p50 = statistics.median(times)
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        lines = sum(e.new_text.count("\n") for e in edits)
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {times[-1]:.1f} | {lines} |")
        over = over or p95 > BUDGET_MS
    if args.check and over:
        print(f"over budget: p95 > {BUDGET_MS} ms", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
