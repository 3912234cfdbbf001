"""TT101 stored-rng-in-dataset."""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.datasets import (
    DatasetView,
    literal,
    self_attribute,
    self_name,
    self_stores,
    worker_count,
)
from torchtrap.facts.generators import CONSTRUCTORS, generator_use, setattr_name
from torchtrap.facts.index import enclosing_function, walk
from torchtrap.facts.remote import MESSAGE_LIMIT, is_remote, with_location
from torchtrap.findings import Edit, Finding, Fix, RelatedLocation, Severity
from torchtrap.fixes.names import ModuleNames
from torchtrap.fixes.worker_init import plan_worker_init, worker_init_edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind as ValueKind
from torchtrap.values.datasets import (
    DatasetFacts,
    Exposure,
    Judgement,
    LoaderStatus,
    judge,
    related_message,
)
from torchtrap.values.remote import remote_uses
from torchtrap.values.worker_payload import PayloadCulprit, payload_culprits, rng_here


# The generator families of the value layer (torchtrap.facts.generators).
class Kind(enum.Enum):
    NUMPY = "numpy.random.default_rng"
    RANDOM_STATE = "numpy.random.RandomState"
    PY_RANDOM = "random.Random"
    TORCH = "torch.Generator"


SAME = "all draw the same numbers"
# Under spawn/forkserver (the default on Windows, macOS and Python >= 3.14)
# workers crash unpickling a torch.Generator (pytorch #146828).
SPAWN_CRASH = "; under spawn they crash"


@dataclass
class Stored:
    attr: str
    stmt: ast.stmt
    kind: Kind
    ctor: ast.Call  # the constructor call (inside a `.manual_seed(...)` chain for torch)
    display: str  # the constructor as the user spelled it: "np.random.default_rng"


def stored_generator(value: ast.expr, rule: Rule) -> tuple[Kind, ast.Call, str] | None:
    """The generator a stored value builds, as the value layer answers it:
    ``np.random.default_rng(0)``, ``torch.Generator().manual_seed(0)``,
    ``rng or default_rng()``, or a local name that every path assigns one.
    Built in the storing method only (a generator passed in or kept at
    module level is not this rule's)."""
    held = rule.ctx.values.of(value)
    gen = held.generator
    if held.kind is not ValueKind.RNG or gen is None:
        return None
    if not held.definite and not gen.alternative:
        return None  # a generator on some paths to the store only
    if enclosing_function(gen.ctor) is not enclosing_function(value):
        return None
    return Kind(gen.family), gen.ctor, rule.ctx.source.segment(rule.ctx.range(gen.ctor.func))


