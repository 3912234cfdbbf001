"""Does an answer of the value layer depend on the questions asked before it?

    .venv/bin/python bench/order_differential.py CORPUS [CORPUS ...]

Every non-constant expression of every parseable ``.py`` file under the
corpora is asked of ``ctx.values.of`` twice, each time with a fresh layer
for the file: once in ``ast.walk`` order and once in reverse. It prints each
file whose answers (kind, certainty, probability kind) differ, then the
totals. With an order-free memo the count is zero; docs/benchmarks.md
records it (348 differing answers before ``values/memo.py``, 2 after, on
timm, detectron2, Lightning and pytorch/examples).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from torchtrap.config import Config  # noqa: E402
from torchtrap.facts import ModuleFacts  # noqa: E402
from torchtrap.rules.base import Context  # noqa: E402
from torchtrap.source import SourceText  # noqa: E402
from torchtrap.values import Value  # noqa: E402

Answer = tuple[str, str, str | None]


def _answer(value: Value) -> Answer:
    probability = value.probability
    kind = probability.kind if probability is not None else None
    return value.kind.name, value.certainty.name, kind


def answers(text: str, path: str, reverse: bool) -> list[Answer | None]:
    """The answer for each expression (in ``ast.walk`` order), asked in that
    order or in reverse, of one fresh layer."""
    tree = ast.parse(text)
    ctx = Context(SourceText(text), path, tree, ModuleFacts(tree), Config(), None)
    exprs = [
        n for n in ast.walk(tree) if isinstance(n, ast.expr) and not isinstance(n, ast.Constant)
    ]
    out: list[Answer | None] = [None] * len(exprs)
    order = range(len(exprs) - 1, -1, -1) if reverse else range(len(exprs))
    for i in order:
        out[i] = _answer(ctx.values.of(exprs[i]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="+", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    files = expressions = differing = 0
    for corpus in args.corpus:
        for folder, _dirs, names in sorted(os.walk(corpus)):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                try:
                    text = Path(path).read_text(encoding="utf-8")
                    ast.parse(text)
                except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
                    continue
                forward = answers(text, path, reverse=False)
                backward = answers(text, path, reverse=True)
                files += 1
                expressions += len(forward)
                differ = sum(1 for a, b in zip(forward, backward, strict=True) if a != b)
                if differ:
                    differing += differ
                    print(f"{path}: {differ} answers differ", flush=True)
    elapsed = time.perf_counter() - started
    print(
        f"{files} files, {expressions:,} expressions, {differing} answers differ "
        f"between the two orders ({elapsed:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
