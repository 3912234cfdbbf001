"""TT102 numpy-global-rng-legacy-torch."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.datasets import DatasetView, worker_count
from torchtrap.facts.generators import NOT_GLOBAL_DRAWS
from torchtrap.facts.index import walk
from torchtrap.facts.remote import MESSAGE_LIMIT, is_remote, with_location
from torchtrap.facts.workers import local_function
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity, unsafe_title
from torchtrap.fixes.edits import add_keyword_argument
from torchtrap.fixes.names import ModuleNames
from torchtrap.fixes.worker_init import WorkerInitPlan, plan_worker_init, worker_init_edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.datasets import (
    DatasetFacts,
    Exposure,
    Judgement,
    LoaderStatus,
    judge,
    related_message,
    resolve_function,
)
from torchtrap.values.remote import remote_fact, remote_uses
from torchtrap.values.worker_payload import payload_draws

FIXED_IN = (1, 9)  # "Add Numpy seeding to worker of DataLoader (#56488)"

RESEEDS = frozenset({"numpy.random.seed", "numpy.random.set_state"})
LIGHTNING = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})


class NumpyGlobalRngLegacyTorch(Rule):
    """
    ## What it does
    Statically, for projects on torch < 1.9 only: finds a Dataset that draws from
    numpy's global generator (`np.random.randint(...)`, `np.random.rand()`,
    ...) in `__getitem__`/`__iter__` or a method they call; across files,
    at the DataLoader, a draw in any function the workers' code calls (a
    transform in another file).

    The torch version comes from `torch-version` in `[tool.torchtrap]`, else
    the torch installed in the interpreter running TorchTrap, else a pin in
    `requirements*.txt`/`pyproject.toml`; when it is unknown or >= 1.9 the
    static rule is silent. Severity as for TT101: **error** with a literal
    `num_workers > 0`, **warning** when the worker count is only known at run
    time, when a DataLoader with workers may receive the dataset, or when no
    DataLoader is visible in this file. Silent when every DataLoader using it
    has no workers, when its `worker_init_fn` seeds `np.random` (or is
    defined in another file: it usually does, on old torch), and when the
    dataset calls `np.random.seed(...)` itself in the worker.

    `torchtrap run` reports on any torch version what it measures: numpy's
    global generator in the same state in two or more DataLoader workers (or
    in one worker at the start of every epoch) when the dataset drew from it.
    On torch >= 1.9 that takes a `worker_init_fn` that reseeds it with a
    constant (`np.random.seed(1234)`) or with the worker id alone (the same
    numbers every epoch), which this static rule counts as seeding; the run
    points at that `np.random.seed` call.

    ## Why is this bad?
    Before torch 1.9 DataLoader workers did not seed numpy's global
    generator: under fork (the Linux default) every worker inherits the
    parent's numpy state and draws the same numbers. With 4 workers each
    random augmentation is repeated 4 times per round of batches (workers
    seeded `random` and `torch`, but not numpy). Torch 1.9 added numpy
    seeding to workers (#56488), so on newer torch the same code is fine
    (measured on torch 2.13: distinct across workers, new each epoch) unless
    a `worker_init_fn` reseeds numpy with a constant.

    The safe fix adds PyTorch's `seed_worker` recipe: a `worker_init_fn`
    that seeds `np.random` from `torch.initial_seed()`, which differs per
    worker and per epoch. The unsafe alternative also passes a seeded
    `generator=` so that runs are reproducible (it fixes the shuffling order
    of every run, a change beyond the bug).

    ## Example
    ```python
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class RandomDataset(Dataset):
        def __getitem__(self, index):
            return np.random.randint(0, 1000, 3)

        def __len__(self):
            return 16

    loader = DataLoader(RandomDataset(), batch_size=2, num_workers=4)
    ```

    ## Use instead
    ```python
    def seed_worker(worker_id: int) -> None:
        np.random.seed(torch.initial_seed() % 2**32)

    loader = DataLoader(RandomDataset(), batch_size=2, num_workers=4, worker_init_fn=seed_worker)
    ```

    ## References
    - [PyTorch FAQ: my data loader workers return identical random numbers](https://pytorch.org/docs/stable/notes/faq.html#my-data-loader-workers-return-identical-random-numbers)
    - [PyTorch 1.9 release notes: Add Numpy seeding to worker of DataLoader (#56488)](https://github.com/pytorch/pytorch/pull/56488)
    - [Reproducibility: DataLoader](https://pytorch.org/docs/stable/notes/randomness.html#dataloader)
    """

    code = "TT102"
    name = "numpy-global-rng-legacy-torch"
    summary = "Global np.random in a Dataset draws the same numbers in every worker on torch < 1.9"
    fact = (
        "Torch 1.9 added numpy seeding to workers (pytorch #56488); measured on torch "
        "2.13, draws differ across workers and epochs."
    )
    default_severity = Severity.ERROR
    requires_text = ("random", "DataLoader")

    def check(self) -> Iterable[Finding]:
        version = self.ctx.torch_version
        if version is None or version >= FIXED_IN:
            return
        datasets = self.ctx.values.datasets
        # A call of a drawing helper -> the draw inside it (for the message).
        self._via: dict[int, ast.Call] = {}
        for view in datasets.views():
            draws = list(self._global_draws(view))
            if not draws:
                continue
            judgement = judge(
                datasets,
                view,
                self._status_for(datasets, view),
                remote_uses(self.ctx, view.name),
            )
            if judgement is None:
                continue
            for call in draws:
                yield self._finding(view, call, judgement, version)
        ctx = self.ctx
        torch_text = ctx.config.torch_version or ".".join(str(p) for p in version)
        for found in payload_draws(ctx.project, ctx.path, ctx.text, ctx.tree):
            # A transform in another file that __getitem__ calls: the dataset's
            # file cannot see the draw, the loader's file sees the whole chain.
            message = (
                f"{found.workers}: workers draw the same numbers from `{found.drawn}` "
                f"({found.where}) on torch {torch_text}"
            )
            if len(message) > MESSAGE_LIMIT:
                message = f"{found.workers}: workers draw the same `{found.drawn}` numbers"
            yield self.finding(
                found.node,
                message,
                severity=Severity.ERROR if found.certain else Severity.WARNING,
                related=found.related,
            )

    def _global_draws(self, view: DatasetView) -> Iterator[ast.Call]:
        """Global numpy draws in the worker methods, and calls there of a
        module-level function of this file that draws (``augmentations(x)``,
        two calls deep): the call is where the worker reaches the draw."""
        calls: list[ast.Call] = []
        for fn in view.worker_methods():
            for node in walk(fn):
                if isinstance(node, ast.Call):
                    if self._is_reseed(node):
                        return  # re-seeded in the worker (np.random.seed(index))
                    if self._is_global_draw(node):
                        calls.append(node)
                        continue
                    helper = local_function(node, self.ctx.tree)
                    if helper is None:
                        continue
                    inner = self._helper_draw(helper, 0, set())
                    if inner is False:
                        return  # the helper re-seeds: stay silent
                    if isinstance(inner, ast.Call):
                        self._via[id(node)] = inner
                        calls.append(node)
        yield from sorted(calls, key=lambda c: (c.lineno, c.col_offset))

    def _is_reseed(self, call: ast.Call) -> bool:
        return self.ctx.facts.imports.qualname(call.func) in RESEEDS

    def _is_global_draw(self, call: ast.Call) -> bool:
        parts = (self.ctx.facts.imports.qualname(call.func) or "").split(".")
        return (
            len(parts) == 3
            and parts[:2] == ["numpy", "random"]
            and parts[2] not in NOT_GLOBAL_DRAWS
        )

    def _helper_draw(self, fn: ast.AST, depth: int, seen: set[int]) -> ast.Call | bool | None:
        """The first global numpy draw a module-level function makes (itself
        or through the functions it calls, two deep); False when it re-seeds
        numpy's generator; None when it does not draw."""
        if depth > 1 or id(fn) in seen:
            return None
        seen.add(id(fn))
        # (where in this function, the draw): the first one in source order.
        found: list[tuple[tuple[int, int], ast.Call]] = []
        for node in walk(fn):
            if not isinstance(node, ast.Call):
                continue
            if self._is_reseed(node):
                return False
            if self._is_global_draw(node):
                found.append(((node.lineno, node.col_offset), node))
                continue
            helper = local_function(node, self.ctx.tree)
            if helper is not None:
                inner = self._helper_draw(helper, depth + 1, seen)
                if inner is False:
                    return False
                if isinstance(inner, ast.Call):
                    found.append(((node.lineno, node.col_offset), inner))
        return min(found, key=lambda f: f[0])[1] if found else None

    def _status_for(
        self, datasets: DatasetFacts, view: DatasetView
    ) -> Callable[[DataLoaderCall], LoaderStatus]:
        return lambda loader: self._status(datasets, view, loader)

    def _status(
        self, datasets: DatasetFacts, view: DatasetView, loader: DataLoaderCall
    ) -> LoaderStatus:
        init = loader.argument("worker_init_fn")
        if is_remote(loader):
            # Another file: its worker_init_fn is taken as the seeding recipe
            # (as below), and Lightning's seed_everything there counts too.
            project = self.ctx.project
            found = remote_fact(loader, project) if project is not None else None
            summary = project.summary(found[0]) if project is not None and found else None
            if init is not None or summary is None or summary.seeds_workers:
                return LoaderStatus.IGNORED
            return LoaderStatus.COUNTS
        if init is None:
            return LoaderStatus.IGNORED if self._lightning_seeds_workers() else LoaderStatus.COUNTS
        fn = resolve_function(init, datasets, view)
        if fn is None:
            # Defined elsewhere: on old torch a worker_init_fn is nearly always
            # the numpy seeding recipe. Stay silent rather than guess.
            return LoaderStatus.IGNORED
        return LoaderStatus.IGNORED if self._seeds_numpy(fn, datasets, 0) else LoaderStatus.COUNTS

    def _lightning_seeds_workers(self) -> bool:
        """``seed_everything(..., workers=True)`` makes Lightning give every
        DataLoader without a worker_init_fn one that seeds numpy per worker."""
        if "seed_everything" not in self.ctx.text:
            return False
        for call in self.ctx.facts.index.of(ast.Call):
            qual = self.ctx.facts.imports.qualname(call.func) or ""
            if qual.split(".")[-1] == "seed_everything" and qual.split(".")[0] in LIGHTNING:
                workers = next((k.value for k in call.keywords if k.arg == "workers"), None)
                if isinstance(workers, ast.Constant) and workers.value is True:
                    return True
        return False

    def _seeds_numpy(self, fn: ast.AST, datasets: DatasetFacts, depth: int) -> bool:
        for node in walk(fn):
            if isinstance(node, ast.Call):
                if self.ctx.facts.imports.qualname(node.func) in RESEEDS:
                    return True
                if depth < 2 and isinstance(node.func, ast.Name):
                    target = resolve_function(node.func, datasets, None)
                    if (
                        target is not None
                        and target is not fn
                        and self._seeds_numpy(target, datasets, depth + 1)
                    ):
                        return True
        return False

    def _finding(
        self, view: DatasetView, call: ast.Call, judgement: Judgement, version: tuple[int, ...]
    ) -> Finding:
        spelled = self.ctx.source.segment(self.ctx.range(call.func))
        subject = f"`{spelled}`"
        inner = self._via.get(id(call))
        if inner is not None:
            drawn = self.ctx.source.segment(self.ctx.range(inner.func))
            subject = f"`{spelled}()` (via `{drawn}`)"
        torch_text = self.ctx.config.torch_version or ".".join(str(p) for p in version)
        on = f"on torch {torch_text}"
        loaders = judgement.loaders
        exposure = judgement.exposure
        severity = Severity.ERROR if exposure is Exposure.WORKERS else Severity.WARNING
        n = worker_count(loaders) if exposure is Exposure.WORKERS else None
        if n == 1:
            # Forked again every epoch from the parent, whose state does not move.
            message = f"{subject} repeats its numbers every epoch in the DataLoader worker {on}"
        elif n == 2:
            message = f"{subject} draws the same numbers in both DataLoader workers {on}"
        elif n is not None:
            message = f"{subject} draws the same numbers in all {n} DataLoader workers {on}"
        elif exposure is Exposure.WORKERS:
            message = f"{subject} draws the same numbers in every DataLoader worker {on}"
        elif exposure is Exposure.INVISIBLE:
            message = (
                f"{subject} would draw the same numbers in every DataLoader worker {on} "
                "(no DataLoader visible here)"
            )
        else:
            message = f"{subject} would draw the same numbers in every DataLoader worker {on}"
        message = with_location(message, loaders)
        # Why (torch < 1.9 does not seed numpy per worker): the hover and the docs.
        related = [self.ctx.related(lo.node, related_message(lo, exposure)) for lo in loaders]
        if inner is not None:
            related.insert(0, self.ctx.related(inner, "draws from numpy's global generator"))
        return self.finding(
            call, message, severity=severity, fixes=self._fixes(judgement), related=related
        )

    def _fixes(self, judgement: Judgement) -> list[Fix]:
        if judgement.exposure not in (Exposure.WORKERS, Exposure.MAYBE):
            return []
        if any(is_remote(lo) for lo in judgement.loaders):
            return []  # a fix edits this file only
        plan = plan_worker_init(judgement.loaders, self.ctx.tree)
        if plan is None:
            return []
        fixes = [
            Fix(
                plan.title("Seed numpy's global generator in each worker (worker_init_fn)"),
                plan.applicability,
                lambda: self._edits(plan, with_generator=False),
            )
        ]
        if any(lo.argument("generator") is None and not lo.has_splat for lo in plan.loaders):
            fixes.append(
                Fix(
                    unsafe_title(
                        "Seed numpy in each worker, and pass a seeded generator= for "
                        "reproducible runs",
                        "fixes the shuffling order of every run",
                    ),
                    Applicability.UNSAFE,
                    lambda: self._edits(plan, with_generator=True),
                )
            )
        return fixes

    def _edits(self, plan: WorkerInitPlan, *, with_generator: bool) -> list[Edit]:
        def body(names: ModuleNames) -> list[str] | None:
            np_seed = names.reference("numpy.random.seed")
            initial_seed = names.reference("torch.initial_seed")
            if np_seed is None or initial_seed is None:
                return None
            return [f"{np_seed}({initial_seed}() % 2**32)"]

        def generator(names: ModuleNames, loader: DataLoaderCall) -> list[Edit]:
            if not with_generator or loader.argument("generator") is not None or loader.has_splat:
                return []
            ctor = names.reference("torch.Generator")
            if ctor is None:
                return []
            return [
                add_keyword_argument(
                    self.ctx.source, loader.node, "generator", f"{ctor}().manual_seed(0)"
                )
            ]

        return worker_init_edits(
            self.ctx.source,
            self.ctx.tree,
            self.ctx.facts.index,
            plan,
            comment=[
                "TorchTrap TT102: torch < 1.9 does not seed numpy's global generator",
                "in each worker; seed it from the worker's torch seed (PyTorch's recipe).",
            ],
            body=body,
            extra=generator,
        )


# -- examples ----------------------------------------------------------------

OLD = {"torch-version": "1.8.1"}

_SEED_004 = """\
import numpy as np
from torch.utils.data import Dataset, DataLoader


class RandomDataset(Dataset):
    def __getitem__(self, index):
        return np.random.randint(0, 1000, 3)

    def __len__(self):
        return 16


dataset = RandomDataset()
dataloader = DataLoader(dataset, batch_size=2, num_workers=4)
"""

_HELPER = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


def jitter(x, scale):
    return x + np.random.normal(0, scale)


def augmentations(x):
    if np.random.uniform(0, 1) > 0.5:
        x = -x
    return jitter(x, 0.1)


class Points(Dataset):
    def __getitem__(self, index):
        x = float(index)
        return augmentations(x)

    def __len__(self):
        return 16


loader = DataLoader(Points(), batch_size=2, num_workers=4)
"""

NumpyGlobalRngLegacyTorch.valid = (
    Valid(
        _HELPER.replace("    if np.random", "    np.random.seed()\n    if np.random"),
        config=OLD,
        note="the helper re-seeds numpy's generator itself",
    ),
    Valid(
        _HELPER.replace("return augmentations(x)", "return x").replace(
            "    def __len__",
            "    def prepare(self):\n        return augmentations(0.0)\n\n    def __len__",
        ),
        config=OLD,
        note="the drawing helper runs in the parent only (not from __getitem__)",
    ),
    Valid(
        _HELPER.replace("np.random.uniform(0, 1)", "rng.uniform(0, 1)")
        .replace("np.random.normal(0, scale)", "rng.normal(0, scale)")
        .replace(
            "def augmentations(x):", "def augmentations(x):\n    rng = np.random.default_rng()"
        ),
        config=OLD,
        note="a fresh local generator, not the global one",
    ),
    Valid(
        """
        import numpy
        from pytorch_lightning import Trainer, seed_everything
        from torch.utils.data import DataLoader, Dataset

        class NumpyRandomDataset(Dataset):
            def __getitem__(self, index):
                return numpy.random.randint(0, 100, 3)

            def __len__(self):
                return 16

        def train(model):
            seed_everything(0, workers=True)
            loader = DataLoader(NumpyRandomDataset(), batch_size=2, num_workers=2)
            Trainer(max_epochs=1).fit(model, train_dataloaders=loader)
        """,
        config={"torch-version": "1.8.1"},
        note="Lightning's seed_everything(workers=True) seeds numpy in every worker "
        "(found in Lightning's own tests)",
    ),
    Valid(_SEED_004, note="no torch-version: the installed torch (>= 1.9) seeds numpy per worker"),
    Valid(_SEED_004, config={"torch-version": "1.9.0"}, note="fixed in 1.9"),
    Valid(_SEED_004, config={"torch-version": "2.1"}),
    Valid(_SEED_004.replace("num_workers=4", "num_workers=0"), config=OLD, note="no workers"),
    Valid(
        _SEED_004.replace(
            "dataloader = DataLoader(dataset, batch_size=2, num_workers=4)",
            "def seed_worker(worker_id):\n"
            "    worker_seed = torch.initial_seed() % 2**32\n"
            "    np.random.seed(worker_seed)\n"
            "    random.seed(worker_seed)\n\n\n"
            "dataloader = DataLoader(dataset, num_workers=4, worker_init_fn=seed_worker)",
        ),
        config=OLD,
        note="PyTorch's seed_worker recipe",
    ),
    Valid(
        _SEED_004.replace("num_workers=4", "num_workers=4, worker_init_fn=utils.worker_init_fn"),
        config=OLD,
        note="a worker_init_fn from another file: assumed to seed numpy",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import Dataset, DataLoader


        class RandomDataset(Dataset):
            def __getitem__(self, index):
                rng = np.random.default_rng(index)
                return rng.integers(0, 1000, 3)

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4)
        """,
        config=OLD,
        note="a local Generator, not the global one",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import Dataset, DataLoader


        class RandomDataset(Dataset):
            def __getitem__(self, index):
                np.random.seed(index)
                return np.random.randint(0, 1000, 3)

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4)
        """,
        config=OLD,
        note="re-seeded per item",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import Dataset, DataLoader


        class RandomDataset(Dataset):
            def __init__(self):
                self.noise = np.random.randn(16)  # drawn once, in the parent

            def __getitem__(self, index):
                return self.noise[index]

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4)
        """,
        config=OLD,
        note="global numpy used in __init__ only",
    ),
    Valid(
        """\
        import random
        import torch
        from torch.utils.data import Dataset, DataLoader


        class RandomDataset(Dataset):
            def __getitem__(self, index):
                return random.randint(0, 9), torch.randint(0, 9, (1,))

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4)
        """,
        config=OLD,
        note="random and torch were seeded per worker before 1.9 too",
    ),
    Valid(
        """\
        import numpy as np


        class Augment:
            def __getitem__(self, index):
                return np.random.randint(0, 1000, 3)
        """,
        config=OLD,
        note="not a Dataset",
    ),
)

NumpyGlobalRngLegacyTorch.invalid = (
    Invalid(
        _HELPER,
        config=OLD,
        line=18,
        severity=Severity.ERROR,
        message_contains=(
            "`augmentations()` (via `np.random.uniform`) draws the same numbers in all 4"
        ),
        note="a module-level helper of the same file, called from __getitem__ (FSCT)",
    ),
    Invalid(
        _SEED_004,
        config=OLD,
        line=7,
        severity=Severity.ERROR,
        message_contains="draws the same numbers in all 4 DataLoader workers",
        fix_title="global generator in each worker",
        fixed="""\
import numpy as np
from torch.utils.data import Dataset, DataLoader
import torch


def seed_worker(worker_id: int) -> None:
    # TorchTrap TT102: torch < 1.9 does not seed numpy's global generator
    # in each worker; seed it from the worker's torch seed (PyTorch's recipe).
    np.random.seed(torch.initial_seed() % 2**32)


class RandomDataset(Dataset):
    def __getitem__(self, index):
        return np.random.randint(0, 1000, 3)

    def __len__(self):
        return 16


dataset = RandomDataset()
dataloader = DataLoader(dataset, batch_size=2, num_workers=4, worker_init_fn=seed_worker)
""",
    ),
    Invalid(
        _SEED_004.replace(
            "DataLoader(dataset, batch_size=2, num_workers=4)",
            "DataLoader(\n    dataset,\n    batch_size=2,\n    num_workers=4,\n)",
        ),
        config=OLD,
        fix_title="generator=",
        fixed="""\
import numpy as np
from torch.utils.data import Dataset, DataLoader
import torch


def seed_worker(worker_id: int) -> None:
    # TorchTrap TT102: torch < 1.9 does not seed numpy's global generator
    # in each worker; seed it from the worker's torch seed (PyTorch's recipe).
    np.random.seed(torch.initial_seed() % 2**32)


class RandomDataset(Dataset):
    def __getitem__(self, index):
        return np.random.randint(0, 1000, 3)

    def __len__(self):
        return 16


dataset = RandomDataset()
dataloader = DataLoader(
    dataset,
    batch_size=2,
    num_workers=4,
    worker_init_fn=seed_worker,
    generator=torch.Generator().manual_seed(0),
)
""",
    ),
    Invalid(
        """\
        import torch
        from numpy import random as npr
        from torch.utils.data import DataLoader as DL
        from torch.utils.data import Dataset


        class Crops(Dataset):
            def _offset(self):
                return npr.uniform(-4, 4)

            def __getitem__(self, index):
                return index + self._offset()

            def __len__(self):
                return 16


        loader = DL(Crops(), num_workers=2)
        """,
        config={"torch-version": "1.7"},
        line=9,
        severity=Severity.ERROR,
        message_contains="`npr.uniform` draws the same numbers in both DataLoader workers",
        note="aliases, through a helper method",
    ),
    Invalid(
        _SEED_004.replace("num_workers=4", "num_workers=args.workers"),
        config=OLD,
        severity=Severity.WARNING,
        message_contains="would draw the same numbers in every DataLoader worker",
    ),
    Invalid(
        _SEED_004.replace(
            "dataloader = DataLoader(dataset, batch_size=2, num_workers=4)", "print(dataset[0])"
        ),
        config=OLD,
        severity=Severity.WARNING,
        message_contains="no DataLoader visible here",
    ),
    Invalid(
        """\
        import random

        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset


        def init_fn(worker_id):
            random.seed(worker_id)


        class RandomDataset(Dataset):
            def __getitem__(self, index):
                return np.random.randint(0, 1000, 3)

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4, worker_init_fn=init_fn)
        """,
        config=OLD,
        severity=Severity.ERROR,
        fix_title="global generator in each worker",
        fixed="""\
        import random

        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset


        def seed_worker(worker_id: int) -> None:
            # TorchTrap TT102: torch < 1.9 does not seed numpy's global generator
            # in each worker; seed it from the worker's torch seed (PyTorch's recipe).
            np.random.seed(torch.initial_seed() % 2**32)
            init_fn(worker_id)


        def init_fn(worker_id):
            random.seed(worker_id)


        class RandomDataset(Dataset):
            def __getitem__(self, index):
                return np.random.randint(0, 1000, 3)

            def __len__(self):
                return 16


        dataloader = DataLoader(RandomDataset(), num_workers=4, worker_init_fn=seed_worker)
        """,
        note="a worker_init_fn that does not seed numpy: chained (unsafe)",
    ),
    Invalid(
        """\
        from numpy.random import rand
        import torch.utils.data as tud


        class Stream(tud.IterableDataset):
            def __iter__(self):
                for i in range(8):
                    yield i + rand()


        loader = tud.DataLoader(Stream(), num_workers=3)
        """,
        config=OLD,
        line=8,
        severity=Severity.ERROR,
        note="IterableDataset, from-import",
    ),
)
