"""Imports point one way (front ends -> engine -> rules -> facts and fixes ->
findings): no module of the package may reach itself through its imports,
lazy ones inside functions included (a lazy import hides a cycle, it does
not remove it). Imports under ``if TYPE_CHECKING:`` do not run and do not
count."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "torchtrap"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for file in PACKAGE.rglob("*.py"):
        if "experiments" in file.parts:  # standalone scripts run by the probe
            continue
        parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = file
    return found


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    hidden: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                hidden.update(ast.walk(stmt))
    return hidden


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Who imports whom; ``type_only``: count ``if TYPE_CHECKING:`` imports too."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        tree = ast.parse(file.read_text(encoding="utf-8"))
        hidden = set() if type_only else _type_checking_only(tree)
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if node in hidden:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # `from pkg import submodule` imports the submodule, not the
                # whole package's other submodules.
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            for target in targets:
                resolved = known(target)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_package_has_no_type_only_cycles() -> None:
    # A type-only cycle still couples both modules: they change together. Those
    # that were (lsp/server <-> lsp/project_index, values/evaluate <-> autograd,
    # devices and loops, facts <-> facts/tensors) now type the module above
    # them as a Protocol (lsp/host.py, values/layer.py, facts/tensors.ModuleSyntax).
    assert cycles(import_graph(type_only=True)) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_analysis_never_imports_a_front_end() -> None:
    graph = import_graph()
    front_ends = ("torchtrap.cli", "torchtrap.lsp", "torchtrap.checker")
    for name, targets in graph.items():
        if name.startswith(("torchtrap.rules", "torchtrap.facts", "torchtrap.fixes")):
            bad = [t for t in targets if t.startswith(front_ends)]
            assert bad == [], f"{name} imports front ends {bad}"


def test_facts_never_import_the_project_nor_the_value_layer() -> None:
    """facts/ (one module's syntax) sits below project/ (summaries, imports
    between files) and values/ (what an expression holds, over both):
    type-only imports included, so neither package leans on the other."""
    for file in (PACKAGE / "facts").rglob("*.py"):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(
                    ("torchtrap.project", "torchtrap.values", "torchtrap.rules")
                ), f"{file.name} imports {node.module}"


def test_the_project_never_imports_the_value_layer() -> None:
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("torchtrap.project"):
            bad = [t for t in targets if t.startswith("torchtrap.values")]
            assert bad == [], f"{name} imports {bad}"


def test_rules_ask_the_value_layer_not_its_binding_tables() -> None:
    """What a name holds, where it is bound, whether it is changed later:
    rules ask ``ctx.values`` (``of``, ``sources``, ``binds``,
    ``bound_before``, ``mutated_after``), never the tables under it."""
    tables = {"tensors", "reaching", "values_of", "table"}
    for file in (PACKAGE / "rules").glob("*.py"):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in tables, f"{file.name}:{node.lineno} reads .{node.attr}"
            if isinstance(node, ast.ImportFrom):
                names = {a.name for a in node.names}
                assert "TensorFacts" not in names, f"{file.name} imports TensorFacts"
