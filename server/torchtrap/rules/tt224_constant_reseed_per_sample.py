"""TT224: a global generator re-seeded with the same value for every sample or every epoch."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Iterator

from torchtrap.facts.datasets import DatasetView, self_name, self_stores
from torchtrap.facts.generators import global_draws, global_seeder, seeded_family
from torchtrap.facts.index import parent, walk
from torchtrap.facts.workers import local_function
from torchtrap.findings import Applicability, Edit, Finding, Fix, unsafe_title
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.datasets import resolve_function

Method = ast.FunctionDef | ast.AsyncFunctionDef
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# Called once per sample by a DataLoader (or a loop over the dataset).
PER_SAMPLE = ("__getitem__", "__getitems__")
# Pure functions of their arguments: a seed built with them is still fixed.
_PURE_BUILTINS = frozenset({"int", "abs", "hash", "len", "str"})
_MAX_DEPTH = 2


class ConstantReseedPerSample(Rule):
    """Flags a global generator re-seeded with a fixed value per sample or per worker.

    ## What it does
    Flags `np.random.seed(s)`, `random.seed(s)`, `torch.manual_seed(s)`
    and `torch.cuda.manual_seed(_all)(s)`

    - inside a Dataset's `__getitem__`, in a method it calls through
      `self`, in a module-level function it calls (two deep), or in the
      `__call__` of a local transform class it calls through a `self`
      attribute, when `s` is the same for every sample: a literal, a
      constant, a global, or a `self.` attribute that the per-sample code
      does not change, and that code draws from the generator it seeds (a
      `np.random`, `random` or `torch` draw, an augmentation library's
      transform, or a call of an object stored on `self`, such as
      `self.transform(img)`);
    - in a DataLoader's `worker_init_fn` (a `def`, a lambda, a
      `functools.partial`, or the nested `def` a factory of the same file
      returns; also when it calls a local seeding helper),
      when `s` is computed from `worker_id` and fixed values only
      (`np.random.seed(worker_id)`, `seed + worker_id`), or is fixed.

    Silent for seeding a generator the per-sample code never draws from
    (`random.seed(23)` before `np.random.uniform(...)`), for a seed that
    depends on the sample (`np.random.seed(index)`:
    the same augmentation for the same sample every epoch, a deliberate
    choice for a fixed validation set), on a call (`torch.initial_seed()`,
    `get_worker_info().seed`, `time.time()`), for `np.random.seed()`
    without an argument (fresh entropy), for seeding in `__init__` or at
    start-up, and for a `worker_init_fn` that seeds from `worker_id` with
    `persistent_workers=True` (workers then live for the whole run).

    ## Why is this bad?
    Re-seeding a global generator with the same value resets it to the same
    state, so every draw after it repeats: seeded in `__getitem__`, every
    sample gets the same "random" crop, flip or noise, and the augmentation
    does nothing. A `worker_init_fn` that seeds from `worker_id` alone
    gives different workers different streams, but DataLoader workers are
    started anew every epoch (unless `persistent_workers=True`), so every
    epoch replays the same streams, while torch's own per-worker seed
    (`torch.initial_seed()`) changes every epoch. Measured with torch 2.13:
    a Dataset that calls `np.random.seed(0)` in `__getitem__` gives all 8
    samples the same random shift; with a `worker_init_fn` that calls
    `np.random.seed(worker_id)`, two epochs of a 2-worker DataLoader draw
    identical numbers.

    Fix: for `worker_init_fn`, seed from `torch.initial_seed() % 2**32`
    (unsafe: runs are then reproducible only when torch is seeded, with
    `torch.manual_seed` or the DataLoader's `generator`); in `__getitem__`,
    remove the seeding (unsafe: seed once at start-up instead).

    ## Example
    ```python
    def seed_worker(worker_id):
        np.random.seed(worker_id)
    ```

    ## Use instead
    ```python
    def seed_worker(worker_id):
        np.random.seed(torch.initial_seed() % 2**32)
    ```

    ## References
    - https://pytorch.org/docs/stable/notes/randomness.html#dataloader
    - https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading
    - https://github.com/pytorch/pytorch/issues/5059
    """

    code = "TT224"
    name = "constant-reseed-per-sample"
    summary = "a global generator re-seeded with a fixed value in `__getitem__` or `worker_init_fn`"
    fact = (
        "Measured with torch 2.13: `np.random.seed(0)` in `__getitem__` gives all 8 samples the "
        "same random shift."
    )
    requires_text = ("seed",)

    def check(self) -> Iterable[Finding]:
        seen: set[int] = set()
        for view in self.ctx.values.datasets.views():
            for call, fn in self._per_sample_seeds(view):
                if id(call) not in seen:
                    seen.add(id(call))
                    yield self._sample_finding(call, fn)
        for init, persistent in self._worker_inits():
            for call, seed, via in self._seeds_in(init, 0, {}):
                if id(call) in seen:
                    continue
                verdict = self._epoch_fixed(seed, init)
                if verdict is None or (verdict == "worker" and persistent):
                    continue
                seen.add(id(call))
                yield self._worker_finding(call, verdict, via)

    # -- __getitem__ ------------------------------------------------------------
    def _per_sample_seeds(self, view: DatasetView) -> Iterator[tuple[ast.Call, FunctionNode]]:
        entries = [view.methods[n] for n in PER_SAMPLE if n in view.methods]
        if not entries:
            return
        methods = _reached_methods(view, entries)
        written = {attr for fn in methods for attr, *_ in self_stores(fn)}
        functions: list[FunctionNode] = list(methods)
        functions += self._transforms(view, methods)
        functions += self._helpers(functions)
        imports = self.ctx.facts.imports
        calls = [(n, fn) for fn in functions for n in walk(fn) if isinstance(n, ast.Call)]
        # Which global generators the per-sample code draws from: seeding one
        # that nothing draws from changes nothing. A call of a stored object
        # (`self.transform(img)`) may draw from any of them.
        drawn: set[str] = set()
        for call, _ in calls:
            drawn |= global_draws(call, imports)
            if _stored_call(call):
                drawn |= {"numpy", "random", "torch"}
        for call, fn in calls:
            spelled = global_seeder(call, imports)
            if spelled is None or seeded_family(spelled) not in drawn:
                continue
            seed = _seed_argument(call)
            if seed is not None and self._sample_fixed(seed, fn, written):
                yield call, fn

    def _transforms(self, view: DatasetView, methods: list[Method]) -> list[FunctionNode]:
        """``__call__`` of local classes stored on ``self`` and called per sample."""
        classes = self.ctx.facts.classes
        stored: dict[str, ast.expr] = {}
        for method in view.all_methods():
            for attr, _, _, value in self_stores(method):
                if value is not None:
                    stored[attr] = value
        out: list[FunctionNode] = []
        for fn in methods:
            me = self_name(fn)
            for node in walk(fn):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == me
                    and node.func.attr in stored
                ):
                    continue
                info = classes.class_of_call(stored[node.func.attr])
                call = info.method("__call__") if info is not None else None
                if call is not None and call not in out:
                    out.append(call)
        return out

    def _helpers(self, functions: list[FunctionNode]) -> list[FunctionNode]:
        """Module-level functions the per-sample code calls, two deep."""
        out: list[FunctionNode] = []
        todo = [(fn, 0) for fn in functions]
        while todo:
            fn, depth = todo.pop()
            if depth >= _MAX_DEPTH:
                continue
            for node in walk(fn):
                if isinstance(node, ast.Call):
                    helper = local_function(node, self.ctx.tree)
                    if helper is not None and helper not in out and helper not in functions:
                        out.append(helper)
                        todo.append((helper, depth + 1))
        return out

    def _sample_fixed(self, seed: ast.expr, fn: FunctionNode, written: set[str]) -> bool:
        """The seed is the same for every call of ``fn``: no call in it, no
        name of ``fn``'s own (its parameters and locals), and ``self.x``
        only for attributes the per-sample code does not write."""
        me = self_name(fn) if not isinstance(fn, ast.Lambda) else None
        if isinstance(seed, ast.Constant):
            return seed.value is not None
        for node in ast.walk(seed):
            if isinstance(node, ast.Call):
                return False
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == me
                and node.attr in written
            ):
                return False
            if isinstance(node, ast.Name) and node.id != me and self.ctx.values.binds(node.id, fn):
                return False
        return True

    # -- worker_init_fn -------------------------------------------------------------
    def _worker_inits(self) -> Iterator[tuple[FunctionNode, bool]]:
        datasets = self.ctx.values.datasets
        found: list[tuple[FunctionNode, bool]] = []
        # Positional `worker_init_fn` (the 11th argument) only a DataLoader call knows.
        positional = {id(d.node): d.argument("worker_init_fn") for d in self.ctx.facts.dataloaders}
        for call in self.ctx.facts.index.of(ast.Call):
            init = next((kw.value for kw in call.keywords if kw.arg == "worker_init_fn"), None)
            if init is None:
                init = positional.get(id(call))
            if init is None:
                continue
            persistent = any(
                kw.arg == "persistent_workers"
                and isinstance(kw.value, ast.Constant)
                and kw.value.value is True
                for kw in call.keywords
            )
            bound = self.ctx.values.sources(init, call) if isinstance(init, ast.Name) else None
            values = [v for v, _ in bound] if bound else [init]
            for branch in (b for v in values for b in _branches(v)):
                fn = resolve_function(branch, datasets, None) or self._made_by(branch)
                if fn is not None and not any(f is fn for f, _ in found):
                    found.append((fn, persistent))
        yield from found

    def _made_by(self, expr: ast.expr) -> FunctionNode | None:
        """The nested ``def`` a factory of this file returns
        (``worker_init_fn=make_init_fn(seed)``)."""
        if not isinstance(expr, ast.Call):
            return None
        factory = local_function(expr, self.ctx.tree)
        if factory is None:
            return None
        nested = {
            s.name: s
            for s in factory.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        returned = [
            s.value for s in walk(factory) if isinstance(s, ast.Return) and s.value is not None
        ]
        if len(returned) != 1 or not isinstance(returned[0], ast.Name):
            return None
        return nested.get(returned[0].id)

    def _seeds_in(
        self, fn: FunctionNode, depth: int, env: dict[str, ast.expr]
    ) -> Iterator[tuple[ast.Call, ast.expr, tuple[ast.Call, ...]]]:
        """(seeder call, its seed in the worker_init_fn's terms, helper calls
        on the way) for each seeding in ``fn`` and in local helpers it calls."""
        body: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
        for stmt in body:
            for node in walk(stmt):
                if not isinstance(node, ast.Call):
                    continue
                if global_seeder(node, self.ctx.facts.imports) is not None:
                    seed = _seed_argument(node)
                    if seed is not None:
                        yield node, _substitute(seed, env), ()
                    continue
                helper = local_function(node, self.ctx.tree)
                if helper is None or depth >= 1 or helper is fn:
                    continue
                params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
                inner = {p: _substitute(a, env) for p, a in zip(params, node.args, strict=False)}
                for call, seed, via in self._seeds_in(helper, depth + 1, inner):
                    yield call, seed, (node, *via)

    def _epoch_fixed(self, seed: ast.expr, init: FunctionNode) -> str | None:
        """ "worker": the seed is computed from the worker id and fixed
        values only; "fixed": from fixed values only; None: it changes
        (a call, a value this analysis cannot follow)."""
        params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)]
        if not params:
            return None
        worker = params[0]
        uses_worker = False
        todo: list[tuple[ast.expr, int]] = [(seed, 0)]
        while todo:
            expr, depth = todo.pop()
            for node in ast.walk(expr):
                if isinstance(node, ast.Call):
                    func = node.func
                    if not (isinstance(func, ast.Name) and func.id in _PURE_BUILTINS):
                        return None
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    if node.id == worker:
                        uses_worker = True
                    elif self.ctx.values.binds(node.id, init) and node.id not in params:
                        # A local: follow its one assignment.
                        sources = self.ctx.values.sources(node, _last_statement(init))
                        if not sources or len(sources) != 1 or depth > 3:
                            return None
                        todo.append((sources[0][0], depth + 1))
        return "worker" if uses_worker else "fixed"

    # -- findings ---------------------------------------------------------------
    def _sample_finding(self, call: ast.Call, fn: FunctionNode) -> Finding:
        spelled = global_seeder(call, self.ctx.facts.imports) or "seed"
        shown = ast.unparse(call)
        if len(shown) > 28:
            shown = f"{spelled}(...)"
        where = fn.name if not isinstance(fn, ast.Lambda) else "a lambda"
        place = "`__getitem__`" if where in PER_SAMPLE else f"`{where}`, called per sample"
        message = (
            f"`{shown}` in {place} resets the generator for every sample: "
            "every sample gets the same random draws"
        )
        if len(message) > 120:
            message = f"`{shown}` runs for every sample: every sample gets the same random draws"
        return self.finding(call, message, fixes=self._removal(call))

    def _worker_finding(self, call: ast.Call, verdict: str, via: tuple[ast.Call, ...]) -> Finding:
        spelled = global_seeder(call, self.ctx.facts.imports) or "seed"
        if verdict == "worker":
            message = (
                f"`{spelled}` in `worker_init_fn` seeds from the worker id alone: "
                "each epoch's workers replay the same streams"
            )
        else:
            message = (
                f"`{spelled}` in `worker_init_fn` seeds a fixed value: every worker "
                "and every epoch replay the same stream"
            )
        related = [self.ctx.related(via[0], "the seeding helper is called here")] if via else []
        fixes = self._initial_seed(call) if not via else []
        return self.finding(call, message, fixes=fixes, related=related)

    def _initial_seed(self, call: ast.Call) -> list[Fix]:
        seed = _seed_argument(call)
        if seed is None:
            return []
        source = self.ctx.source
        tree = self.ctx.tree
        torch = self._torch_name()
        text = f"{torch or 'torch'}.initial_seed() % 2**32"

        def build() -> list[Edit]:
            out = [edits.replace(source, seed, text)]
            if torch is None:
                added = edits.add_import(source, tree, "import torch")
                if added is not None:
                    out.append(added)
            return out

        return [
            Fix(
                unsafe_title(
                    "Seed from `torch.initial_seed()` (new for every worker and epoch)",
                    "reproducible only when torch is seeded",
                ),
                Applicability.UNSAFE,
                build=build,
            )
        ]

    def _torch_name(self) -> str | None:
        for stmt in self.ctx.tree.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name == "torch":
                        return alias.asname or "torch"
        return None

    def _removal(self, call: ast.Call) -> list[Fix]:
        stmt = parent(call)
        if not isinstance(stmt, ast.Expr):
            return []
        moved: ast.stmt = stmt
        up = parent(moved)
        while isinstance(up, ast.If) and up.body == [moved] and not up.orelse:
            moved, up = up, parent(up)
        block = next(
            (
                b
                for b in (getattr(up, f, None) for f in ("body", "orelse", "finalbody"))
                if isinstance(b, list) and any(s is moved for s in b)
            ),
            None,
        )
        source = self.ctx.source
        if block is None or len(block) < 2 or not edits.alone_on_lines(source, moved):
            return []
        target = moved
        return [
            Fix(
                unsafe_title(
                    "Remove the per-sample seeding",
                    "draws no longer repeat from a fixed seed; seed once at start-up",
                ),
                Applicability.UNSAFE,
                build=lambda: [edits.delete_lines(source, target)],
            )
        ]

    valid = (
        Valid(
            """
            import numpy as np
            from torch.utils.data import Dataset

            class Frozen(Dataset):
                def __init__(self, items, seed=0):
                    np.random.seed(seed)
                    self.items = items

                def __getitem__(self, index):
                    np.random.seed(index)
                    return self.items[index] + np.random.normal()

                def __len__(self):
                    return len(self.items)
            """,
            note="seeded in __init__; a per-sample seed (the same sample repeats, on purpose)",
        ),
        Valid(
            """
            import random
            import numpy as np
            import torch
            from torch.utils.data import DataLoader

            def seed_worker(worker_id):
                worker_seed = torch.initial_seed() % 2**32
                np.random.seed(worker_seed)
                random.seed(worker_seed)

            def main(ds):
                torch.manual_seed(0)
                np.random.seed(0)
                loader = DataLoader(ds, num_workers=4, worker_init_fn=seed_worker)
                loader2 = DataLoader(
                    ds, num_workers=4, worker_init_fn=lambda i: np.random.seed(i),
                    persistent_workers=True,
                )
                return loader, loader2
            """,
            note="PyTorch's recipe; seeding at start-up; persistent workers",
        ),
        Valid(
            """
            import numpy as np
            import time

            class Jitter:
                def __getitem__(self, index):
                    np.random.seed()
                    np.random.seed(int(time.time()) + index)
                    return np.random.rand()

                def __len__(self):
                    return 10

                def reset(self):
                    np.random.seed(0)
            """,
            note="fresh entropy; a changing seed; seeding outside the per-sample code",
        ),
        Valid(
            """
            import random
            import numpy as np
            from torch.utils.data import Dataset

            def homography():
                random.seed(23)
                return np.random.uniform(-5, 5)

            class Synthetic(Dataset):
                def __getitem__(self, idx):
                    random.seed(23)
                    return idx, homography()

                def __len__(self):
                    return 10
            """,
            note="`random` is seeded, but only numpy is drawn from",
        ),
        Valid(
            """
            import numpy as np
            from torch.utils.data import DataLoader

            def init_fn(worker_id):
                np.random.seed(np.random.get_state()[1][0] + worker_id)

            loader = DataLoader(range(10), num_workers=2, worker_init_fn=init_fn)
            """,
            note="the worker's numpy state differs per epoch (torch >= 1.9 seeds it)",
        ),
    )
    invalid = (
        Invalid(
            """
            import numpy as np
            from torch.utils.data import Dataset

            class Noisy(Dataset):
                def __init__(self, items):
                    self.items = items

                def __getitem__(self, index):
                    np.random.seed(0)
                    x = self.items[index]
                    return x + np.random.normal()

                def __len__(self):
                    return len(self.items)
            """,
            line=10,
            message_contains="every sample gets the same random draws",
            fixed="""
            import numpy as np
            from torch.utils.data import Dataset

            class Noisy(Dataset):
                def __init__(self, items):
                    self.items = items

                def __getitem__(self, index):
                    x = self.items[index]
                    return x + np.random.normal()

                def __len__(self):
                    return len(self.items)
            """,
        ),
        Invalid(
            """
            import random
            from torch.utils.data import Dataset

            SEED = 42

            class RandomCrop:
                def __init__(self, seed):
                    self.seed = seed

                def __call__(self, img):
                    random.seed(self.seed)
                    top = random.randint(0, 8)
                    return img[top:top + 24]

            class Images(Dataset):
                def __init__(self, images):
                    self.images = images
                    self.crop = RandomCrop(SEED)

                def __getitem__(self, index):
                    return self.crop(self.images[index])

                def __len__(self):
                    return len(self.images)
            """,
            line=12,
            note="a transform class the dataset calls per sample",
        ),
        Invalid(
            """
            import numpy as np
            import random
            import torch
            from torch.utils.data import DataLoader

            def worker_init_fn(worker_id):
                np.random.seed(worker_id)
                random.seed(worker_id)

            loader = DataLoader(range(100), num_workers=4, worker_init_fn=worker_init_fn)
            """,
            line=8,
            message_contains="seeds from the worker id alone",
            fixed="""
            import numpy as np
            import random
            import torch
            from torch.utils.data import DataLoader

            def worker_init_fn(worker_id):
                np.random.seed(torch.initial_seed() % 2**32)
                random.seed(worker_id)

            loader = DataLoader(range(100), num_workers=4, worker_init_fn=worker_init_fn)
            """,
        ),
        Invalid(
            """
            import functools
            import numpy as np
            from torch.utils.data import DataLoader

            def set_seed(seed):
                np.random.seed(seed)

            def init_fn(worker_id, num_workers, rank, seed):
                worker_seed = num_workers * rank + worker_id + seed
                set_seed(worker_seed)

            def build(ds, seed):
                fn = functools.partial(init_fn, num_workers=2, rank=0, seed=seed) if seed else None
                return DataLoader(ds, num_workers=2, worker_init_fn=fn)
            """,
            line=7,
            note="mmdet's pattern: a partial when a seed is set, a local, a seeding helper",
        ),
        Invalid(
            """
            import random
            import torch
            from torch.utils.data import DataLoader

            def make_worker_init_fn(base_seed):
                def init(worker_id):
                    seed = int(base_seed) + int(worker_id)
                    random.seed(seed)
                    torch.manual_seed(seed)
                return init

            def build(ds, seed):
                return DataLoader(ds, num_workers=4, worker_init_fn=make_worker_init_fn(seed))
            """,
            line=9,
            message_contains="seeds from the worker id alone",
            note="the nested function a factory returns",
        ),
    )


def _reached_methods(view: DatasetView, entries: list[Method]) -> list[Method]:
    """The entries and the methods they reach through ``self.name``."""
    seen: dict[int, Method] = {}
    todo: list[Method] = list(entries)
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        me = self_name(fn)
        for node in walk(fn):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == me
                and node.attr in view.methods
            ):
                todo.append(view.methods[node.attr])
    return list(seen.values())


def _stored_call(call: ast.Call) -> bool:
    """``self.transform(img)``: a call of an object stored on the instance."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    )


def _seed_argument(call: ast.Call) -> ast.expr | None:
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((kw.value for kw in call.keywords if kw.arg in ("seed", "a")), None)


def _substitute(expr: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    """``expr`` with a helper's parameters replaced by the caller's arguments
    (the arguments are the caller's own nodes, so the value layer still
    reads them where they are)."""
    if isinstance(expr, ast.Name) and expr.id in env:
        return env[expr.id]
    if not any(isinstance(n, ast.Name) and n.id in env for n in ast.walk(expr)):
        return expr

    class _Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return env.get(node.id, node)

    return _Replace().visit(copy.deepcopy(expr))


def _branches(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.IfExp):
        return [*_branches(expr.body), *_branches(expr.orelse)]
    return [expr]


def _last_statement(fn: FunctionNode) -> ast.AST:
    if isinstance(fn, ast.Lambda):
        return fn.body
    return fn.body[-1]