class StoredRngInDataset(Rule):
    """
    ## What it does
    Finds a random generator *object* (`np.random.default_rng`,
    `np.random.RandomState`, `random.Random`, `torch.Generator`) stored on a
    Dataset (`self.rng = ...`) and drawn from in `__getitem__`/`__iter__`,
    directly or through the dataset's own methods. Across files, at the
    DataLoader: a generator the workers receive through other objects (an
    augmentation object the dataset owns, a `Compose` of them, a helper's
    result), when the code the workers run (`__getitem__`, `collate_fn` and
    every function they call, in any file) draws from it and never re-seeds
    it; the message names the worker count and where it comes from
    (`num_workers=8 (args.workers, default at train.py:40)`). Such a
    generator is also reported where it is made when that is in another
    file than the DataLoader (an augmentation's `self.rs = RandomState(47)`,
    a mixin's `default_rng(seed)`), with the DataLoader as related
    information.

    Severity: **error** when a DataLoader in the file receives the dataset
    with a literal `num_workers > 0`; **warning** when its `num_workers` is
    only known at run time (`args.workers`, `os.cpu_count()`, `**kwargs`),
    when its `worker_init_fn` is defined elsewhere, when a DataLoader with
    workers gets a dataset we cannot trace to a class, or when no DataLoader
    in the file uses the dataset ("no DataLoader visible in this file": it
    may be used from another file). Silent when every DataLoader using it has
    no workers (or `num_workers=1` with `persistent_workers=True`), when its
    `worker_init_fn` re-creates the generator (through
    `get_worker_info().dataset`, or by calling a method of the dataset that
    does, also from a worker_init_fn in another file), and when the dataset re-creates or re-seeds
    it in `__getitem__`/`__iter__` (per item, or lazily per worker).

    `torchtrap run` reports what it measures, whatever this static analysis
    sees: a `random.Random`, numpy `Generator`/`RandomState` or
    `torch.Generator` reachable from the dataset in the same state in two or
    more DataLoader workers (or in one worker at the start of every epoch)
    that the workers drew from, on the line that stores it.

    ## Why is this bad?
    A generator object on a dataset reaches every DataLoader worker with the
    same state, so all workers draw the same numbers and every epoch repeats
    epoch 1. PyTorch seeds only the *global* generators in each worker
    (`random`, `torch`, `np.random`); a generator object is copied (fork) or
    pickled (spawn) into every worker, and copied again from the parent each
    epoch (measured with 4 workers under fork, spawn and forkserver). Random
    augmentations silently become a small fixed set. A stored
    `torch.Generator` makes the workers crash under spawn/forkserver
    (pytorch #146828).

    The fix adds a `worker_init_fn` that re-creates each stored generator
    from the worker's seed (`get_worker_info().seed`), which differs per
    worker and per epoch. It is safe when it only adds `worker_init_fn` to
    DataLoaders that had none; it is unsafe when it chains an existing
    `worker_init_fn` (called last) or the DataLoader takes `**kwargs` (which
    may hold one). No fix is offered when a DataLoader has a lambda or other
    non-module-level `worker_init_fn`, or receives the dataset inside a
    `Subset`/`ConcatDataset` (`get_worker_info().dataset` is then the
    wrapper). Runs stay reproducible when torch is seeded
    (`torch.manual_seed` or `generator=` on the DataLoader): the worker
    seeds derive from it. Derived seeds avoid the worker's own global
    streams: `random.Random(info.seed)`, `RandomState(info.seed % 2**32)` and
    `torch.Generator().manual_seed(info.seed)` would replay (or start from
    the same MT19937 state as) the worker's global `random` and `torch`
    generators, measured.

    ## Example
    ```python
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return 16

        def __getitem__(self, i):
            return i + self.rng.normal()

    loader = DataLoader(Noisy(), batch_size=2, num_workers=4)
    ```

    ## Use instead
    ```python
    import numpy as np
    from torch.utils.data import DataLoader, Dataset, get_worker_info

    def seed_worker(worker_id: int) -> None:
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)

    class Noisy(Dataset):
        ...

    loader = DataLoader(Noisy(), batch_size=2, num_workers=4, worker_init_fn=seed_worker)
    ```

    ## References
    - [PyTorch FAQ: my data loader workers return identical random numbers](https://pytorch.org/docs/stable/notes/faq.html#my-data-loader-workers-return-identical-random-numbers)
    - [DataLoader: randomness in multi-process data loading](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
    - A stored `torch.Generator` crashes spawn workers:
      [pytorch #146828](https://github.com/pytorch/pytorch/issues/146828)
    - `torch/utils/data/_utils/worker.py`: which generators each worker seeds
    """

    code = "TT101"
    name = "stored-rng-in-dataset"
    summary = "A generator object stored on a Dataset is copied into every DataLoader worker"
    fact = (
        "Measured with 4 workers under fork, spawn and forkserver: all drew identical "
        "numbers, and epoch 2 repeated epoch 1 exactly."
    )
    default_severity = Severity.ERROR
    requires_text = ("default_rng", "Random", "Generator", "DataLoader", "Trainer")

    def check(self) -> Iterable[Finding]:
        datasets = self.ctx.values.datasets
        seen: set[int] = set()
        imports = self.ctx.facts.imports
        # The constructors' own names and their local aliases (`make_rng`).
        words = self.requires_text + tuple(
            name for qual in CONSTRUCTORS for name in imports.local_names_for(qual)
        )
        for view in datasets.views():
            if not view.has_entry() or not view.mentions(self.ctx.source, words):
                continue
            flagged = list(self._flagged(view))
            for stored in flagged:
                if id(stored.stmt) in seen:
                    continue  # a base class's generator, already reported
                judgement = judge(
                    datasets,
                    view,
                    self._status_for(datasets, view, stored.attr),
                    remote_uses(self.ctx, view.name),
                )
                if judgement is None:
                    continue
                seen.add(id(stored.stmt))
                yield self._finding(datasets, view, stored, flagged, judgement)
        ctx = self.ctx
        for found in payload_culprits(ctx.project, ctx.path, ctx.text, ctx.tree, "rng"):
            yield self._payload_finding(found)
        makes = [w for w in words if w not in ("DataLoader", "Trainer")]
        if ctx.project is None or not any(w in ctx.text for w in makes):
            return  # only a file that can make a generator asks the loaders' model
        for here in rng_here(ctx.project, ctx.path, ctx.text, ctx.tree):
            yield self.finding(
                here.node,
                here.message,
                severity=Severity.ERROR if here.certain else Severity.WARNING,
                related=here.related,
            )

    def _payload_finding(self, found: PayloadCulprit) -> Finding:
        """A generator the workers get through other objects (an augmentation
        object, a ``Compose`` of them, a helper's result) and draw from in
        the code they run (``__getitem__``, ``collate_fn`` and what they call)."""
        workers = found.culprit.loader.workers
        certain = workers.kind == "some"
        if workers.values == (1,) and not workers.positive:
            tail = ": the same random numbers every epoch"
        else:
            tail = ": the same numbers in each"
        message = found.message("every worker gets the same generator", tail)
        return self.finding(
            found.node,
            message,
            severity=Severity.ERROR if certain else Severity.WARNING,
            related=found.related,
        )

    # -- detection -----------------------------------------------------------
    def _flagged(self, view: DatasetView) -> Iterator[Stored]:
        stored: dict[str, Stored] = {}
        for fn in view.all_methods():
            for attr, stmt, _target, value in self_stores(fn):
                if value is None or attr in stored:
                    continue
                found = stored_generator(value, self)
                if found is not None:
                    stored[attr] = Stored(attr, stmt, *found)
        if not stored:
            return
        drawn: set[str] = set()
        rebuilt: set[str] = set()
        for fn in view.worker_methods():
            me = self_name(fn)
            for node in walk(fn):
                if isinstance(node, ast.Attribute):
                    used = self_attribute(node, me)
                    if used is None or used not in stored:
                        continue
                    if isinstance(node.ctx, ast.Store):
                        rebuilt.add(used)  # re-created per item or per worker
                    else:
                        use = generator_use(node)
                        if use == "draw":
                            drawn.add(used)
                        elif use == "reseed":
                            rebuilt.add(used)
                elif isinstance(node, ast.Call):
                    name = setattr_name(node)
                    if name is not None and name in stored:
                        rebuilt.add(name)
        for attr, item in sorted(stored.items(), key=lambda kv: kv[1].stmt.lineno):
            if attr in drawn and attr not in rebuilt:
                yield item

    def _status_for(
        self, datasets: DatasetFacts, view: DatasetView, attr: str
    ) -> Callable[[DataLoaderCall], LoaderStatus]:
        return lambda loader: self._status(datasets, view, loader, attr)

    def _status(
        self, datasets: DatasetFacts, view: DatasetView, loader: DataLoaderCall, attr: str
    ) -> LoaderStatus:
        persistent = literal(loader.argument("persistent_workers"))
        if (
            loader.workers is Workers.SOME
            and literal(loader.workers_expr) == 1
            and persistent is True
        ):
            return LoaderStatus.IGNORED  # one worker that lives across epochs: one stream
        resets = self.ctx.values.worker_init_resets(loader, attr, view)
        if resets is None:
            return LoaderStatus.UNCERTAIN  # a worker_init_fn we cannot read may fix it
        return LoaderStatus.IGNORED if resets else LoaderStatus.COUNTS

    # -- reporting -----------------------------------------------------------
    def _finding(
        self,
        datasets: DatasetFacts,
        view: DatasetView,
        stored: Stored,
        flagged: list[Stored],
        judgement: Judgement,
    ) -> Finding:
        what = f"`self.{stored.attr}` ({stored.display})"
        loaders = judgement.loaders
        exposure = judgement.exposure
        related: list[RelatedLocation] = []
        if exposure in (Exposure.WORKERS, Exposure.MAYBE):
            severity = Severity.ERROR if exposure is Exposure.WORKERS else Severity.WARNING
            message = copies_message(what, loaders)
            unread = [
                loader
                for loader in loaders
                if self._status(datasets, view, loader, stored.attr) is LoaderStatus.UNCERTAIN
            ]
            if unread:
                message = (
                    f"{what} may repeat in every DataLoader worker unless "
                    "`worker_init_fn` re-creates it"
                )
                init = unread[0].argument("worker_init_fn")
                if init is not None and not is_remote(unread[0]):
                    note = f"`worker_init_fn={loader_init_text(unread[0])}` is defined elsewhere"
                    related.append(self.ctx.related(init, note))
        elif exposure is Exposure.UNLINKED:
            severity = Severity.WARNING
            message = f"{what} may be copied into DataLoader workers: {SAME}"
        else:
            severity = Severity.WARNING
            message = f"{what} would repeat in every DataLoader worker (no DataLoader visible here)"
        if stored.kind is Kind.TORCH and len(message + SPAWN_CRASH) <= MESSAGE_LIMIT:
            message += SPAWN_CRASH
        message = with_location(message, loaders)
        related[:0] = [self.ctx.related(lo.node, related_message(lo, exposure)) for lo in loaders]
        return self.finding(
            stored.stmt,
            message,
            severity=severity,
            fixes=self._fixes(view, stored, flagged, judgement),
            related=related,
        )

    def _fixes(
        self, view: DatasetView, stored: Stored, flagged: list[Stored], judgement: Judgement
    ) -> list[Fix]:
        if judgement.exposure not in (Exposure.WORKERS, Exposure.MAYBE):
            return []
        if not judgement.all_direct:
            return []  # inside a Subset: get_worker_info().dataset is the wrapper
        if any(is_remote(lo) for lo in judgement.loaders):
            return []  # a fix edits this file only
        if any(not _rebuildable(s) for s in flagged):
            return []
        plan = plan_worker_init(judgement.loaders, self.ctx.tree)
        if plan is None:
            return []
        attrs = ", ".join(f"`self.{s.attr}`" for s in flagged)
        title = plan.title(f"Re-create {attrs} in each worker from its seed (worker_init_fn)")
        comment = [
            "TorchTrap TT101: re-create the dataset's random generators from this",
            "worker's seed, so that workers differ and each epoch draws new numbers.",
        ]

        def build() -> list[Edit]:
            return worker_init_edits(
                self.ctx.source,
                self.ctx.tree,
                self.ctx.facts.index,
                plan,
                comment=comment,
                body=lambda names: rebuild_lines(names, flagged, self),
            )

        return [Fix(title, plan.applicability, build)]


