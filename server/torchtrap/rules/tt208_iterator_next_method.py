"""TT208: ``it.next()`` on a DataLoader iterator (Python 2 spelling)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.guards import compatibility_guarded
from torchtrap.findings import Applicability, Finding, Fix, Severity
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid


class IteratorNextMethod(Rule):
    """Flags `.next()` called on an iterator over a DataLoader.

    ## What it does
    Flags `it.next()` where `it` is an iterator over a `torch.utils.data.DataLoader`:
    `iter(loader).next()`, `loader.__iter__().next()`, or a name or attribute
    (`self.iter_source`) whose every assignment is such an iterator. The loader
    is a `DataLoader(...)` created in the same file, a name, attribute,
    dict or list item or function result bound to one, a parameter annotated
    `DataLoader`, or a parameter whose every caller in the file passes one.

    Silent under a version check (`if sys.version_info[0] == 2:`) and in a
    `try:` whose handler catches AttributeError (Python 2 compatibility code).
    Python 3's builtin iterators have no `.next()` either, so `.next()` on any
    `iter(x)` result is flagged too, as a warning (what `x` is, is not known),
    unless a class of the project defines a `next` method (a custom prefetcher
    whose `__iter__` returns itself) or `x` is an object built by another
    library (its iterator is unknown).

    ## Why is this bad?
    `.next()` is the Python 2 iterator protocol. Python 3 iterators only have
    `__next__`, so the line raises, measured with torch 2.13:
    `AttributeError: '_SingleProcessDataLoaderIter' object has no attribute 'next'`
    (`'_MultiProcessingDataLoaderIter'` with `num_workers > 0`). Code copied from
    older tutorials (a domain-adaptation loop that calls `iter_source.next()`)
    crashes at its first batch. The builtin `next(it)` works on every iterator.

    ## Example
    ```python
    iter_source = iter(train_source_dataloader)
    data_source, label_source = iter_source.next()
    ```

    ## Use instead
    ```python
    iter_source = iter(train_source_dataloader)
    data_source, label_source = next(iter_source)
    ```

    ## References
    - https://docs.python.org/3/library/functions.html#next
    - https://peps.python.org/pep-3114/ (`next()` renamed to `__next__()`)
    - https://pytorch.org/docs/stable/data.html
    """

    code = "TT208"
    name = "iterator-next-method"
    summary = "`it.next()` on a DataLoader iterator: Python 3 iterators have no `.next()`"
    default_severity = Severity.ERROR  # it raises at the first batch
    requires_text = (".next()",)

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not (
                isinstance(func, ast.Attribute)
                and func.attr == "next"
                and not call.args
                and not call.keywords
            ):
                continue
            if compatibility_guarded(call):
                continue  # Python 2 branch, or a fallback for the AttributeError
            loaders = self.ctx.values.loaders
            evidence = loaders.iterator(func.value, call)
            severity = None
            if evidence is None:
                # No builtin Python 3 iterator has `.next()`: what `iter(x)` gave
                # has one only if some class of the project defines it.
                evidence = loaders.iter_result(func.value, call)
                if evidence is None or self._project_defines_next():
                    continue
                severity = Severity.WARNING  # what `x` is, is not known
            receiver = self.ctx.source.segment(self.ctx.range(func.value))
            # Two mentions of a long receiver would push the message past 120 characters.
            shown = receiver if len(receiver) <= 16 and "\n" not in receiver else "it"
            fixes = []
            if not self.ctx.values.shadowed("next", call):
                fixes.append(self._fix(call, receiver, shown))
            related = [
                self.ctx.related(d.node, "the DataLoader this iterates over")
                for d in evidence.calls[:3]
            ]
            what = "DataLoader iterators" if evidence.calls else "Python 3 iterators"
            yield self.finding(
                call,
                f"`{shown}.next()` raises AttributeError: {what} have no `.next()`; "
                f"use `next({shown})`",
                fixes=fixes,
                related=related,
                severity=severity,
            )

    def _project_defines_next(self) -> bool:
        """A class of this file or of the project defines a ``next`` method: an
        ``__iter__`` may return one of its instances."""
        found = getattr(self, "_defines_next", None)
        if found is None:
            found = any(
                isinstance(n, ast.ClassDef)
                and any(
                    isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "next"
                    for m in n.body
                )
                for n in self.ctx.facts.index.of(ast.ClassDef)
            )
            project = self.ctx.project
            if not found and project is not None:
                found = any(
                    "next" in c.methods for summary in project for c in summary.classes.values()
                )
            self._defines_next = found
        return found

    def _fix(self, call: ast.Call, receiver: str, shown: str) -> Fix:
        source = self.ctx.source
        text = f"next({receiver})"
        # The title quotes what the fix writes (tests/test_fix_titles.py).
        quoted = text if len(text) <= 48 and "\n" not in text else "next(...)"
        return Fix(
            f"Use `{quoted}`",
            Applicability.SAFE,
            build=lambda: [edits.replace(source, call, text)],
        )

    valid = (
        Valid(
            """
            from torch.utils.data import DataLoader

            def train(dataset):
                loader = DataLoader(dataset, batch_size=4)
                it = iter(loader)
                batch = next(it)
                batch = it.__next__()
                return batch
            """,
            note="the Python 3 spellings",
        ),
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader

            class DataPrefetcher:
                def __init__(self, loader):
                    self.loader = iter(loader)
                    self.stream = torch.cuda.Stream()

                def next(self):
                    return next(self.loader)

            def train(dataset):
                prefetcher = DataPrefetcher(DataLoader(dataset, batch_size=4))
                batch = prefetcher.next()
                return batch
            """,
            note="a custom prefetcher class defines its own next()",
        ),
        Valid(
            """
            class Batches:
                def __init__(self, items):
                    self.items = list(items)

                def __iter__(self):
                    return self

                def next(self):
                    return self.items.pop()

            def consume(loader, items):
                it = iter(loader)
                return it.next()
            """,
            note="a class of the project defines `next()`: `loader` may be one",
        ),
        Valid(
            """
            import mxnet as mx

            def consume(data):
                it = iter(mx.io.NDArrayIter(data, batch_size=4))
                return it.next()
            """,
            note="an iterator of another library's object: unknown",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def train(dataset, resume):
                loader = DataLoader(dataset)
                it = iter(loader) if not resume else resume.iterator()
                return it.next()
            """,
            note="one binding may be another object",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def train(dataset):
                loader = DataLoader(dataset)
                it = iter(loader)
                x = it.next
                it.next(0)
                return x
            """,
            note="not a call without arguments",
        ),
        Valid(
            """
            from mylib import DataLoader

            def train(dataset):
                return iter(DataLoader(dataset)).next()
            """,
            note="another library's DataLoader: unknown",
        ),
        Valid(
            """
            import sys
            from torch.utils.data import DataLoader

            def first(dataset):
                it = iter(DataLoader(dataset))
                if sys.version_info[0] == 2:
                    return it.next()
                try:
                    return it.next()
                except AttributeError:
                    return next(it)
            """,
            note="Python 2 compatibility code",
        ),
    )
    invalid = (
        Invalid(
            """
            def consume(loader, items):
                it = iter(loader)
                first = it.next()
                other = iter(items).next()
                return first, other
            """,
            line=4,
            severity=Severity.WARNING,
            message_contains="Python 3 iterators have no `.next()`",
            note="whatever `loader` is, no class of the project defines `next()`",
        ),
        Invalid(
            """
            import time
            import torch

            def train(train_source_dataloader, train_target_dataloader):
                len_source = len(train_source_dataloader)
                len_target = len(train_target_dataloader)
                num_iter = max(len_source, len_target)
                end = time.time()
                for batch_idx in range(num_iter):
                    if batch_idx % len_source == 0:
                        iter_source = iter(train_source_dataloader)
                    if batch_idx % len_target == 0:
                        iter_target = iter(train_target_dataloader)
                    data_source, label_source = iter_source.next()
                    data_target, label_target = iter_target.next()

            source = torch.utils.data.DataLoader(range(10), batch_size=4)
            target = torch.utils.data.DataLoader(range(12), batch_size=4)
            train(source, target)
            """,
            line=15,
            message_contains="`iter_source.next()` raises AttributeError",
            fixed="""
            import time
            import torch

            def train(train_source_dataloader, train_target_dataloader):
                len_source = len(train_source_dataloader)
                len_target = len(train_target_dataloader)
                num_iter = max(len_source, len_target)
                end = time.time()
                for batch_idx in range(num_iter):
                    if batch_idx % len_source == 0:
                        iter_source = iter(train_source_dataloader)
                    if batch_idx % len_target == 0:
                        iter_target = iter(train_target_dataloader)
                    data_source, label_source = next(iter_source)
                    data_target, label_target = iter_target.next()

            source = torch.utils.data.DataLoader(range(10), batch_size=4)
            target = torch.utils.data.DataLoader(range(12), batch_size=4)
            train(source, target)
            """,
            note="a domain-adaptation loop, with the loaders passed by the file's own call",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader as DL

            loader = DL(range(10), batch_size=4)
            images, labels = iter(loader).next()
            """,
            fixed="""
            from torch.utils.data import DataLoader as DL

            loader = DL(range(10), batch_size=4)
            images, labels = next(iter(loader))
            """,
            note="inline iter(), an import alias",
        ),
        Invalid(
            """
            import torch.utils.data as data

            class Trainer:
                def __init__(self, dataset):
                    self.source_loader = data.DataLoader(dataset, batch_size=4)
                    self.iter_source = iter(self.source_loader)

                def step(self):
                    return self.iter_source.next()
            """,
            fixed="""
            import torch.utils.data as data

            class Trainer:
                def __init__(self, dataset):
                    self.source_loader = data.DataLoader(dataset, batch_size=4)
                    self.iter_source = iter(self.source_loader)

                def step(self):
                    return next(self.iter_source)
            """,
            note="attributes",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader

            def first_batch(loader: DataLoader):
                return loader.__iter__().next()
            """,
            fixed="""
            from torch.utils.data import DataLoader

            def first_batch(loader: DataLoader):
                return next(loader.__iter__())
            """,
            note="an annotated parameter, __iter__()",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader

            def make_loader(dataset):
                return DataLoader(dataset, batch_size=8, shuffle=True)

            class Runner:
                def run(self, dataset):
                    self.evaluate(make_loader(dataset))

                def evaluate(self, loader):
                    batches = iter(loader)
                    return batches.next()
            """,
            line=13,
            note="a method's parameter bound by its caller to a function's DataLoader",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader

            def peek(loader):
                next = None
                it = iter(loader)
                return it.next()

            peek(DataLoader(range(4)))
            """,
            message_contains="raises AttributeError",
            note="`next` shadowed: flagged without a fix",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader

            def train(dataset, steps):
                loader = DataLoader(dataset, batch_size=4)
                data_iter = iter(loader)
                for step in range(steps):
                    try:
                        images, labels = data_iter.next()
                    except StopIteration:
                        data_iter = iter(loader)
                        images, labels = data_iter.next()
            """,
            line=9,
            note="the restart-on-StopIteration loop: both calls raise AttributeError",
        ),
    )
