"""DataLoader calls: which Dataset each one gets and whether it has workers."""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.imports import ImportTable
from torchtrap.facts.index import NodeIndex, enclosing_scope
from torchtrap.facts.tensors import ScopeTable, single_literal

DATALOADER = "torch.utils.data.DataLoader"
_DATALOADER_BASES = frozenset({DATALOADER})

# torch.utils.data.DataLoader's positional parameters, in order.
POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
)


class Workers(enum.Enum):
    NONE = "none"  # num_workers missing or literal 0: the main process loads
    SOME = "some"  # a literal > 0
    MAYBE = "maybe"  # a value only known at run time (args.workers, os.cpu_count())


@dataclass
class DataLoaderCall:
    node: ast.Call
    arguments: dict[str, ast.expr]
    has_splat: bool  # **kwargs: anything may be in there
    dataset_expr: ast.expr | None
    # The dataset argument when it is a constructor call (``DataLoader(DS())``):
    # a local class, and the callee's name (also for a class of another file).
    dataset_class: ClassInfo | None
    dataset_class_name: str | None
    workers: Workers
    workers_expr: ast.expr | None = None
    scope: ast.AST | None = field(default=None, repr=False)

    def argument(self, name: str) -> ast.expr | None:
        value = self.arguments.get(name)
        if isinstance(value, ast.Constant) and value.value is None:
            return None
        return value

    @property
    def may_have_workers(self) -> bool:
        return self.workers is not Workers.NONE

    def describe_workers(self) -> str:
        if self.workers is Workers.SOME and self.workers_expr is not None:
            return f"num_workers={ast.unparse(self.workers_expr)}"
        if self.workers_expr is not None:
            return f"num_workers={ast.unparse(self.workers_expr)}, which may be > 0 at run time"
        return "**kwargs that may set num_workers > 0"


def _workers(
    arguments: dict[str, ast.expr],
    has_splat: bool,
    call: ast.Call,
    module: ast.Module,
    table: Callable[[ast.AST], ScopeTable],
) -> tuple[Workers, ast.expr | None]:
    expr = arguments.get("num_workers")
    if expr is None:
        return (Workers.MAYBE if has_splat else Workers.NONE), None
    if isinstance(expr, ast.Name):
        expr = single_literal(expr.id, call, module, table) or expr
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
        return (Workers.SOME if expr.value > 0 else Workers.NONE), expr
    return Workers.MAYBE, expr


def bind_arguments(call: ast.Call) -> tuple[dict[str, ast.expr], bool]:
    arguments: dict[str, ast.expr] = {}
    for name, arg in zip(POSITIONAL, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            return arguments, True
        arguments[name] = arg
    has_splat = False
    for kw in call.keywords:
        if kw.arg is None:
            has_splat = True
        else:
            arguments[kw.arg] = kw.value
    return arguments, has_splat


def find_dataloaders(
    index: NodeIndex,
    imports: ImportTable,
    classes: ClassTable,
    table: Callable[[ast.AST], ScopeTable],
) -> list[DataLoaderCall]:
    # Without any torch import, `torch.utils.data.DataLoader` spelled out is
    # still torch (ImportTable.qualname): the loop below only looks at calls
    # of something named DataLoader, so no shortcut is needed.
    names = set(imports.local_names_for(DATALOADER))
    # A class of this file deriving from DataLoader builds one (same workers);
    # one with its own `__init__` may give its arguments other meanings.
    subclasses = {
        c.name
        for c in classes.classes.values()
        if "__init__" not in c.methods and classes.derives_from(c, _DATALOADER_BASES)
    }
    found: list[DataLoaderCall] = []
    for call in index.of(ast.Call):
        func = call.func
        if isinstance(func, ast.Subscript):
            func = func.value  # `DataLoader[Batch](...)`
        # Cheap test before resolving qualnames: the callee ends in "DataLoader"
        # or is one of its local aliases.
        if isinstance(func, ast.Name):
            if func.id not in subclasses and (
                func.id not in names or imports.qualname(func) != DATALOADER
            ):
                continue
        elif not (isinstance(func, ast.Attribute) and func.attr == "DataLoader") or (
            imports.qualname(func) != DATALOADER
        ):
            continue
        arguments, has_splat = bind_arguments(call)
        workers, workers_expr = _workers(arguments, has_splat, call, index.tree, table)
        dataset_expr = arguments.get("dataset")
        dataset_class = None
        class_name = None
        # The constructor call itself only: what a name holds is the value
        # layer's question (torchtrap.values.datasets).
        if dataset_expr is not None:
            value = dataset_expr
            if isinstance(value, ast.Call):
                dataset_class = classes.class_of_call(value)
                if isinstance(value.func, ast.Name):
                    class_name = value.func.id
                elif isinstance(value.func, ast.Attribute):
                    class_name = value.func.attr
        found.append(
            DataLoaderCall(
                node=call,
                arguments=arguments,
                has_splat=has_splat,
                dataset_expr=dataset_expr,
                dataset_class=dataset_class,
                dataset_class_name=class_name,
                workers=workers,
                workers_expr=workers_expr,
                scope=enclosing_scope(call),
            )
        )
    return found


@dataclass(frozen=True)
class LoaderUse:
    """A DataLoader that gets a dataset (here or, through the index, elsewhere)."""

    loader: DataLoaderCall
    # The DataLoader receives the instance itself, so that in a worker
    # ``get_worker_info().dataset`` is it (not a Subset around it).
    direct: bool
