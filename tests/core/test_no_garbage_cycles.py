"""A lint leaves no reference cycles behind.

The language server lints an open file on every keystroke. Cyclic garbage
(a recursive closure, a fact pointing back at its owner) is freed only by a
garbage collection, which scans every live object and, with thousands of
project summaries loaded, costs tens of milliseconds that land between two
keystrokes. Reference counting frees everything a lint makes when nothing
cycles; these tests fail when something does.
"""

from __future__ import annotations

import ast
import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.projects import PROJECTS, index
from torchtrap.config import Config, load_config
from torchtrap.engine import lint
from torchtrap.lsp.diagnostics import build_diagnostics
from torchtrap.lsp.settings import Settings
from torchtrap.lsp.workspace import DocText, Snapshot, compute
from torchtrap.rules import ALL_RULES
from torchtrap.rules.tt106_workers_without_main_guard import _is_literal

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> Iterator[str]:
    for rule in ALL_RULES:
        for example in (*rule.valid, *rule.invalid):
            yield example.code


def _unreachable_after(work: object) -> int:
    """Cyclic objects that ``work()`` left behind (collections paused)."""
    gc.collect()
    gc.disable()
    try:
        work()  # type: ignore[operator]
        return gc.collect()
    finally:
        gc.enable()


def test_lints_of_every_rule_example_leave_no_cycles() -> None:
    config = Config()
    sources = list(_examples())
    for source in sources[:3]:
        lint(source, "warm_up.py", config)  # first-use imports and caches

    def run() -> None:
        for source in sources:
            findings = lint(source, "example.py", config)
            del findings

    assert _unreachable_after(run) == 0


def test_an_editor_lint_of_a_big_file_with_its_project_leaves_no_cycles() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from generate import generate_file
    finally:
        sys.path.remove(str(ROOT / "bench"))
    root = PROJECTS / "flat"
    config = load_config(root)
    project = index(root)
    path = str(root / "big.py")
    text = generate_file(seed=8, lines=2000)  # plants two TT201s
    snap = Snapshot(Path(path).as_uri(), 1, path, (DocText(Path(path).as_uri(), text, 1),))
    settings = Settings()
    compute(snap, config, project, ("big", False))  # warm up

    def run() -> None:
        for _ in range(2):
            result = compute(snap, config, project, ("big", False))
            assert result.findings  # the generated file plants bugs
            diagnostics = build_diagnostics(result, settings, "utf-16", set())
            del result, diagnostics

    assert _unreachable_after(run) == 0


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "-1.5",
        "+2",
        "'a'",
        "b'x'",
        "None",
        "(1, 'a', [2, 3], {4})",
        "{'a': 1, 2: (3,)}",
        "1 + 2j",
        "-1 - 2j",
        "set()",
        "1 + 2",
        "x",
        "f()",
        "set([1])",
        "{**a}",
        "[*a]",
        "-x",
        "not 1",
        "1j + 1",
        "'a' + 'b'",
        "a.b",
        "[i for i in a]",
    ],
)
def test_literal_check_agrees_with_literal_eval(text: str) -> None:
    expr = ast.parse(text, mode="eval").body
    try:
        ast.literal_eval(expr)
        expected = True
    except (ValueError, TypeError, SyntaxError):
        expected = False
    assert _is_literal(expr) is expected


def test_no_module_calls_ast_dump() -> None:
    # ast.dump formats through a recursive closure: each call is cyclic garbage
    # (a TT103 example left 6 objects per lint). facts/shapes.shape compares.
    package = ROOT / "server" / "torchtrap"
    calls = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ast.dump"
    ]
    assert calls == []


def test_shape_tells_apart_what_ast_dump_tells_apart() -> None:
    from torchtrap.facts.shapes import shape

    sources = [
        "a.b[c](d, *e, k=f)",
        "a.b[c](d, *e, k=g)",
        "x = [y for y in z if y]",
        "x = [y for y in z]",
    ]
    sources += ["lambda q=1: q", "lambda q=2: q", "f'{a!r}'", "f'{a!s}'", "a.b", "a.b", "(a).b"]
    trees = [ast.parse(source) for source in sources]
    for one in trees:
        for other in trees:
            assert (shape(one) == shape(other)) == (ast.dump(one) == ast.dump(other))
