"""The fix TT101 and TT102 share: add a module-level ``worker_init_fn`` and
pass it to the DataLoaders that need it.

A DataLoader that already has a ``worker_init_fn`` keeps it: when every
DataLoader to fix shares the same module-level function, the new function
calls it last (chained; unsafe, since it changes what runs in the worker);
any other mix (a lambda, differing functions, some with and some without)
gets no fix rather than one that silently drops the user's function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.index import NodeIndex
from torchtrap.findings import Applicability, Edit, marked_title
from torchtrap.fixes.edits import insert_module_block, keyword_value_edit
from torchtrap.fixes.names import ModuleNames, module_bindings
from torchtrap.source import SourceText


@dataclass(frozen=True)
class WorkerInitPlan:
    loaders: tuple[DataLoaderCall, ...]
    chained: str | None  # the existing worker_init_fn the new one calls last
    applicability: Applicability

    def title(self, title: str) -> str:
        """``title``, marked with why when the plan is unsafe."""
        why = (
            f"chains the existing `{self.chained}`"
            if self.chained is not None
            else "**kwargs may already pass a worker_init_fn"
        )
        return marked_title(title, self.applicability, why)


def plan_worker_init(loaders: Sequence[DataLoaderCall], tree: ast.Module) -> WorkerInitPlan | None:
    """Whether a worker_init_fn can be added to ``loaders`` without losing
    anything; cheap (no libcst, no name scan), so it runs at lint time."""
    if not loaders:
        return None
    existing: list[ast.expr | None] = []
    for loader in loaders:
        if "worker_init_fn" in loader.arguments and not any(
            kw.arg == "worker_init_fn" for kw in loader.node.keywords
        ):
            return None  # passed positionally: rare, and an edit there is fragile
        existing.append(loader.argument("worker_init_fn"))
    present = [e for e in existing if e is not None]
    chained = None
    if present:
        first = present[0]
        if (
            len(present) != len(existing)
            or not isinstance(first, ast.Name)
            or any(not isinstance(e, ast.Name) or e.id != first.id for e in present)
            or first.id not in module_bindings(tree)
        ):
            return None
        chained = first.id
    # **kwargs may already hold a worker_init_fn: the explicit keyword would
    # then raise "got multiple values", so that edit needs a human look.
    unsafe = chained is not None or any(loader.has_splat for loader in loaders)
    return WorkerInitPlan(
        tuple(loaders), chained, Applicability.UNSAFE if unsafe else Applicability.SAFE
    )


def worker_init_edits(
    source: SourceText,
    tree: ast.Module,
    index: NodeIndex,
    plan: WorkerInitPlan,
    *,
    comment: Sequence[str],
    body: Callable[[ModuleNames], list[str] | None],
    preferred_names: Sequence[str] = ("seed_worker", "_torchtrap_seed_worker"),
    extra: Callable[[ModuleNames, DataLoaderCall], list[Edit]] | None = None,
) -> list[Edit]:
    """Insert ``def <name>(worker_id)`` (``comment`` lines, then ``body``'s
    lines, then the chained call) after the imports, add the imports the
    body's references need, and set ``worker_init_fn=<name>`` on each
    DataLoader; ``extra`` adds per-DataLoader edits (``generator=``)."""
    names = ModuleNames(source, tree, index)
    name = names.fresh(*preferred_names)
    lines = body(names)
    if lines is None:
        return []
    if plan.chained is not None:
        lines.append(f"{plan.chained}(worker_id)")
    block = "\n".join(
        [f"def {name}(worker_id: int) -> None:"]
        + [f"    # {line}" if line else "    #" for line in comment]
        + [f"    {line}" for line in lines]
    )
    edits: list[Edit] = []
    for loader in plan.loaders:
        edits.append(keyword_value_edit(source, loader.node, "worker_init_fn", name))
        if extra is not None:
            edits.extend(extra(names, loader))
    return [*names.import_edits(), insert_module_block(source, tree, block), *edits]
