"""Evaluate ``probe(<expr>)`` markers in a module, alone or in a project."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from torchtrap.config import Config
from torchtrap.facts import ModuleFacts
from torchtrap.project import Project, summarize_source
from torchtrap.rules.base import Context
from torchtrap.source import SourceText
from torchtrap.values import Value


def _context(code: str, path: str, project: Project | None) -> Context:
    tree = ast.parse(code)
    return Context(SourceText(code), path, tree, ModuleFacts(tree), Config(), project)


def probe_calls(
    code: str, path: str = "example.py", project: Project | None = None
) -> tuple[Context, list[ast.Call]]:
    """The context of ``code`` (dedented) and its ``probe(...)`` calls, in order."""
    ctx = _context(textwrap.dedent(code), path, project)
    calls = [
        node
        for node in ast.walk(ctx.tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "probe"
    ]
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    return ctx, calls


def probes(code: str, path: str = "example.py", project: Project | None = None) -> list[Value]:
    """The value of the argument of every ``probe(...)`` call, in order."""
    ctx, calls = probe_calls(code, path, project)
    return [ctx.values.of(c.args[0]) for c in calls]


def project_probes(files: dict[str, str], main: str, tmp: Path) -> list[Value]:
    """``probes`` of the file ``main`` in a project of ``files`` (name -> code)."""
    summaries = []
    for name, code in files.items():
        path = tmp / name
        path.write_text(textwrap.dedent(code), encoding="utf-8")
        module = name.removesuffix(".py").replace("/", ".")
        summary = summarize_source(path.read_text(), str(path), (module, False))
        assert summary is not None
        summaries.append(summary)
    return probes(files[main], str(tmp / main), Project(summaries))