def copies_message(what: str, loaders: list[DataLoaderCall]) -> str:
    """What the copies do, as precisely as the worker counts allow (the
    rest goes to related information)."""
    n = worker_count(loaders)
    if n == 1:
        return f"{what} is re-copied into the DataLoader worker each epoch: every epoch repeats it"
    if n == 2:
        return f"{what} is copied into both DataLoader workers: {SAME}"
    if n is not None:
        return f"{what} is copied into {n} DataLoader workers: {SAME}"
    if any(loader.workers is not Workers.SOME for loader in loaders):
        return f"{what} is copied into every DataLoader worker: all would draw the same numbers"
    return f"{what} is copied into every DataLoader worker: {SAME}"


def loader_init_text(loader: DataLoaderCall) -> str:
    init = loader.argument("worker_init_fn")
    return ast.unparse(init) if init is not None else ""


def _rebuildable(stored: Stored) -> bool:
    """A torch.Generator built with arguments we would have to copy
    (``device=dev``) is left to a human unless they are literals."""
    if stored.kind is not Kind.TORCH:
        return True
    args = [*stored.ctor.args, *(kw.value for kw in stored.ctor.keywords)]
    return all(isinstance(a, ast.Constant) for a in args) and all(
        kw.arg is not None for kw in stored.ctor.keywords
    )


