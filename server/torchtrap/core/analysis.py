"""Build the points-to model of a program and answer questions on it."""

from __future__ import annotations

import ast
import contextlib
import gc
from dataclasses import dataclass, field
from typing import Any

from torchtrap.core.objects import ClassObj, ExternalObj, FuncObj, InstObj, Obj, Site
from torchtrap.core.program import Module, Program, absolute, load
from torchtrap.core.scopes import count_statements, scope_of, statements
from torchtrap.core.solver import CallSite, Solver
from torchtrap.core.walker import Walker

# Measured on the modules the worker model covers (BasicSR 3.5k statements,
# detectron2 4.6k, pytorch/examples 2.6k): 18-40 steps and 9-13 nodes per
# statement. Ten times that is a program the model cannot summarise
# (generated code, or an expansion without end), stopped, not hung.
STEPS_PER_STATEMENT = 400
NODES_PER_STATEMENT = 150
NODES_BASE = 200_000


@dataclass
class Analysis:
    solver: Solver
    memo: dict[object, Any] = field(default_factory=dict)  # queries' indexes, made once

    def values(self, expr: ast.expr) -> frozenset[Obj] | None:
        """The objects ``expr`` may hold; None when unknown (never walked,
        or past the size cap: no evidence either way)."""
        solver = self.solver
        node = solver.expr_nodes.get(id(expr))
        nodes = ([node] if node is not None else []) + solver.ctx_nodes.get(id(expr), [])
        if not nodes or any(n in solver.saturated for n in nodes):
            return None
        found: set[Obj] = set()
        for n in nodes:
            found |= solver.pts[n]
        return frozenset(found)


def analyse(program: Program) -> Analysis:
    enabled = gc.isenabled()
    gc.disable()  # the model is acyclic-free-of-garbage; collection passes cost a third
    try:
        return _analyse(program)
    finally:
        if enabled:
            gc.enable()


def _analyse(program: Program) -> Analysis:
    statements = sum(_count_statements(m.tree) for m in program.modules.values())
    solver = Solver(
        program,
        budget=STEPS_PER_STATEMENT * statements + 1_000_000,
        max_nodes=NODES_PER_STATEMENT * statements + NODES_BASE,
    )
    for module in program.modules.values():
        solver.module_names[module.obj.name] = scope_of(module.tree)[0]
    solver.max_copies = 1_000 + 2 * statements // 10

    def copy(func: FuncObj, ctx: tuple[Site, ...]) -> FuncObj:
        scope, _ = solver.definitions[func]
        clone = FuncObj(func.qname, func.node, func.module, func.cls, func.kind, func.is_generator)
        clone.copy_of = func
        clone.depth = len(ctx)
        solver.signatures[clone] = solver.signatures[func]
        # Past the interpreter's depth the copy stays partial, like its definition's walk.
        with contextlib.suppress(RecursionError):
            Walker(solver, program.modules[func.module.name], ctx).walk_body(clone, scope)  # type: ignore[arg-type]
        return clone

    solver.cloner = copy
    for module in program.modules.values():
        _record_star_imports(solver, program, module)
    for module in program.modules.values():
        try:
            Walker(solver, module).run()
        except RecursionError:
            # Code nested past the interpreter's depth (generated sums, long
            # elif chains): what was walked stays, the rest is unknown.
            program.skipped.append((module.obj.path, "nested too deeply to analyse"))
    solver.solve()
    _any_instance(solver)
    solver.solve()
    if _framework_calls(solver):
        solver.solve()
    return Analysis(solver)


def _record_star_imports(solver: Solver, program: Program, module: Module) -> None:
    """Every module's ``from x import *`` before any module is walked: a
    name read through a star import is resolved once, whatever the order."""
    for node in statements(module.tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            base = absolute(module.obj, node.level, node.module)
            if base is None:
                continue
            found = program.find(base, module.obj) if node.level == 0 else program.modules.get(base)
            if found is not None:
                targets = solver.stars.setdefault(module.obj.name, [])
                if found.obj.name not in targets:
                    targets.append(found.obj.name)


def _count_statements(tree: ast.Module) -> int:
    return count_statements(tree)


def _any_instance(solver: Solver) -> None:
    """A class nothing in the program instantiates (a library's, or one a
    registry builds by name) still has its methods analysed: ``self`` gets
    an instance that stands for every instance."""
    made: dict[ClassObj, list[InstObj]] = {}
    for obj in list(solver.objects.values()):
        if isinstance(obj, InstObj):
            for c in solver.mro(obj.cls):
                if isinstance(c, ClassObj):
                    made.setdefault(c, []).append(obj)
    copied = {origin for origin, _site in solver.copies}
    # A base class: its subclasses may be built elsewhere with other values.
    bases = {b for c in solver.classes for b in solver.mro(c)[1:] if isinstance(b, ClassObj)}
    for func in solver.functions:
        cls = func.cls
        if cls is None or func.kind in ("staticmethod", "classmethod"):
            continue
        params = solver.signatures[func].positional
        if not params:
            continue
        self_node = solver.param(func, params[0])
        if cls not in made:
            solver.add(self_node, (solver.instance(cls, None),))
        elif not solver.pts[self_node] and func not in copied and cls not in bases:
            # A method the program never calls on the instances it makes
            # (`training_step` of a model handed to `Trainer.fit`): a
            # framework calls it on them.
            solver.add(self_node, made[cls])


LIGHTNING = ("pytorch_lightning.", "lightning.")
# What Lightning's Trainer calls on a LightningModule or LightningDataModule,
# in this order: the loaders the methods return are the ones the fit uses.
LIGHTNING_HOOKS = (
    "prepare_data",
    "setup",
    "train_dataloader",
    "val_dataloader",
    "test_dataloader",
    "predict_dataloader",
)


def _framework_calls(solver: Solver) -> bool:
    """Call the hooks a framework calls on every instance of a Lightning
    class (the program never calls them itself), so the DataLoaders they
    build see the instance's real fields (``num_workers=self.workers``)."""
    called = False
    for obj in list(solver.objects.values()):
        if not isinstance(obj, InstObj):
            continue
        order = solver.mro(obj.cls)
        if not any(isinstance(c, ExternalObj) and c.name.startswith(LIGHTNING) for c in order):
            continue
        defined = set().union(*(c.defines for c in order if isinstance(c, ClassObj)))
        site = obj.site or Site(obj.cls.module.name, obj.cls.node.lineno, obj.cls.node.col_offset)
        for hook in LIGHTNING_HOOKS:
            if hook in defined:
                args = [(solver.const("fit"), False)] if hook == "setup" else []
                cs = CallSite(obj.cls.module, site, args, [], solver.node(hook))
                solver.call_method(obj, hook, cs)
                called = True
    return called


def analyse_paths(paths: list[str], root: str) -> Analysis:
    return analyse(load(paths, root))
