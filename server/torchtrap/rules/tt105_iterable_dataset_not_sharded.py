"""TT105 iterable-dataset-not-sharded."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.datasets import DatasetView, located_phrase, self_stores, worker_count
from torchtrap.facts.index import walk
from torchtrap.facts.remote import with_location
from torchtrap.facts.workers import SHARDING_WORDS
from torchtrap.findings import Applicability, Edit, Finding, Fix, Position, Range, Severity
from torchtrap.fixes.names import ModuleNames
from torchtrap.fixes.structural import can_replace_statements, replace_statements
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Values
from torchtrap.values.datasets import Exposure, LoaderStatus, judge
from torchtrap.values.remote import remote_uses
from torchtrap.values.workers import stream_sources

MEASURED = (
    "measured: 10 items, 2 workers, batch_size=4 gave 6 batches, every item twice, no warning"
)


class IterableDatasetNotSharded(Rule):
    """
    ## What it does
    Finds an `IterableDataset` whose `__iter__` (and the methods it calls)
    reads a finite stream — a file, a `range`, a list it holds — without
    consulting `torch.utils.data.get_worker_info()` or a sharding helper,
    while a DataLoader with workers loads it: in the same file, or in
    another file of the project (the class in `datasets.py`,
    `DataLoader(..., num_workers=4)` in `train.py`; the finding then names
    that line).

    Severity: **warning** with a literal `num_workers > 0`, **info** when
    the worker count is only known at run time. Silent when the class
    mentions worker info or sharding (`get_worker_info`, `worker_id`,
    `num_workers`, `shard`, `split_by_worker`, `world_size`, `islice`...),
    when the DataLoader has a `worker_init_fn` (the documented way to shard
    through `get_worker_info().dataset`), when `__iter__` only wraps another
    dataset or generates an endless stream, with `num_workers=0` (in every
    file of the project that loads it), for a DataLoader in another file
    that gets a subclass defining its own `__iter__`, and when no
    DataLoader visibly loads it (one that gets it through an import the
    project cannot resolve, a third-party or dynamic one, is unknown).

    `torchtrap run` compares the first 64 items each worker of an
    IterableDataset yields and reports, on the dataset's `__iter__`, when
    most of them came from more than one worker, whatever the class
    mentions.

    ## Why is this bad?
    Each DataLoader worker gets its own copy of the dataset and calls
    `__iter__` on it; nothing splits the stream between them. Measured with
    torch 2.13: an `IterableDataset` yielding `range(10)` through
    `DataLoader(ds, batch_size=4, num_workers=2)` gave 6 batches (20 items,
    every item twice) instead of 3, under fork, spawn and forkserver alike,
    with no warning; with 3 workers, 30 items. An epoch silently trains on
    each sample `num_workers` times and validation metrics count them twice.

    Fix: shard the iterator by worker id. The body of `__iter__` moves into
    a nested generator, and each worker keeps every `num_workers`-th item
    starting at its id (`itertools.islice(it, info.id, None,
    info.num_workers)`) when `get_worker_info()` is not None, so with
    `num_workers=0` nothing changes. Each worker still reads the whole
    stream and skips the others' items; for large files, split the files
    between workers instead. A structural fix (libcst re-indents the body,
    keeping comments and strings); not offered when the body uses
    zero-argument `super()`, which a nested function cannot.

    ## Example
    ```python
    from torch.utils.data import DataLoader, IterableDataset

    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            with open(self.path) as fh:
                for line in fh:
                    yield line.rstrip("\\n")

    loader = DataLoader(Lines("data.txt"), batch_size=4, num_workers=2)
    ```

    ## Use instead
    ```python
    import itertools

    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            def unsharded():
                with open(self.path) as fh:
                    for line in fh:
                        yield line.rstrip("\\n")

            worker = get_worker_info()
            stream = iter(unsharded())
            if worker is None:
                return stream
            return itertools.islice(stream, worker.id, None, worker.num_workers)
    ```

    ## References
    - [PyTorch: iterable-style datasets and multi-process loading](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset)
      ("each worker process gets a different copy of the dataset object")
    - TorchTrap probe experiment `iterable-duplicates`
    """

    code = "TT105"
    name = "iterable-dataset-not-sharded"
    summary = "An IterableDataset yields its whole stream in every DataLoader worker"
    default_severity = Severity.WARNING
    requires_text = ("IterableDataset",)

    def check(self) -> Iterable[Finding]:
        facts = self.ctx.facts
        datasets = self.ctx.values.datasets
        for view in datasets.views():
            if not facts.classes.is_iterable_dataset(view.info) or "__iter__" not in view.methods:
                continue
            if view.mentions(self.ctx.source, SHARDING_WORDS):
                continue
            remote = None
            if not datasets.uses(view):
                # No DataLoader here gets it: only for a class that streams
                # a whole source, ask the project's other files.
                if not _streams(self.ctx.values, view):
                    continue
                # A subclass elsewhere with its own `__iter__` does not run this one.
                remote = remote_uses(self.ctx, view.name, ("__iter__",))
            judgement = judge(datasets, view, _status, remote)
            if judgement is None or judgement.exposure not in (Exposure.WORKERS, Exposure.MAYBE):
                continue
            if remote is None and not _streams(self.ctx.values, view):
                continue
            yield self._finding(view, judgement.loaders, judgement.exposure)

    def _finding(
        self, view: DatasetView, loaders: list[DataLoaderCall], exposure: Exposure
    ) -> Finding:
        fn = view.methods["__iter__"]
        count = worker_count(loaders)
        workers = f"num_workers={count}" if count else "workers"
        message = (
            f"`{view.name}.__iter__` never shards by worker: "
            f"with {workers} each worker yields the whole stream"
        )
        message = with_location(message, loaders)
        related = [
            self.ctx.related(
                loader.node,
                f"{located_phrase(loader)} runs `__iter__` once per worker ({MEASURED})",
            )
            for loader in loaders
        ]
        severity = Severity.WARNING if exposure is Exposure.WORKERS else Severity.INFO
        return self.finding(
            _name_range(self, fn),
            message,
            severity=severity,
            fixes=self._fixes(fn),
            related=related,
        )

    def _fixes(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Fix]:
        if isinstance(fn, ast.AsyncFunctionDef):
            return []
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring stays first
        if not body or not can_replace_statements(self.ctx.tree, body, self.ctx.source):
            return []
        for node in walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "super"
                and not node.args
            ) or (isinstance(node, ast.Name) and node.id == "__class__"):
                return []  # zero-argument super() needs the method's own frame
        ctx = self.ctx

        def build() -> list[Edit]:
            names = ModuleNames(ctx.source, ctx.tree, ctx.facts.index)
            info = names.reference("torch.utils.data.get_worker_info")
            islice = names.reference("itertools.islice")
            if info is None or islice is None:
                return []
            inner = names.fresh("unsharded")
            worker = names.fresh("worker")
            stream = names.fresh("stream")
            template = (
                f"def {inner}():\n    __body__\n\n"
                f"{worker} = {info}()\n"
                f"{stream} = iter({inner}())\n"
                f"if {worker} is None:\n    return {stream}\n"
                f"return {islice}({stream}, {worker}.id, None, {worker}.num_workers)\n"
            )
            edits = replace_statements(ctx.source, ctx.tree, body, template)
            return [*edits, *names.import_edits()] if edits else []

        return [
            Fix(
                "Shard the stream by worker id (`itertools.islice` over `get_worker_info()`)",
                Applicability.SAFE,
                build,
            )
        ]


def _streams(values: Values, view: DatasetView) -> bool:
    """``__iter__`` (and what it calls) iterates a whole finite source."""
    stores: dict[str, list[ast.expr]] = {}
    for fn in view.all_methods():
        for attr, _stmt, _target, value in self_stores(fn):
            if value is not None:
                stores.setdefault(attr, []).append(value)
    return bool(stream_sources(values, view.worker_methods(), stores))


def _status(loader: DataLoaderCall) -> LoaderStatus:
    # A worker_init_fn may shard through get_worker_info().dataset (the
    # pattern the PyTorch docs show); one we cannot read is not evidence.
    if loader.argument("worker_init_fn") is not None or loader.has_splat:
        return LoaderStatus.IGNORED
    if worker_count([loader]) == 1:
        return LoaderStatus.IGNORED  # one worker: one copy of the stream
    return LoaderStatus.COUNTS


def _name_range(rule: Rule, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Range:
    """The method's name on its ``def`` line, not the whole body."""
    line = rule.ctx.source.line(fn.lineno)
    start = line.find(fn.name)
    if start < 0:
        return rule.ctx.range(fn)
    return Range(Position(fn.lineno, start), Position(fn.lineno, start + len(fn.name)))