def rebuild_lines(names: ModuleNames, flagged: list[Stored], rule: Rule) -> list[str] | None:
    """``info = get_worker_info()`` and one ``info.dataset.<attr> = ...`` per
    stored generator, each from a seed no other stream in the worker uses."""
    info = names.reference("torch.utils.data.get_worker_info")
    if info is None:
        return None
    lines = [f"info = {info}()"]

    def note(comment: str) -> None:
        if comment not in lines:
            lines.append(comment)

    counts: dict[Kind, int] = {}
    for stored in flagged:
        i = counts.get(stored.kind, 0)
        counts[stored.kind] = i + 1
        many = sum(1 for s in flagged if s.kind is stored.kind) > 1
        seed = f"[info.seed, {i}]" if many else "info.seed"
        if stored.kind is Kind.NUMPY:
            ctor = names.reference("numpy.random.default_rng")
            value = f"{ctor}({seed})"
        elif stored.kind is Kind.RANDOM_STATE:
            ctor = names.reference("numpy.random.RandomState")
            bits = names.reference("numpy.random.MT19937")
            if ctor is None or bits is None:
                return None
            # RandomState(info.seed % 2**32) would start from the MT19937 state
            # torch gave the worker's global generator.
            note("# MT19937(seed): legacy seeding would copy the worker's torch stream.")
            value = f"{ctor}({bits}({seed}))"
            ctor = value
        elif stored.kind is Kind.PY_RANDOM:
            ctor = names.reference("random.Random")
            note("# info.seed itself seeds the worker's global `random`.")
            value = f"{ctor}(info.seed + {i + 1} * 2**64)" if i else f"{ctor}(info.seed + 2**64)"
        else:
            ctor = names.reference("torch.Generator")
            args = rule.ctx.source.segment(rule.ctx.range(stored.ctor))
            inner = args[args.index("(") :] if "(" in args else "()"
            # torch keeps the low 32 bits of a seed: these offsets keep them
            # apart from every worker's info.seed (and from each other).
            offset = "2**31" + ("" if i == 0 else " + 2**16" if i == 1 else f" + {i} * 2**16")
            note("# info.seed itself seeds the worker's global torch generator.")
            value = f"{ctor}{inner}.manual_seed(info.seed + {offset})"
        if ctor is None:
            return None
        lines.append(f"info.dataset.{stored.attr} = {value}")
    return lines


