"""Build a small project on disk, analyse it with the interprocedural core,
and read back what the core says ``reveal(<expr>)`` arguments hold.

The sources call ``reveal(expr)`` (a plain name the project never defines);
``reveal`` and ``reveal_objects`` return, for every such call in source order
(files by relative path, then line and column), the description set or the raw
object set of its argument, or None where the core says "unknown".
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

from torchtrap.core import Analysis, analyse_paths
from torchtrap.core.objects import (
    BoundObj,
    ClassObj,
    ConstObj,
    ContainerObj,
    ExtAttrObj,
    ExtCallObj,
    ExternalObj,
    FuncObj,
    GenObj,
    InstObj,
    ModuleObj,
    Obj,
    PartialObj,
    Site,
)

REVEAL = "reveal"


def write_project(folder: Path, files: dict[str, str]) -> Path:
    """Write ``files`` ({relative path: source}, dedented) under ``folder``."""
    for rel, source in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return folder


def analyse_project(folder: Path, files: dict[str, str] | None = None) -> Analysis:
    """Write ``files`` (if given) and analyse the folder as one program rooted there."""
    if files is not None:
        write_project(folder, files)
    return analyse_paths([str(folder)], root=str(folder))


@dataclass(frozen=True)
class Reveal:
    module: str
    line: int
    arg: ast.expr


def reveal_calls(analysis: Analysis) -> list[Reveal]:
    """Every ``reveal(x)`` call of the analysed program, in source order."""
    found: list[tuple[str, int, int, Reveal]] = []
    for name, module in analysis.solver.program.modules.items():
        path = module.obj.path
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == REVEAL
                and len(node.args) == 1
            ):
                found.append(
                    (path, node.lineno, node.col_offset, Reveal(name, node.lineno, node.args[0]))
                )
    found.sort(key=lambda item: item[:3])
    return [item[3] for item in found]


def reveal_objects(analysis: Analysis) -> list[frozenset[Obj] | None]:
    """The core's object set for each ``reveal`` argument (None: unknown)."""
    return [analysis.values(r.arg) for r in reveal_calls(analysis)]


def reveal(analysis: Analysis) -> list[set[str] | None]:
    """The short descriptions (``describe``) of each ``reveal`` argument."""
    out: list[set[str] | None] = []
    for objs in reveal_objects(analysis):
        out.append(None if objs is None else {describe(o) for o in objs})
    return out


def _where(site: Site | None) -> str:
    return "any" if site is None else f"{site.module}:{site.line}"


def describe(obj: Obj) -> str:  # noqa: C901 - one line per kind of object
    """A short, stable name for an object, for readable assertions:
    ``Inst:Thing@data:3``, ``DataLoader`` (a library call by its type),
    ``call:.cuda`` (a call of a library attribute), ``const:4``."""
    if isinstance(obj, InstObj):
        return f"Inst:{obj.cls.qname.rsplit('.', 1)[-1]}@{_where(obj.site)}"
    if isinstance(obj, ExtCallObj):
        if obj.type_name:
            return obj.type_name.rsplit(".", 1)[-1]
        if isinstance(obj.callee, ExtAttrObj):
            return f"call:.{obj.callee.attr}"
        return "call:?"
    if isinstance(obj, ConstObj):
        return f"const:{obj.value!r}"
    if isinstance(obj, BoundObj):
        return f"bound:{obj.func.qname}"
    if isinstance(obj, FuncObj):
        return f"func:{obj.qname}"
    if isinstance(obj, ClassObj):
        return f"class:{obj.qname}"
    if isinstance(obj, ContainerObj):
        return f"{obj.kind}@{_where(obj.site)}"
    if isinstance(obj, PartialObj):
        return f"partial@{_where(obj.site)}"
    if isinstance(obj, ExtAttrObj):
        return f"attr:{obj.qname or '.' + obj.attr}"
    if isinstance(obj, ExternalObj):
        return f"ext:{obj.name}"
    if isinstance(obj, ModuleObj):
        return f"module:{obj.name}"
    if isinstance(obj, GenObj):
        return f"gen:{obj.func.qname}"
    return type(obj).__name__


def consts(analysis: Analysis, node: int) -> set[object]:
    """The constant values a solver node may hold."""
    return {o.value for o in analysis.solver.pts[node] if isinstance(o, ConstObj)}
