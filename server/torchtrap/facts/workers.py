"""What runs where when a DataLoader starts workers (TT104-TT107).

- :func:`is_main_guard`, :func:`script_statements`: the module's top level
  as a script runs it, outside ``if __name__ == "__main__":``;
- :func:`iterated_exprs`: what a node iterates (the moment a DataLoader's
  workers start; which DataLoader it is, the value layer answers:
  :mod:`torchtrap.values.workers`);
- :func:`fork_only`: the module (or, for a DataLoader in another file,
  that file) pins the ``fork`` start method.

Single-file evidence otherwise: a function imported from another module is
unknown (the project index can answer it later).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.index import SCOPE_TYPES, walk
from torchtrap.facts.remote import remote_path

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts


class _Summary(Protocol):
    @property
    def pins_fork(self) -> bool: ...


class _Summaries(Protocol):
    """What :func:`fork_only` reads of a project (``torchtrap.project.Project``;
    facts never import the project)."""

    def summary(self, path: str) -> _Summary | None: ...


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# Builtins and wrappers whose first argument is iterated right away (or, for
# `iter`/`enumerate`/`tqdm`, by the loop around them).
ITERATING_CALLS = frozenset(
    {"iter", "list", "tuple", "next", "enumerate", "zip", "sorted", "sum", "any", "all", "tqdm"}
)


def is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not isinstance(stmt, ast.If):
        return False
    test = stmt.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
    ):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def script_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Top-level statements that run on import: not definitions, not the
    ``__main__`` guard. Blocks (``if``/``for``/``with``/``try``) count whole."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if is_main_guard(stmt):
            continue
        yield stmt


def walk_same_scope(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and its descendants, without entering functions, lambdas or
    classes (their bodies do not run here)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, SCOPE_TYPES):
                stack.append(child)


def iterated_exprs(node: ast.AST) -> list[ast.expr]:
    """The expressions ``node`` iterates: a ``for`` loop's or comprehension's
    iterable, ``yield from x``, the first argument of ``iter``/``list``/...."""
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        out = [node.iter]
    elif isinstance(node, ast.YieldFrom):
        out = [node.value]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__iter__"
        and not node.args
        and not node.keywords
    ):
        out = [node.func.value]  # `it = loader.__iter__()` starts the workers too
    elif (
        isinstance(node, ast.Call)
        and node.args
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ITERATING_CALLS
    ):
        out = list(node.args[:1])
    else:
        return []
    # `for i, batch in enumerate(tqdm(loader))`: look through the wrappers.
    expanded: list[ast.expr] = []
    for expr in out:
        while (
            isinstance(expr, ast.Call)
            and expr.args
            and isinstance(expr.func, (ast.Name, ast.Attribute))
            and (expr.func.id if isinstance(expr.func, ast.Name) else expr.func.attr)
            in ITERATING_CALLS
        ):
            expr = expr.args[0]
        expanded.append(expr)
    return expanded


def local_function(call: ast.Call, tree: ast.Module) -> FunctionNode | None:
    """The module-level ``def`` a call by plain name runs."""
    if not isinstance(call.func, ast.Name):
        return None
    found = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == call.func.id:
            found = stmt
    return found


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def start_method(loader: DataLoaderCall) -> str | None:
    """The literal ``multiprocessing_context`` of a DataLoader ("spawn"...),
    "?" for one only known at run time, None when absent."""
    context = loader.argument("multiprocessing_context")
    if context is None:
        return None
    if says_fork(context):
        return "fork"
    for method in ("spawn", "forkserver"):
        if _says(context, method):
            return method
    return "?"


def fork_only(
    loader: DataLoaderCall, facts: ModuleFacts, project: _Summaries | None = None
) -> bool:
    """The DataLoader pins the ``fork`` start method or one only known at run
    time (``multiprocessing_context=ctx``), or the module calls
    ``set_start_method("fork")``. For a DataLoader in another file
    (:mod:`torchtrap.facts.remote`), that file's ``set_start_method``
    counts too, as its summary in ``project`` tells."""
    method = start_method(loader)
    if method is not None:
        return method in ("fork", "?")
    where = remote_path(loader)
    if where is not None and project is not None:
        summary = project.summary(where)
        if summary is not None and summary.pins_fork:
            return True
    return pins_fork(facts)


def pins_fork(facts: ModuleFacts) -> bool:
    """The module calls ``set_start_method("fork")`` (any receiver)."""
    return any(
        call.args and says_fork(call.args[0])
        for call in facts.calls_by_name.get("set_start_method", ())
    )


def says_fork(expr: ast.expr) -> bool:
    return _says(expr, "fork")


def _says(expr: ast.expr, method: str) -> bool:
    """``"spawn"`` or ``get_context("spawn")``."""
    if isinstance(expr, ast.Constant):
        return expr.value == method
    return (
        isinstance(expr, ast.Call)
        and bool(expr.args)
        and isinstance(expr.args[0], ast.Constant)
        and expr.args[0].value == method
    )


# -- iterable datasets (TT105) -------------------------------------------------

# Words whose presence in a dataset class means it may split its stream by
# worker (or by rank, which code that shards usually does alongside).
SHARDING_WORDS = (
    "get_worker_info",
    "worker_info",
    "worker_id",
    "num_workers",
    "shard",
    "split_by_worker",
    "split_by_node",
    "world_size",
    "get_rank",
    "islice",
)

# Calls whose result is a finite stream read from a source (files, ranges, tables).
SOURCE_CALLS = frozenset(
    {
        "range",
        "open",
        "glob",
        "iglob",
        "listdir",
        "scandir",
        "walk",
        "reader",
        "DictReader",
        "readlines",
        "iterrows",
        "itertuples",
        "read_csv",
        "read_json",
        "load",
        "loads",
    }
)
# Calls that pass their argument's items along.
_PASS_THROUGH = frozenset({"sorted", "list", "tuple", "reversed", "enumerate", "zip", "iter"})


def call_name(node: ast.AST) -> str | None:
    """``f`` for ``f(...)``, ``m`` for ``x.m(...)``."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def is_data_source(value: ast.expr) -> bool:
    """A literal container, a comprehension, or a call from SOURCE_CALLS:
    something that yields all of its items to whoever iterates it."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.GeneratorExp)):
        return True
    name = call_name(value)
    if name in _PASS_THROUGH and isinstance(value, ast.Call) and value.args:
        return all(is_data_source(arg) for arg in value.args)
    return name in SOURCE_CALLS


def materialized(value: ast.expr) -> bool:
    """A container the dataset holds: a source, or ``list(x)``/``sorted(x)``
    of anything (materialised once, whole, in the parent)."""
    return is_data_source(value) or call_name(value) in ("list", "sorted", "tuple")


def target_used(loop: ast.For | ast.AsyncFor) -> bool:
    names = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
    return any(
        isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
        for stmt in loop.body
        for n in walk(stmt)
    )


# -- Python containers on a dataset (TT107) ------------------------------------

# Calls that load a whole file into Python objects, by qualified name.
LOADERS = frozenset(
    {"json.load", "json.loads", "pickle.load", "pickle.loads", "yaml.safe_load", "yaml.load"}
)
# Methods that turn arrays, tables and files into Python containers.
CONTAINER_METHODS = frozenset({"tolist", "to_dict", "readlines"})


def indexed_by_item(attr: str, getitem: FunctionNode) -> ast.Subscript | None:
    """``self.<attr>[index]`` in ``__getitem__``, indexed by its index parameter."""
    params = [a.arg for a in getitem.args.posonlyargs + getitem.args.args]
    if len(params) < 2:
        return None
    me, index = params[0], params[1]
    for node in walk(getitem):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == attr
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == me
            and isinstance(node.slice, ast.Name)
            and node.slice.id == index
        ):
            return node
    return None


# -- what a pickled object drags along (TT104) ---------------------------------


def is_cuda_expression(value: ast.expr) -> bool:
    """``.cuda()``, ``.to("cuda")``, ``device="cuda"`` somewhere in ``value``."""
    for node in walk(value):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "cuda":
                return True
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value == "cuda" or node.value.startswith("cuda:"))
        ):
            return True
    return False