# -- examples ----------------------------------------------------------------

_DS = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return index + self.rng.normal()
"""

StoredRngInDataset.valid = (
    Valid(
        _DS + "\n\nloader = DataLoader(Noisy(), batch_size=2)\n",
        note="no workers: the main process draws one stream",
    ),
    Valid(
        _DS + "\n\nloader = DataLoader(Noisy(), batch_size=2, num_workers=0)\n",
        note="num_workers=0",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __len__(self):
                return 16

            def __getitem__(self, index):
                rng = np.random.default_rng(index)
                return index + rng.normal()


        loader = DataLoader(Noisy(), num_workers=4)
        """,
        note="a generator created per item is local",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self, seed):
                self.seed = seed
                self.rng = np.random.default_rng(seed)

            def __len__(self):
                return 16

            def __getitem__(self, index):
                self.rng = np.random.default_rng(self.seed + index)
                return index + self.rng.normal()


        loader = DataLoader(Noisy(0), num_workers=4)
        """,
        note="re-seeded from the index in __getitem__",
    ),
    Valid(
        _DS
        + """

def seed_worker(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


loader = DataLoader(Noisy(), num_workers=4, worker_init_fn=seed_worker)
""",
        note="the standard recipe re-creates it per worker",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset, get_worker_info


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)
                self.rng_worker = None

            def __len__(self):
                return 16

            def __getitem__(self, index):
                info = get_worker_info()
                if info is not None and self.rng_worker != info.id:
                    self.rng = np.random.default_rng(info.seed)
                    self.rng_worker = info.id
                return index + self.rng.normal()


        loader = DataLoader(Noisy(), num_workers=4)
        """,
        note="the dataset rebuilds lazily from get_worker_info()",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)
                self.noise = self.rng.normal(size=16)  # drawn once, in the parent

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return index + self.noise[index]


        loader = DataLoader(Noisy(), num_workers=4)
        """,
        note="stored, but never drawn from in a worker",
    ),
    Valid(
        """\
        import random
        from torch.utils.data import DataLoader, Dataset


        class Flip(Dataset):
            def __len__(self):
                return 16

            def __getitem__(self, index):
                return -index if random.random() < 0.5 else index


        loader = DataLoader(Flip(), num_workers=4)
        """,
        note="the global random module is seeded per worker by torch",
    ),
    Valid(
        """\
        import random
        from torch.utils.data import DataLoader, Dataset


        class Flip(Dataset):
            def __init__(self):
                self.rng = random.SystemRandom()

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return -index if self.rng.random() < 0.5 else index


        loader = DataLoader(Flip(), num_workers=4)
        """,
        note="SystemRandom reads the OS: no state to copy",
    ),
    Valid(
        """\
        import numpy as np


        class Sampler:
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __getitem__(self, index):
                return self.rng.normal()
        """,
        note="not a Dataset and never given to a DataLoader",
    ),
    Valid(
        _DS
        + """

