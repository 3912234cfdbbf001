"""TT108: a DistributedSampler that never gets set_epoch in the epoch loop."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace

from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.dataloaders import bind_arguments
from torchtrap.facts.imports import dotted_name
from torchtrap.facts.index import enclosing_function, walk_scope
from torchtrap.facts.modules import is_eval_call
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loops import (
    CALL,
    ITERATE,
    SET_EPOCH,
    Event,
    Loop,
    LoopFacts,
    Ref,
    Sampler,
)

# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
_SHUFFLE_POSITION = 3
_BATCH_SAMPLERS = frozenset(
    {"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"}
)
# Calls that take a loader without consuming its sampler's epoch.
_HARMLESS = frozenset({"len", "enumerate", "iter", "zip", "tqdm", "print", "range"})


@dataclass(frozen=True)
class _Sampled:
    """A DataLoader drawing from a shuffling DistributedSampler."""

    loader: ast.Call
    sampler: ast.Call
    sampler_expr: ast.expr  # as the DataLoader call spells it
    through_batch_sampler: bool
    # Built only on one path (`DistributedSampler(ds) if distributed else None`,
    # another loader otherwise): the fix guards the call.
    conditional: bool = False


class SamplerWithoutSetEpoch(Rule):
    """Flags a DistributedSampler whose DataLoader is iterated every epoch without `set_epoch`.

    ## What it does
    Flags a loop over a DataLoader, inside an outer loop (the epochs), when
    the DataLoader draws from a `DistributedSampler` that shuffles
    (`shuffle` left at its default `True`, or `True`), given as `sampler=`
    or inside `batch_sampler=BatchSampler(sampler, ...)`, and nothing in the
    epoch loop calls `set_epoch` (on the sampler, `loader.sampler`,
    `loader.batch_sampler.sampler`, or in a helper of this file that the
    loop calls). The loader may be built in the loop, before it, as
    `self.loader`, or passed to the function by its callers in this file,
    returned by a helper of this file (alone, in a tuple or a dict), or be
    a `DataLoader` subclass of this file whose `__init__` builds the
    sampler; the sampler may be given through a `**params` dict or built
    through a name holding the class (`S = RandomSampler if single else
    DistributedSampler`);
    the loop may be a `for` over it or an `iter(loader)` each epoch. The
    finding is on the `DistributedSampler(...)` call (a sampler returned by
    a helper of this file, `data_sampler(ds, shuffle=True, distributed=d)`,
    counts, with the helper's arguments), naming the epoch loop's pass.

    Silent for `shuffle=False` (or any value that is not evidently true),
    when `set_epoch` is called in the epoch loop (on anything), when some
    other function of this file calls `set_epoch` (it may run every epoch),
    for a single pass over the loader (no outer loop), for an evaluation
    pass (the loop over the loader runs under `torch.no_grad()`, or after
    `model.eval()` with no backward: a validation loader rebuilt every epoch,
    whose order does not matter), when a call the
    analysis cannot follow gets the loader or the sampler in the epoch loop,
    for loaders that frameworks manage (Lightning and HF `Trainer` set the
    epoch; `accelerator.prepare(loader)` returns a loader that does), and
    when the loader or sampler is not evident (built in another file).

    `torchtrap run` reports a shuffling `DistributedSampler` iterated a
    second time with the same epoch, on the line that iterates it, wherever
    the loader was built.

    ## Why is this bad?
    `DistributedSampler` shuffles with a generator seeded by `seed + epoch`,
    and its epoch only changes through `set_epoch`, so without it every
    epoch visits the samples in the same order on every rank. Measured with
    torch 2.13 (`DistributedSampler(range(16), num_replicas=2, rank=0)`, no
    process group needed): three epochs without `set_epoch` give rank 0 the
    indices `[12, 9, 11, 13, 2, 15, 4, 7]` each time; with `set_epoch(epoch)`
    the second epoch gives `[5, 6, 11, 7, 1, 9, 10, 13]`.

    Fix (safe where the loop variable is the epoch): call
    `sampler.set_epoch(epoch)` at the top of the epoch loop.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            train_step(batch)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            train_step(batch)
    ```

    ## References
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
    - https://github.com/pytorch/pytorch/issues/31771
    """

    code = "TT108"
    name = "sampler-without-set-epoch"
    summary = (
        "a shuffling `DistributedSampler` without `set_epoch()`: every epoch has the same order"
    )
    fact = "torch 2.13: without set_epoch, rank 0 gets [12, 9, 11, 13, 2, 15, 4, 7] every epoch"
    requires_text = ("DistributedSampler",)

    def check(self) -> Iterable[Finding]:
        loops = self.ctx.values.loops
        calls = self.ctx.facts.calls_by_name.get("set_epoch", [])
        seen: set[int] = set()
        by_name = self.ctx.facts.calls_by_name
        index = self.ctx.facts.index
        if not by_name.get("DistributedSampler") and not any(
            isinstance(n.ctx, ast.Load) for n in index.names("DistributedSampler")
        ):
            # No sampler built or picked here (`S = ... else DistributedSampler`):
            # a mention in a string, a type, an import.
            return
        for loop in loops.loops():
            if not loops.may_iterate(loop) or loops.in_framework(loop):
                continue
            events = loops.iteration(loop)
            if any(e.kind == SET_EPOCH for e in events):
                continue
            for event in events:
                if event.kind != ITERATE or event.receiver is None or id(event.node) in seen:
                    continue
                sampled = self._sampled(loops, event.receiver)
                if sampled is None:
                    continue
                if _may_set_epoch(events, event.receiver):
                    continue
                if self._evaluation(loops, event):
                    continue  # a validation pass: its order does not matter
                elsewhere, before = _set_epoch_elsewhere(calls, loop)
                if elsewhere:
                    continue  # another function sets the epoch: it may run every epoch
                seen.add(id(event.node))
                if id(sampled.sampler) in seen:
                    continue
                seen.add(id(sampled.sampler))
                yield self._finding(loop, event, sampled, before)

    def _sampled(self, loops: LoopFacts, loader: Ref) -> _Sampled | None:
        """The loader's DataLoader call with a shuffling DistributedSampler;
        a loader built one way or another (``if distributed: ... else: ...``)
        counts when every way is a DataLoader and one draws from it."""
        values = loops.constructions(loader)
        if not values:
            return None
        found: _Sampled | None = None
        for value, _ in values:
            call = loops.loader_call(value)
            if call is None:
                return None
            sampled = self._sampled_call(loops, call)
            if sampled is not None:
                if found is not None:
                    return None
                found = sampled
        if found is not None and len(values) > 1:
            found = replace(found, conditional=True)
        return found

    def _sampled_call(self, loops: LoopFacts, call: ast.Call) -> _Sampled | None:
        arguments, _ = bind_arguments(call)
        through_batch = False
        expr = arguments.get("sampler")
        at: ast.AST = call
        splat = loops.splat_keyword(call, "sampler") if expr is None else None
        if splat is not None:
            expr, at = splat
        elif expr is None:
            batch = arguments.get("batch_sampler")
            batch_call = self._value(loops, batch, call) if batch is not None else None
            if (
                batch_call is None
                or loops.imports.qualname(batch_call.func) not in _BATCH_SAMPLERS
                or not batch_call.args
            ):
                return None
            expr = batch_call.args[0]
            through_batch = True
            at = batch_call
        ref = Ref(expr, at, dotted_name(expr))
        sampler = loops.distributed_sampler(ref)
        if sampler is None or not _shuffles(sampler):
            return None
        values = loops.values(ref) or []
        conditional = (
            sampler.alternatives
            or len(values) > 1
            or any(isinstance(v, ast.IfExp) for v, _ in values)
        )
        return _Sampled(call, sampler.call, expr, through_batch, conditional)

    def _evaluation(self, loops: LoopFacts, iteration: Event) -> bool:
        """The loop over the loader evaluates: it runs with grad off
        (``torch.no_grad()`` there or around a helper that leads to it), or
        after ``model.eval()`` in its function without a backward in it."""
        imports = self.ctx.facts.imports
        if any(grad_off_context(n, imports) is not None for n in (iteration.node, *iteration.via)):
            return True
        function = enclosing_function(iteration.node)
        if function is None or loops.may_backpropagate(iteration.node):
            return False
        line = getattr(iteration.node, "lineno", 0)
        return any(
            isinstance(n, ast.Call) and is_eval_call(n) and n.lineno < line
            for n in walk_scope(function)
        )

    def _value(self, loops: LoopFacts, expr: ast.expr, at: ast.AST) -> ast.Call | None:
        values = loops.values(Ref(expr, at, dotted_name(expr)))
        if not values or len(values) != 1 or not isinstance(values[0][0], ast.Call):
            return None
        return values[0][0]

    def _finding(
        self, loop: Loop, iteration: Event, sampled: _Sampled, before: ast.AST | None
    ) -> Finding:
        assert iteration.receiver is not None
        loader = f"`{iteration.receiver.key}`'s" if iteration.receiver.key else "the loader's"
        candidates: tuple[str, ...]
        if before is not None:
            candidates = (
                f"`set_epoch()` runs once, before the loop: {loader} DistributedSampler "
                "gives every epoch the same order",
            )
        else:
            candidates = (
                f"{loader} DistributedSampler never gets `set_epoch()` in the epoch loop: "
                "every epoch sees the same order",
                "the DistributedSampler never gets `set_epoch()` here: every epoch sees the "
                "same order",
            )
        message = next((m for m in candidates if len(m) <= MESSAGE_LIMIT), candidates[-1])
        fixes = self._fixes(loop, iteration, sampled)
        node = iteration.via[0] if iteration.via else iteration.node
        if isinstance(node, (ast.For, ast.AsyncFor)):
            node = node.iter
        # At the sampler, where the order is decided (and where one sampler
        # iterated by several loops is one finding); the epoch loop's pass is
        # the related row.
        related = [self.ctx.related(node, "a new pass every epoch, without `set_epoch()`")]
        return self.finding(sampled.sampler, message, fixes=fixes, related=related)

    def _fixes(self, loop: Loop, iteration: Event, sampled: _Sampled) -> list[Fix]:
        if not (
            isinstance(loop, (ast.For, ast.AsyncFor))
            and isinstance(loop.target, ast.Name)
            and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range"
        ):
            return []
        epoch = loop.target.id
        function = enclosing_function(loop)
        spelled: str | None = None
        if (
            isinstance(sampled.sampler_expr, ast.Name)
            and enclosing_function(sampled.loader) is function
        ):
            spelled = sampled.sampler_expr.id
        elif iteration.receiver is not None and iteration.receiver.key is not None:
            middle = ".batch_sampler.sampler" if sampled.through_batch_sampler else ".sampler"
            spelled = iteration.receiver.key + middle
        if spelled is None:
            return []
        call = f"{spelled}.set_epoch({epoch})"
        text, when = call, ""
        if sampled.conditional:  # None, or another sampler, when not distributed
            text, when = f'if hasattr({spelled}, "set_epoch"):\n    {call}', " (where it has one)"
        source = self.ctx.source
        anchor = loop.body[0]
        return [
            Fix(
                f"Call `{call}` at the top of the epoch loop{when}",
                Applicability.SAFE,
                build=lambda: [edits.insert_before_statement(source, anchor, text)],
            )
        ]

    valid = (
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def train(dataset, epochs):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                for epoch in range(epochs):
                    sampler.set_epoch(epoch)
                    for batch in loader:
                        pass
            """,
            note="`set_epoch` at the top of the epoch",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def evaluate(dataset, epochs):
                sampler = DistributedSampler(dataset, shuffle=False)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                for epoch in range(epochs):
                    for batch in loader:
                        pass
            """,
            note="`shuffle=False`: the order is meant to stay",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def train(dataset):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for batch in loader:
                    pass
            """,
            note="a single pass",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def train_epoch(loader, epoch):
                loader.sampler.set_epoch(epoch)
                for batch in loader:
                    pass

            def main(dataset, epochs):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                for epoch in range(epochs):
                    train_epoch(loader, epoch)
            """,
            note="`set_epoch` through `loader.sampler` in a helper",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler
            from accelerate import Accelerator

            def main(dataset, model, epochs):
                accelerator = Accelerator()
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
                model, loader = accelerator.prepare(model, loader)
                for epoch in range(epochs):
                    for batch in loader:
                        model(batch)
            """,
            note="accelerate's prepared loader sets the epoch itself",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            class Trainer:
                def __init__(self, dataset):
                    self.loader = DataLoader(dataset, sampler=DistributedSampler(dataset))

                def on_epoch_start(self, epoch):
                    self.loader.sampler.set_epoch(epoch)

                def fit(self, epochs):
                    for epoch in range(epochs):
                        for batch in self.loader:
                            pass
            """,
            note="another method sets the epoch (a hook this file cannot place)",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler
            from mylib import run_epoch

            def main(dataset, epochs):
                loader = DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=True))
                for epoch in range(epochs):
                    run_epoch(loader, epoch)
                    for batch in loader:
                        pass
            """,
            note="an imported helper gets the loader every epoch: it may set the epoch",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def main(dataset, epochs, shuffle):
                sampler = DistributedSampler(dataset, shuffle=shuffle)
                loader = DataLoader(dataset, sampler=sampler)
                for epoch in range(epochs):
                    for batch in loader:
                        pass
            """,
            note="shuffle from a variable: maybe off",
        ),
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader, DistributedSampler

            def validate(model, val_set):
                loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set))
                model.eval()
                correct = 0
                with torch.no_grad():
                    for x, y in loader:
                        correct += (model(x).argmax(1) == y).sum().item()
                return correct

            def main(model, train_loader, val_set, optimizer, epochs):
                for epoch in range(epochs):
                    model.train()
                    for x, y in train_loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    validate(model, val_set)
            """,
            note="issue 34: a validation loader rebuilt for one pass; its order does not matter",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def main(model, val_set, epochs):
                for epoch in range(epochs):
                    model.eval()
                    for x, y in DataLoader(val_set, sampler=DistributedSampler(val_set)):
                        print(model(x).argmax(1).eq(y).float().mean())
            """,
            note="an evaluation after model.eval(), no backward: order does not matter",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def main(data, model, optimizer, epochs):
                loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=True))
                for epoch in range(epochs):
                    loader.sampler.set_epoch(epoch)
                    batches = iter(loader)
                    for step in range(len(loader)):
                        model(next(batches)).sum().backward()
                        optimizer.step()
            """,
            note="`iter(loader)` every epoch, after `loader.sampler.set_epoch(epoch)`",
        ),
        Valid(
            """
            import torch.utils.data as data

            def data_sampler(dataset, shuffle, distributed):
                if distributed:
                    return data.distributed.DistributedSampler(dataset, shuffle=shuffle)
                if shuffle:
                    return data.RandomSampler(dataset)
                return data.SequentialSampler(dataset)

            def main(dataset, distributed, epochs):
                loader = data.DataLoader(
                    dataset, sampler=data_sampler(dataset, shuffle=False, distributed=distributed)
                )
                for epoch in range(epochs):
                    for batch in loader:
                        pass
            """,
            note="a sampler helper called with `shuffle=False`",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            class Trainer:
                def __init__(self, steps, data_loader, sampler, model):
                    self.steps = steps
                    self.data_loader = data_loader
                    self.sampler = sampler
                    self.model = model

                def run(self):
                    while self.steps < 100:
                        self._train_epoch()

                def _train_epoch(self):
                    for batch in self.data_loader["train"]:
                        self.model(batch).sum().backward()
                        self.steps += 1
                    if self.sampler["train"] is not None:
                        self.sampler["train"].set_epoch(self.steps)

            def main(args, dataset, model):
                train_sampler = None
                if args.distributed:
                    train_sampler = DistributedSampler(dataset=dataset["train"], shuffle=True)
                data_loader = {
                    "train": DataLoader(dataset=dataset["train"], sampler=train_sampler),
                    "dev": DataLoader(dataset=dataset["dev"]),
                }
                sampler = {"train": train_sampler}
                Trainer(steps=0, data_loader=data_loader, sampler=sampler, model=model).run()
            """,
            note="the sampler dict kept by the trainer; `set_epoch` after every pass",
        ),
    )
    invalid = (
        Invalid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def train(dataset, epochs):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                for epoch in range(epochs):
                    for batch in loader:
                        pass
            """,
            line=5,
            message_contains="every epoch sees the same order",
            fixed="""
            from torch.utils.data import DataLoader, DistributedSampler

            def train(dataset, epochs):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                for epoch in range(epochs):
                    sampler.set_epoch(epoch)
                    for batch in loader:
                        pass
            """,
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import BatchSampler, DataLoader
            from torch.utils.data.distributed import DistributedSampler

            class Trainer:
                def __init__(self, dataset):
                    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True)
                    batches = BatchSampler(sampler, batch_size=4, drop_last=True)
                    self.loader = DataLoader(dataset, batch_sampler=batches)

                def fit(self, epochs):
                    for epoch in range(epochs):
                        for step, batch in enumerate(self.loader):
                            pass
            """,
            line=8,
            note="through `batch_sampler=BatchSampler(sampler)`, as `self.loader`",
            fixed="""
            import torch
            from torch.utils.data import BatchSampler, DataLoader
            from torch.utils.data.distributed import DistributedSampler

            class Trainer:
                def __init__(self, dataset):
                    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True)
                    batches = BatchSampler(sampler, batch_size=4, drop_last=True)
                    self.loader = DataLoader(dataset, batch_sampler=batches)

                def fit(self, epochs):
                    for epoch in range(epochs):
                        self.loader.batch_sampler.sampler.set_epoch(epoch)
                        for step, batch in enumerate(self.loader):
                            pass
            """,
        ),
        Invalid(
            """
            import torch.utils.data as data

            def train_one_epoch(loader, model):
                for x in loader:
                    model(x)

            def main(dataset, model, epochs):
                sampler = data.DistributedSampler(dataset)
                loader = data.DataLoader(dataset, sampler=sampler)
                sampler.set_epoch(0)
                epoch = 0
                while epoch < epochs:
                    train_one_epoch(loader, model)
                    epoch += 1
            """,
            line=9,
            message_contains="runs once, before the loop",
            note="the iteration in a helper; set_epoch only once; a while loop (no fix)",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(args, dataset):
                sampler = DistributedSampler(dataset) if args.distributed else None
                if args.distributed:
                    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                else:
                    loader = DataLoader(dataset, batch_size=8, shuffle=True)
                for epoch in range(args.epochs):
                    for batch in loader:
                        pass
            """,
            line=6,
            note="distributed only when a flag is set: the fix guards the call",
            fixed="""
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            def main(args, dataset):
                sampler = DistributedSampler(dataset) if args.distributed else None
                if args.distributed:
                    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                else:
                    loader = DataLoader(dataset, batch_size=8, shuffle=True)
                for epoch in range(args.epochs):
                    if hasattr(sampler, "set_epoch"):
                        sampler.set_epoch(epoch)
                    for batch in loader:
                        pass
            """,
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader, DistributedSampler

            def train_one_epoch(model, train_set, optimizer):
                loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
                model.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    model(x).sum().backward()
                    optimizer.step()

            def main(model, train_set, optimizer, epochs):
                for epoch in range(epochs):
                    train_one_epoch(model, train_set, optimizer)
            """,
            message_contains="the loader's DistributedSampler never gets `set_epoch()`",
            note="near miss of the rebuilt validation loader: the training loader, rebuilt",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader, DistributedSampler

            def main(data, model, optimizer, epochs):
                loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=True))
                for epoch in range(epochs):
                    batches = iter(loader)
                    for step in range(len(loader)):
                        model(next(batches)).sum().backward()
                        optimizer.step()
            """,
            line=5,
            note="a new iterator every epoch (`iter(loader)`, then `next`)",
            fixed="""
            from torch.utils.data import DataLoader, DistributedSampler

            def main(data, model, optimizer, epochs):
                loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=True))
                for epoch in range(epochs):
                    loader.sampler.set_epoch(epoch)
                    batches = iter(loader)
                    for step in range(len(loader)):
                        model(next(batches)).sum().backward()
                        optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch.utils.data as data

            def data_sampler(dataset, shuffle, distributed):
                if distributed:
                    return data.distributed.DistributedSampler(dataset, shuffle=shuffle)
                if shuffle:
                    return data.RandomSampler(dataset)
                return data.SequentialSampler(dataset)

            def sample_data(loader):
                while True:
                    for batch in loader:
                        yield batch

            def main(dataset, distributed, steps):
                loader = data.DataLoader(
                    dataset, sampler=data_sampler(dataset, shuffle=True, distributed=distributed)
                )
                batches = sample_data(loader)
                for step in range(steps):
                    next(batches)
            """,
            line=6,
            note="a sampler helper of this file, called with `shuffle=True`; an endless pass",
        ),
        Invalid(
            """
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler

            class Trainer:
                def __init__(self, steps, data_loader, sampler, model):
                    self.steps = steps
                    self.data_loader = data_loader
                    self.sampler = sampler
                    self.model = model

                def run(self):
                    while self.steps < 100:
                        self._train_epoch()

                def _train_epoch(self):
                    for batch in self.data_loader["train"]:
                        self.model(batch).sum().backward()
                        self.steps += 1

            def main(args, dataset, model):
                train_sampler = None
                if args.distributed:
                    train_sampler = DistributedSampler(dataset=dataset["train"], shuffle=True)
                data_loader = {
                    "train": DataLoader(dataset=dataset["train"], sampler=train_sampler),
                    "dev": DataLoader(dataset=dataset["dev"]),
                }
                sampler = {"train": train_sampler}
                Trainer(steps=0, data_loader=data_loader, sampler=sampler, model=model).run()
            """,
            line=24,
            note="the loaders in a dict given to a trainer's constructor, iterated as "
            '`self.data_loader["train"]`',
        ),
    )


def _shuffles(sampler: Sampler) -> bool:
    value = sampler.argument("shuffle", _SHUFFLE_POSITION)
    if any(kw.arg is None for kw in sampler.call.keywords):
        return False  # **kwargs may turn it off
    return value is None or (isinstance(value, ast.Constant) and value.value is True)


def _may_set_epoch(events: list[Event], loader: Ref) -> bool:
    """A call the analysis does not follow that gets the loader (or its
    sampler) in the epoch loop."""
    key = loader.key
    if key is None:
        return False
    for event in events:
        if event.kind != CALL or event.callee is not None:
            continue
        func = event.node.func if isinstance(event.node, ast.Call) else None
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in _HARMLESS:
            continue
        if any(
            a.key is not None and (a.key == key or a.key.startswith(key + ".")) for a in event.args
        ):
            return True
    return False


def _set_epoch_elsewhere(calls: list[ast.Call], loop: Loop) -> tuple[bool, ast.AST | None]:
    """(a ``set_epoch`` call elsewhere, which may run every epoch; the one
    before the loop in its own function, if any)."""
    function = enclosing_function(loop)
    found: ast.AST | None = None
    for call in calls:
        if enclosing_function(call) is function and call.lineno < loop.lineno:
            found = call
            continue
        return True, None
    return False, found