# -- examples ----------------------------------------------------------------

_LINES = """\
from torch.utils.data import DataLoader, IterableDataset


class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        # one sample per line
        with open(self.path) as fh:
            for line in fh:
                yield line.rstrip("\\n")


loader = DataLoader(Lines("data.txt"), batch_size=4, num_workers=2)
"""

_LINES_FIXED = """\
from torch.utils.data import DataLoader, IterableDataset, get_worker_info
import itertools


class Lines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        # one sample per line
        def unsharded():
            with open(self.path) as fh:
                for line in fh:
                    yield line.rstrip("\\n")

        worker = get_worker_info()
        stream = iter(unsharded())
        if worker is None:
            return stream
        return itertools.islice(stream, worker.id, None, worker.num_workers)


loader = DataLoader(Lines("data.txt"), batch_size=4, num_workers=2)
"""

_RANGE = """\
import torch
import torch.utils.data as tud


class Numbers(tud.IterableDataset):
    \"\"\"The numbers 0..n-1.\"\"\"

    def __init__(self, n):
        self.items = list(range(n))

    def __iter__(self):
        \"\"\"Every number once.\"\"\"
        return iter(self.items)


def make(args):
    return tud.DataLoader(Numbers(10), batch_size=4, num_workers=args.workers)
"""