loader = DataLoader(
    Noisy(),
    num_workers=4,
    worker_init_fn=lambda _: setattr(
        torch.utils.data.get_worker_info().dataset, "rng", np.random.default_rng()
    ),
)
""",
        note="a lambda worker_init_fn that re-creates it",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset, get_worker_info


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return index + self.rng.normal()

            @staticmethod
            def worker_init(worker_id):
                info = get_worker_info()
                info.dataset.reseed(info.seed)

            def reseed(self, seed):
                self.rng = np.random.default_rng(seed)


        loader = DataLoader(Noisy(), num_workers=4, worker_init_fn=Noisy.worker_init)
        """,
        note="worker_init_fn calls a dataset method that re-creates it",
    ),
    Valid(
        """\
        import random
        from torch.utils.data import DataLoader, Dataset


        class Flip(Dataset):
            def __init__(self):
                self.rng = random.Random(0)

            def __len__(self):
                return 16

            def __getitem__(self, index):
                self.rng.seed(index)
                return -index if self.rng.random() < 0.5 else index


        loader = DataLoader(Flip(), num_workers=4)
        """,
        note="re-seeded in place per item",
    ),
    Valid(
        _DS + "\n\nloader = DataLoader(Noisy(), num_workers=1, persistent_workers=True)\n",
        note="one persistent worker: a single stream that continues across epochs",
    ),
    Valid(
        _DS
        + """

train = DataLoader(MNIST("data"), num_workers=4)
debug = DataLoader(Noisy(), num_workers=0)
""",
        note="the loader with workers gets another dataset",
    ),
    Valid(
        """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __len__(self):
                return 16

            def __getitem__(self, index):
                return index + self.rng.normal()


        def make(dataset):
            return DataLoader(dataset, num_workers=0)
        """,
        note="every visible DataLoader has no workers",
    ),
)

