"""Facts about one module, computed once and shared by every rule."""

from __future__ import annotations

import ast
from functools import cached_property

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.dataloaders import DataLoaderCall, Workers, find_dataloaders
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import NodeIndex
from torchtrap.facts.tensors import ScopeTable, collect_scope

__all__ = [
    "ClassInfo",
    "ClassTable",
    "DataLoaderCall",
    "ImportTable",
    "ModuleFacts",
    "NodeIndex",
    "Workers",
    "dotted_name",
]


class ModuleFacts:
    """Lazily computed: a rule that never asks for DataLoaders costs nothing."""

    def __init__(self, tree: ast.Module, index: NodeIndex | None = None) -> None:
        """``index``: the tree's node index when one was built already
        (``check`` lints a file again with the project: same tree)."""
        self.tree = tree
        self.index = NodeIndex(tree) if index is None else index
        self._scope_tables: dict[int, ScopeTable] = {}

    def scope_table(self, scope: ast.AST) -> ScopeTable:
        """The bindings of a scope of this tree, built once (the DataLoader
        facts and the value layer share them)."""
        key = id(scope)
        table = self._scope_tables.get(key)
        if table is None:
            table = self._scope_tables[key] = collect_scope(scope)
        return table

    @cached_property
    def imports(self) -> ImportTable:
        return ImportTable(self.index.of_types(ast.Import, ast.ImportFrom))  # type: ignore[arg-type]

    @cached_property
    def classes(self) -> ClassTable:
        return ClassTable(self.index.of(ast.ClassDef), self.imports)

    @cached_property
    def dataloaders(self) -> list[DataLoaderCall]:
        return find_dataloaders(self.index, self.imports, self.classes, self.scope_table)

    @cached_property
    def calls_by_name(self) -> dict[str, list[ast.Call]]:
        """Calls by the name they call: ``f(...)`` and ``x.y.f(...)`` under
        ``"f"`` (one pass instead of one per question)."""
        found: dict[str, list[ast.Call]] = {}
        for call in self.index.of(ast.Call):
            func = call.func
            if isinstance(func, ast.Attribute):
                found.setdefault(func.attr, []).append(call)
            elif isinstance(func, ast.Name):
                found.setdefault(func.id, []).append(call)
        return found

    def qualname(self, node: ast.AST) -> str | None:
        return self.imports.qualname(node)
