"""Names a fix may write into a module: references to imported things that
resolve at module level, the imports to add when they do not, and fresh
names that clash with nothing in the file.

Only top-level imports count (an ``import numpy as np`` inside ``main()``
does not bind ``np`` for a helper the fix adds at module level).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchtrap.facts.imports import canonical
from torchtrap.facts.index import NodeIndex
from torchtrap.findings import Edit
from torchtrap.fixes.edits import add_import, insert_at
from torchtrap.source import SourceText

# How a missing top-level module is imported, by convention.
_MODULE_IMPORTS = {
    "numpy": ("numpy", "np"),
    "torch": ("torch", None),
    "random": ("random", None),
    "itertools": ("itertools", None),
}


def module_level_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Top-level statements, also inside top-level ``if``/``try`` blocks."""
    stack = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, ast.If | ast.Try):
            blocks = [stmt.body, stmt.orelse]
            if isinstance(stmt, ast.Try):
                blocks += [stmt.finalbody, *(h.body for h in stmt.handlers)]
            for block in reversed(blocks):
                stack.extend(reversed(block))


def module_bindings(tree: ast.Module) -> dict[str, str | None]:
    """Names bound at module level: to the qualified name they import, or
    None for definitions and assignments."""
    names: dict[str, str | None] = {}
    for stmt in module_level_statements(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    names[top] = top
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for alias in stmt.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = canonical(f"{stmt.module}.{alias.name}")
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[stmt.name] = None
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        names[node.id] = None
    return names


def taken_names(index: NodeIndex) -> set[str]:
    """Every name the module uses or binds anywhere, in any scope."""
    taken = {n.id for n in index.of(ast.Name)}
    taken.update(a.arg for a in index.of(ast.arg))
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        taken.update(node.name for node in index.of(kind))  # type: ignore[attr-defined]
    for node in index.of_types(ast.Import, ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            taken.add((alias.asname or alias.name).split(".", 1)[0])
    return taken


class ModuleNames:
    """Collects the references and imports one fix needs."""

    def __init__(self, source: SourceText, tree: ast.Module, index: NodeIndex) -> None:
        self.source = source
        self.tree = tree
        self.bindings = module_bindings(tree)
        self.taken = taken_names(index)
        self.new_imports: list[str] = []
        self.new_edits: list[Edit] = []

    def fresh(self, *preferred: str) -> str:
        """The first of ``preferred`` that nothing in the module uses, else
        the last one with a number appended."""
        for name in preferred:
            if name not in self.taken:
                self.taken.add(name)
                return name
        base, n = preferred[-1], 2
        while f"{base}_{n}" in self.taken:
            n += 1
        self.taken.add(f"{base}_{n}")
        return f"{base}_{n}"

    def reference(self, qualname: str) -> str | None:
        """An expression for ``qualname`` that resolves at module level:
        an existing alias (``np.random.default_rng``, ``default_rng``) or one
        from an import this adds. None when no clean spelling exists."""
        for name, bound in self.bindings.items():
            if bound == qualname:
                return name
        parts = qualname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            for name, bound in self.bindings.items():
                if bound == prefix:
                    return ".".join([name, *parts[i:]])
        top = parts[0]
        if top not in _MODULE_IMPORTS:
            return None
        if len(parts) > 2 and top == "torch":
            # `from torch.utils.data import get_worker_info` reads better
            # than adding `import torch` for one deep name.
            name = parts[-1]
            if name in self.taken:
                return None
            module = ".".join(parts[:-1])
            existing = self._from_import(module)
            if existing is not None:
                # `from torch.utils.data import DataLoader, get_worker_info`
                last = existing.names[-1]
                end = self.source.position(last.end_lineno or 0, last.end_col_offset or 0)
                self.new_edits.append(insert_at(end, f", {name}"))
                self.bindings[name] = qualname
                self.taken.add(name)
            else:
                self._add(f"from {module} import {name}", name, qualname)
            return name
        module, alias = _MODULE_IMPORTS[top]
        for candidate, statement in (
            (alias, f"import {module} as {alias}"),
            (module, f"import {module}"),
        ):
            if candidate is None:
                continue
            if self.bindings.get(candidate, "") == module:
                return ".".join([candidate, *parts[1:]])
            if candidate not in self.taken:
                self._add(statement, candidate, module)
                return ".".join([candidate, *parts[1:]])
        return None

    def _from_import(self, module: str) -> ast.ImportFrom | None:
        for stmt in self.tree.body:
            if (
                isinstance(stmt, ast.ImportFrom)
                and stmt.module == module
                and stmt.level == 0
                and all(a.name != "*" for a in stmt.names)
                and stmt.names[-1].end_col_offset is not None
            ):
                return stmt
        return None

    def _add(self, statement: str, name: str, bound: str) -> None:
        self.new_imports.append(statement)
        self.bindings[name] = bound
        self.taken.add(name)

    def import_edits(self) -> list[Edit]:
        edits = list(self.new_edits)
        for statement in self.new_imports:
            edit = add_import(self.source, self.tree, statement)
            if edit is not None:
                edits.append(edit)
        return edits
