"""The `run` package's imports point one way: command -> launcher ->
report -> locate/target; nothing imports back (issue 36)."""

from __future__ import annotations

import ast
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "server" / "torchtrap" / "run"
ORDER = ["command", "launcher", "report", "losses", "locate", "target"]


def _imports(name: str) -> set[str]:
    tree = ast.parse((RUN / f"{name}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            names = [a.name for a in node.names]
            if module == "torchtrap.run":
                found.update(n for n in names if n in ORDER)
                if any(n not in ORDER for n in names):
                    found.add("__init__")
            elif module.startswith("torchtrap.run."):
                found.add(module.split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("torchtrap.run."):
                    found.add(alias.name.split(".")[2])
    return found


def test_run_modules_import_one_way() -> None:
    for position, name in enumerate(ORDER):
        imported = _imports(name)
        assert "__init__" not in imported or name == "command", (name, imported)
        backwards = {m for m in imported if m in ORDER and ORDER.index(m) <= position}
        assert not backwards, f"{name} imports {backwards}"