StoredRngInDataset.invalid = (
    Invalid(
        _DS + "\n\nloader = DataLoader(Noisy(), batch_size=2, num_workers=4)\n",
        line=7,
        severity=Severity.ERROR,
        message_contains="`self.rng` (np.random.default_rng) is copied into 4 DataLoader workers",
        fixed="""\
import numpy as np
from torch.utils.data import DataLoader, Dataset, get_worker_info


def seed_worker(worker_id: int) -> None:
    # TorchTrap TT101: re-create the dataset's random generators from this
    # worker's seed, so that workers differ and each epoch draws new numbers.
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 16

    def __getitem__(self, index):
        return index + self.rng.normal()


loader = DataLoader(Noisy(), batch_size=2, num_workers=4, worker_init_fn=seed_worker)
""",
    ),
    Invalid(
        _DS,
        line=7,
        severity=Severity.WARNING,
        message_contains="no DataLoader visible here",
    ),
    Invalid(
        _DS + "\n\ndef main(args):\n    return DataLoader(Noisy(), num_workers=args.workers)\n",
        severity=Severity.WARNING,
        message_contains="all would draw the same numbers",
    ),
    Invalid(
        """\
        from numpy.random import default_rng
        from torch.utils.data import DataLoader as DL
        from torch.utils.data import Dataset


        class Crops(Dataset):
            def __init__(self, seed=0):
                self.gen = default_rng(seed)

            def __len__(self):
                return 8

            def _offset(self):
                return self.gen.integers(0, 4)

            def __getitem__(self, index):
                return index + self._offset()


        loader = DL(Crops(), num_workers=2)
        """,
        line=8,
        severity=Severity.ERROR,
        message_contains="`self.gen` (default_rng)",
        note="aliases, drawn through a helper method",
    ),
    Invalid(
        """\
        import random as rnd
        import torch.utils.data as tud


        class Stream(tud.IterableDataset):
            def __init__(self):
                self.r = rnd.Random(0)

            def __iter__(self):
                for i in range(8):
                    yield i * self.r.random()


        loader = tud.DataLoader(Stream(), num_workers=3)
        """,
        line=7,
        severity=Severity.ERROR,
        message_contains="`self.r` (rnd.Random)",
        fixed="""\
        import random as rnd
        import torch.utils.data as tud


        def seed_worker(worker_id: int) -> None:
            # TorchTrap TT101: re-create the dataset's random generators from this
            # worker's seed, so that workers differ and each epoch draws new numbers.
            info = tud.get_worker_info()
            # info.seed itself seeds the worker's global `random`.
            info.dataset.r = rnd.Random(info.seed + 2**64)


        class Stream(tud.IterableDataset):
            def __init__(self):
                self.r = rnd.Random(0)

            def __iter__(self):
                for i in range(8):
                    yield i * self.r.random()


        loader = tud.DataLoader(Stream(), num_workers=3, worker_init_fn=seed_worker)
        """,
        note="IterableDataset, module aliases",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Jitter(Dataset):
            def __init__(self):
                self.g = torch.Generator().manual_seed(0)

            def __len__(self):
                return 8

            def __getitem__(self, index):
                return torch.rand(2, generator=self.g)


        loader = DataLoader(
            Jitter(), num_workers=2, persistent_workers=True
        )
        """,
        line=7,
        severity=Severity.ERROR,
        message_contains=(
            "`self.g` (torch.Generator) is copied into both DataLoader workers: "
            "all draw the same numbers; under spawn they crash"
        ),
        fixed="""\
        import torch
        from torch.utils.data import DataLoader, Dataset


        def seed_worker(worker_id: int) -> None:
            # TorchTrap TT101: re-create the dataset's random generators from this
            # worker's seed, so that workers differ and each epoch draws new numbers.
            info = torch.utils.data.get_worker_info()
            # info.seed itself seeds the worker's global torch generator.
            info.dataset.g = torch.Generator().manual_seed(info.seed + 2**31)


        class Jitter(Dataset):
            def __init__(self):
                self.g = torch.Generator().manual_seed(0)

            def __len__(self):
                return 8

            def __getitem__(self, index):
                return torch.rand(2, generator=self.g)


        loader = DataLoader(
            Jitter(), num_workers=2, persistent_workers=True, worker_init_fn=seed_worker
        )
        """,
        note="chained torch.Generator; persistent: no epoch repeat claimed",
    ),
    Invalid(
        """\
        import numpy as np
        import random
        from torch.utils.data import DataLoader, Dataset


        def seed_worker(worker_id):
            np.random.seed(worker_id)
            random.seed(worker_id)


        class Aug(Dataset):
            def __init__(self):
                self.rs = np.random.RandomState(123)

            def __len__(self):
                return 8

            def __getitem__(self, index):
                return self.rs.rand()


        loader = DataLoader(
            Aug(),
            batch_size=2,
            num_workers=4,
            worker_init_fn=seed_worker,
        )
        """,
        line=13,
        severity=Severity.ERROR,
        fixed="""\
        import numpy as np
        import random
        from torch.utils.data import DataLoader, Dataset, get_worker_info


        def _torchtrap_seed_worker(worker_id: int) -> None:
            # TorchTrap TT101: re-create the dataset's random generators from this
            # worker's seed, so that workers differ and each epoch draws new numbers.
            info = get_worker_info()
            # MT19937(seed): legacy seeding would copy the worker's torch stream.
            info.dataset.rs = np.random.RandomState(np.random.MT19937(info.seed))
            seed_worker(worker_id)


        def seed_worker(worker_id):
            np.random.seed(worker_id)
            random.seed(worker_id)


        class Aug(Dataset):
            def __init__(self):
                self.rs = np.random.RandomState(123)

            def __len__(self):
                return 8

            def __getitem__(self, index):
                return self.rs.rand()


        loader = DataLoader(
            Aug(),
            batch_size=2,
            num_workers=4,
            worker_init_fn=_torchtrap_seed_worker,
        )
        """,
        note="the reproducibility recipe's seed_worker does not fix it: chained (unsafe)",
    ),
    Invalid(
        _DS
        + """

ds = Noisy()
train, val = torch.utils.data.random_split(ds, [12, 4])
loader = DataLoader(train, num_workers=4)
""",
        line=7,
        severity=Severity.ERROR,
        note="received through random_split: flagged, no fix (info.dataset is the Subset)",
    ),
    Invalid(
        _DS + "\n\ndef make(dataset):\n    return DataLoader(dataset, num_workers=8)\n",
        severity=Severity.WARNING,
        message_contains="may be copied into DataLoader workers",
    ),
    Invalid(
        _DS + "\n\nloader = DataLoader(Noisy(), num_workers=4, worker_init_fn=utils.seed_worker)\n",
        severity=Severity.WARNING,
        message_contains="unless `worker_init_fn` re-creates it",
    ),
)