IterableDatasetNotSharded.valid = (
    Valid(_LINES_FIXED, note="sharded by get_worker_info()"),
    Valid(_LINES.replace("num_workers=2", "num_workers=0"), note="num_workers=0"),
    Valid(
        _LINES.replace("num_workers=2)", "num_workers=2, worker_init_fn=split_files)"),
        note="a worker_init_fn (the documented way to shard through the dataset copy)",
    ),
    Valid(
        _LINES.replace("        # one sample per line\n", "        # each shard is one file\n"),
        note="the class talks about shards",
    ),
    Valid(
        """\
        import random
        from torch.utils.data import DataLoader, IterableDataset


        class Noise(IterableDataset):
            def __iter__(self):
                while True:
                    yield random.random()


        loader = DataLoader(Noise(), batch_size=4, num_workers=2)
        """,
        note="an endless generated stream: no duplicated epoch",
    ),
    Valid(
        """\
        from torch.utils.data import DataLoader, IterableDataset


        class Mapped(IterableDataset):
            def __init__(self, source, fn):
                self.source = source
                self.fn = fn

            def __iter__(self):
                for item in self.source:
                    yield self.fn(item)


        def make(source):
            return DataLoader(Mapped(source, str), num_workers=2)
        """,
        note="wraps another dataset, which may shard itself",
    ),
    Valid(
        _LINES.replace("IterableDataset", "Dataset").replace(
            "    def __iter__(self):",
            "    def __getitem__(self, i):\n        return i\n\n    def __iter__(self):",
        ),
        note="a map-style Dataset: the sampler splits the indices",
    ),
    Valid(
        _LINES.replace(
            '\n\nloader = DataLoader(Lines("data.txt"), batch_size=4, num_workers=2)\n', "\n"
        ),
        note="no DataLoader in this file",
    ),
)

IterableDatasetNotSharded.valid += (
    Valid(_LINES.replace("num_workers=2", "num_workers=1"), note="one worker: one copy"),
    Valid(
        """\
        from torch.utils.data import DataLoader, IterableDataset


        class QueueDataset(IterableDataset):
            def __init__(self, queue):
                self.queue = queue

            def __iter__(self):
                for _ in range(5):
                    yield self.queue.get(timeout=5)


        def make(queue):
            return DataLoader(QueueDataset(queue), num_workers=2)
        """,
        note="a loop counter over a shared queue (Lightning's tests): not a stream source",
    ),
)

IterableDatasetNotSharded.invalid = (
    Invalid(
        _LINES.replace(
            "    def __iter__(self):\n        # one sample per line\n"
            "        with open(self.path) as fh:\n            for line in fh:\n"
            '                yield line.rstrip("\\n")\n',
            "    def __iter__(self): return iter(open(self.path))\n",
        ),
        line=8,
        note="a one-line body: flagged, no structural fix (nothing to re-indent safely)",
    ),
    Invalid(
        _LINES,
        line=8,
        severity=Severity.WARNING,
        message_contains="`Lines.__iter__` never shards by worker: with num_workers=2",
        fixed=_LINES_FIXED,
    ),
    Invalid(
        _RANGE,
        line=11,
        severity=Severity.INFO,
        fixed=_RANGE.replace(
            "import torch.utils.data as tud\n", "import torch.utils.data as tud\nimport itertools\n"
        ).replace(
            "        return iter(self.items)\n",
            "        def unsharded():\n            return iter(self.items)\n\n"
            "        worker = tud.get_worker_info()\n"
            "        stream = iter(unsharded())\n"
            "        if worker is None:\n            return stream\n"
            "        return itertools.islice(stream, worker.id, None, worker.num_workers)\n",
        ),
        note="a list held on self, run-time worker count; the docstring stays first",
    ),
)
