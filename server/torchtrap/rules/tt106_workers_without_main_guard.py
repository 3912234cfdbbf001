"""TT106 workers-without-main-guard."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.index import walk, walk_scope
from torchtrap.facts.workers import (
    fork_only,
    is_main_guard,
    script_statements,
    start_method,
)
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity
from torchtrap.fixes.names import taken_names
from torchtrap.fixes.structural import can_move_into_main, move_into_main
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.workers import starts_workers

# What the worker prints under spawn/forkserver (CPython's multiprocessing/spawn.py).
BOOTSTRAP_ERROR = (
    "An attempt has been made to start a new process before the current process "
    "has finished its bootstrapping phase"
)


class WorkersWithoutMainGuard(Rule):
    """
    ## What it does
    Finds a script that iterates a DataLoader with workers at module level
    (`for`, `iter(loader)`, `loader.__iter__()`; directly, or through a
    function of the same file that the top level calls) outside
    `if __name__ == "__main__":`, at the first place workers start.

    Severity: **error** when the DataLoader asks for `spawn`/`forkserver`
    itself; **warning** with a literal `num_workers > 0`; **info** when the
    worker count is only known at run time. Silent for modules that only
    define things (a library imported by a script), for `num_workers=0`,
    under the guard or in a function only called from it, with
    `multiprocessing_context="fork"` or a run-time context,
    `set_start_method("fork")`, and in notebooks (a spawn worker cannot
    re-import a notebook at all; the guard does not help there).

    ## Why is this bad?
    Under the `spawn` and `forkserver` start methods (Windows, macOS, and
    Linux from Python 3.14, whose default is forkserver) each worker starts a
    fresh interpreter that re-imports the main module, running its top
    level again. Measured with torch 2.13 (Python 3.11): a script that
    iterates `DataLoader(range(8), num_workers=2)` at top level printed its
    top-level side effect three times (the parent and both workers); each
    worker then failed with "An attempt has been made to start a new process
    before the current process has finished its bootstrapping phase", and
    the script died with "RuntimeError: DataLoader worker (pid(s) ...) exited
    unexpectedly" (exit code 1) under both spawn and forkserver. The same
    script runs cleanly under fork, so it breaks when moved to another OS or
    Python version.

    Fix: move the script's top-level statements (everything but imports,
    definitions and literal constants) into `def main():` and call it under
    the guard, a structural fix (libcst keeps comments and strings). Safe
    when no function of the module reads a moved name; otherwise those names
    are declared `global` in `main()` and the fix is unsafe (under spawn the
    workers would not have them).

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
    for batch in loader:
        print(batch)
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader


    def main():
        loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
        for batch in loader:
            print(batch)


    if __name__ == "__main__":
        main()
    ```

    ## References
    - [Python: safe importing of the main module](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods)
    - [PyTorch: platform-specific behaviors of DataLoader workers](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors)
    - Python 3.14 makes forkserver the default on Linux:
      [What's new in 3.14](https://docs.python.org/3.14/whatsnew/3.14.html)
    """

    code = "TT106"
    name = "workers-without-main-guard"
    summary = "DataLoader workers start at module level without a `__main__` guard"
    fact = (
        'Each worker then fails with "An attempt has been made to start a new process before '
        'the current process has finished its bootstrapping phase" (CPython multiprocessing).'
    )
    default_severity = Severity.WARNING
    requires_text = ("DataLoader",)

    def check(self) -> Iterable[Finding]:
        if self.ctx.path.endswith(".ipynb"):
            return
        facts = self.ctx.facts
        if not any(d.may_have_workers for d in facts.dataloaders):
            return
        for stmt in script_statements(self.ctx.tree):
            found = starts_workers(stmt, self.ctx.values)
            if found is None or fork_only(found[1], facts):
                continue
            yield self._finding(*found)
            return  # one per module: the first statement that starts workers

    def _finding(self, site: ast.expr, loader: DataLoaderCall) -> Finding:
        method = start_method(loader)
        if method in ("spawn", "forkserver"):
            severity = Severity.ERROR
            when = f"each {method} worker re-runs the script and crashes"
        else:
            severity = Severity.WARNING if loader.workers is Workers.SOME else Severity.INFO
            when = "under spawn each worker re-runs the script and crashes"
        # The worker's error (CPython's multiprocessing/spawn.py) is BOOTSTRAP_ERROR;
        # the hover and the docs say why.
        message = f"DataLoader workers start outside a `__main__` guard: {when}"
        related = []
        if not _inside(loader.node, site):
            related.append(
                self.ctx.related(loader.node, f"the DataLoader ({loader.describe_workers()})")
            )
        return self.finding(site, message, severity=severity, fixes=self._fixes(), related=related)

    # -- fix -----------------------------------------------------------------
    def _fixes(self) -> list[Fix]:
        tree = self.ctx.tree
        if any(is_main_guard(s) for s in tree.body):
            return []  # a guard exists: where the moved code belongs is a human call
        moved = _moved_statements(tree)
        if not moved or not can_move_into_main(tree, moved):
            return []
        bound = _bound_names(moved)
        if any(
            isinstance(n, ast.ImportFrom) and n.names[0].name == "*" for s in moved for n in walk(s)
        ):
            return []  # `from x import *` is not allowed inside a function
        first = moved[0].lineno
        kept = [s for s in tree.body if s.lineno > first and s not in moved]
        if _read_at_definition(kept) & bound:
            return []  # a decorator or default would read a name main() now binds
        read_later = sorted(_read_in_functions(tree) & bound)
        name = "main" if "main" not in taken_names(self.ctx.facts.index) else "run_main"
        if name in taken_names(self.ctx.facts.index):
            return []
        source = self.ctx.source

        def build() -> list[Edit]:
            return move_into_main(source, tree, moved, function=name, global_names=read_later)

        if read_later:
            shown = ", ".join(f"`{n}`" for n in read_later[:3])
            return [
                Fix(
                    f"Move the script into `{name}()` under a `__main__` guard "
                    f"(unsafe: functions read {shown}, made global in {name}())",
                    Applicability.UNSAFE,
                    build,
                )
            ]
        return [
            Fix(
                f"Move the script into `{name}()` under a `__main__` guard",
                Applicability.SAFE,
                build,
            )
        ]


def _is_literal(expr: ast.expr) -> bool:
    """What ``ast.literal_eval`` accepts (without calling it: its recursive
    closures leave garbage cycles behind on every call)."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Constant):
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            todo.extend(node.elts)
        elif isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                return False  # `{**x}`
            todo.extend(key for key in node.keys if key is not None)
            todo.extend(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            todo.append(node.operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            # complex literals only: 1 + 2j
            left = node.left.operand if isinstance(node.left, ast.UnaryOp) else node.left
            right = node.right
            if not (
                isinstance(left, ast.Constant)
                and type(left.value) in (int, float)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, complex)
            ):
                return False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id != "set" or node.args or node.keywords:
                return False  # only `set()`
        else:
            return False
    return True


def _is_definition(stmt: ast.stmt, first: bool) -> bool:
    """Imports, definitions, the docstring, literal constants, and
    ``try: import x`` / ``if TYPE_CHECKING: import x`` blocks stay put."""
    if isinstance(
        stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    ):
        return True
    if first and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        return _is_literal(stmt.value)
    if isinstance(stmt, (ast.If, ast.Try)) and not is_main_guard(stmt):
        inner = [s for s in walk(stmt) if isinstance(s, ast.stmt) and s is not stmt]
        return bool(inner) and all(
            isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in inner
        )
    return False


def _moved_statements(tree: ast.Module) -> list[ast.stmt]:
    """From the first statement that is not a definition to the end, every
    statement that is not one."""
    start = next((i for i, s in enumerate(tree.body) if not _is_definition(s, i == 0)), None)
    if start is None:
        return []
    return [s for s in tree.body[start:] if not _is_definition(s, False)]


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in statements:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _read_in_functions(tree: ast.Module) -> set[str]:
    """Names that functions and methods of the module read as globals: loaded
    in their body, bound nowhere in it (parameters and assignments are local)."""
    names: set[str] = set()
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for fn in walk(stmt):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            args = fn.args
            local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            local.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
            loads: set[str] = set()
            declared: set[str] = set()
            for node in walk_scope(fn):
                if isinstance(node, ast.Name):
                    (loads if isinstance(node.ctx, ast.Load) else local).add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    local.add(node.name)
                elif isinstance(node, ast.Global):
                    declared.update(node.names)
            names |= (loads - local) | (declared & loads)
    return names


def _read_at_definition(kept: list[ast.stmt]) -> set[str]:
    """Names read when a kept definition executes: decorators, defaults,
    bases, class bodies outside methods."""
    names: set[str] = set()
    for stmt in kept:
        parts: list[ast.AST] = []
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = [*stmt.decorator_list, *stmt.args.defaults]
            parts += [d for d in stmt.args.kw_defaults if d is not None]
        elif isinstance(stmt, ast.ClassDef):
            parts = [*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)]
            parts += [
                s for s in stmt.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        else:
            parts = [stmt]
        for part in parts:
            for node in walk(part):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    names.add(node.id)
    return names


# -- examples ----------------------------------------------------------------

_SCRIPT = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
for batch in loader:
    print(batch)
"""

_FIXED = """\
import torch
from torch.utils.data import DataLoader


def main():
    loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
    for batch in loader:
        print(batch)


if __name__ == "__main__":
    main()
"""

_TRAIN = """\
\"\"\"Train a model.\"\"\"
import torch
from torch.utils.data import DataLoader

EPOCHS = 2


def train(loader):
    for epoch in range(EPOCHS):
        for batch in loader:
            print(epoch, batch)


def run():
    loader = DataLoader(torch.arange(8), num_workers=4)
    train(loader)


# go
run()
"""

WorkersWithoutMainGuard.valid = (
    Valid(
        """\
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
        it = loader.__len__()
        """,
        note="no worker starts: only `__iter__()` and iteration do",
    ),
    Valid(
        """\
        from mylib import utils

        data_loader = utils.data.DataLoader(data_set, batch_size=8, num_workers=8)
        for batch in data_loader:
            print(batch)
        """,
        note="`utils.data.DataLoader` of another library",
    ),
    Valid(_FIXED, note="under the guard"),
    Valid(_SCRIPT.replace("num_workers=2", "num_workers=0"), note="num_workers=0"),
    Valid(_SCRIPT.replace(", num_workers=2", ""), note="no workers"),
    Valid(
        _SCRIPT.replace("num_workers=2", 'num_workers=2, multiprocessing_context="fork"'),
        note="fork pinned: nothing is re-imported",
    ),
    Valid(
        "import torch.multiprocessing as mp\n"
        + _SCRIPT.replace("import torch\n", 'import torch\nmp.set_start_method("fork")\n'),
        note="set_start_method('fork')",
    ),
    Valid(
        _TRAIN.replace("# go\nrun()\n", 'if __name__ == "__main__":\n    run()\n'),
        note="a function only called from the guard",
    ),
    Valid(
        _TRAIN.replace("\n\n# go\nrun()\n", "\n"),
        note="a library module that only defines things",
    ),
    Valid(
        """\
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)


        def main():
            for batch in loader:
                print(batch)


        if __name__ == "__main__":
            main()
        """,
        note="created at module level, iterated only under the guard",
    ),
    Valid(
        _SCRIPT.replace("num_workers=2", "num_workers=2, multiprocessing_context=ctx").replace(
            "loader =", 'ctx = "fork"\nloader ='
        ),
        note="a run-time start method: unknown",
    ),
)

WorkersWithoutMainGuard.invalid = (
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2)
        it = loader.__iter__()
        for batch in loader:
            print(batch)
        """,
        line=5,
        note="`loader.__iter__()` starts the workers: the first start in source order",
    ),
    *(
        Invalid(
            """\
            import torch
            from torch.utils.data import DataLoader
            from torch_geometric.loader import DataLoader as GraphLoader


            class ShuffledLoader(DataLoader):
                def __len__(self):
                    return 4


            for batch in SPELLING(torch.arange(8), num_workers=2):
                print(batch)
            """.replace("SPELLING", spelling),
            line=11,
            note=f"spellings: {spelling}(...) builds a torch DataLoader",
        )
        for spelling in ("ShuffledLoader", "DataLoader[int]", "GraphLoader")
    ),
    Invalid(
        """\
        data_loader = torch.utils.data.DataLoader(data_set, batch_size=8, num_workers=8)
        for epoch in range(10):
            for step, (data, label) in enumerate(data_loader):
                print(step)
        """,
        line=3,
        note="a pasted fragment without `import torch`: `torch.utils.data` spelled out is torch",
    ),
    Invalid(
        _SCRIPT,
        line=5,
        severity=Severity.WARNING,
        message_contains=(
            "outside a `__main__` guard: under spawn each worker re-runs the script and crashes"
        ),
        fixed=_FIXED,
    ),
    Invalid(
        _TRAIN,
        line=20,
        severity=Severity.WARNING,
        fixed=_TRAIN.replace(
            "# go\nrun()\n",
            'def main():\n    # go\n    run()\n\n\nif __name__ == "__main__":\n    main()\n',
        ),
        note="through two local functions; the comment travels",
    ),
    Invalid(
        _SCRIPT.replace("num_workers=2", 'num_workers=2, multiprocessing_context="spawn"'),
        line=5,
        severity=Severity.ERROR,
        note="spawn asked for explicitly",
    ),
    Invalid(
        """\
        import sys
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Lines(Dataset):
            def __len__(self):
                return len(lines)

            def __getitem__(self, i):
                return lines[i]


        lines = open(sys.argv[1]).read().splitlines()
        batches = list(DataLoader(Lines(), num_workers=int(sys.argv[2])))
        """,
        line=15,
        severity=Severity.INFO,
        fix_title="unsafe",
        fixed="""\
        import sys
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Lines(Dataset):
            def __len__(self):
                return len(lines)

            def __getitem__(self, i):
                return lines[i]


        def main():
            global lines
            lines = open(sys.argv[1]).read().splitlines()
            batches = list(DataLoader(Lines(), num_workers=int(sys.argv[2])))


        if __name__ == "__main__":
            main()
        """,
        note="run-time worker count; a method reads a moved name: global, unsafe",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader


        def show(epoch, batch):
            print(epoch, batch)


        loader = DataLoader(torch.arange(4), num_workers=2)
        for epoch in range(2):
            for batch in loader:
                show(epoch, batch)
        """,
        line=11,
        fix_title="Move the script into `main()` under a `__main__` guard",
        fixed="""\
        import torch
        from torch.utils.data import DataLoader


        def show(epoch, batch):
            print(epoch, batch)


        def main():
            loader = DataLoader(torch.arange(4), num_workers=2)
            for epoch in range(2):
                for batch in loader:
                    show(epoch, batch)


        if __name__ == "__main__":
            main()
        """,
        note="a parameter named like a moved name is local: safe fix, no global",
    ),
)


def _inside(node: ast.expr, outer: ast.expr) -> bool:
    return (node.lineno, node.col_offset) >= (outer.lineno, outer.col_offset) and (
        node.end_lineno or node.lineno,
        node.end_col_offset or 0,
    ) <= (outer.end_lineno or outer.lineno, outer.end_col_offset or 0)
