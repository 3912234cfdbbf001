"""TT226: gradient clipping before `backward()` or after `step()` in the same iteration."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.index import enclosing_statement, parent, walk_scope
from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loops import BACKWARD, CLIP, STEP, Event, LoopFacts


class ClipOutsideStep(Rule):
    """Flags `clip_grad_norm_`/`clip_grad_value_` that no optimizer step uses.

    ## What it does
    Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` called in a
    loop's iteration (or in a function that is one training step)

    - before the iteration's `backward()`, when a `backward()` and then an
      optimizer `step()` follow it, or
    - after the iteration's optimizer `step()` (itself after a
      `backward()`), with no step after the clip in that iteration.

    The optimizer step is `optimizer.step(...)` on an optimizer (a
    `torch.optim` optimizer built or annotated in this file),
    `scaler.step(optimizer)`, or the iteration's only `x.step()` (no
    positional argument) of a value of unknown type; a value built here by
    another known callable (`StepLR(...)`: a scheduler) is not one, nor is
    `env.step(action)`. Helpers of the same file that the loop calls are
    followed, as for TT215 and TT217.

    Silent for a clip between `backward()` and `step()` (also under an
    `if`), for a loop without a step or without a backward, with gradient
    accumulation whose step comes first in the iteration
    (`if i % k == 0: clip; step; zero_grad` then `backward()`), and for
    AMP's `scaler.unscale_` order (TT217).

    ## Why is this bad?
    The optimizer step uses whatever is in `.grad` when it runs, so a clip
    before `backward()` or after `step()` leaves the step unclipped and an
    exploding gradient goes through. A clip before `backward()` clips the
    previous iteration's gradients (or the zeros `zero_grad()` left); one
    after `step()` clips gradients the optimizer has already used. Measured
    with torch 2.13: a linear layer whose gradient norm is 100 is stepped
    with a norm of 100 when `clip_grad_norm_(..., max_norm=1.0)` runs
    after `optimizer.step()`, and with 1.0 when it runs between
    `backward()` and `step()`.

    Fix (safe): move the clip to just before the optimizer step (offered
    when the clip, the backward and the step are statements of the same
    block).

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    """

    code = "TT226"
    name = "clip-outside-step"
    summary = (
        "gradient clipping before `backward()` or after `step()`: the step uses unclipped gradients"
    )
    fact = (
        "Measured with torch 2.13: with `clip_grad_norm_(..., 1.0)` after `optimizer.step()` "
        "the step uses a gradient of norm 100, not 1.0."
    )
    requires_text = ("clip_grad",)

    def check(self) -> Iterable[Finding]:
        loops = self.ctx.values.loops
        seen: set[int] = set()
        # One pass of a loop's body, then the body of a function that is one
        # training step (`def train_step(...)`, called from a loop elsewhere).
        bodies: list[list[Event]] = [
            loops.iteration(loop) for loop in loops.loops() if loops.may_backpropagate(loop)
        ]
        bodies += [
            loops.function_events(fn)
            for fn in self.ctx.facts.index.of_types(ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and loops.may_backpropagate(fn)
        ]
        for events in bodies:
            for j, clip in enumerate(events):
                if clip.kind != CLIP or id(clip.node) in seen:
                    continue
                if loops.in_framework(clip.node):
                    continue
                found = self._misplaced(loops, events, j)
                if found is None:
                    continue
                seen.add(id(clip.node))
                where, backward, step = found
                yield self._finding(clip, where, backward, step)

    def _misplaced(
        self, loops: LoopFacts, events: list[Event], j: int
    ) -> tuple[str, Event, Event] | None:
        """("before"/"after", the backward, the step) for a clip at ``events[j]``
        that no step uses."""
        steps = [i for i, e in enumerate(events) if self._is_step(loops, e, events)]
        backwards = [i for i, e in enumerate(events) if e.kind == BACKWARD]
        if not steps or not backwards:
            return None
        if not any(i < j for i in backwards):
            # Before the backward: a backward, then a step, must follow.
            after = [i for i in backwards if i > j]
            step = next((s for s in steps if after and s > after[0]), None)
            if after and step is not None and not any(j < s < after[0] for s in steps):
                return "before", events[after[0]], events[step]
            return None
        if any(s > j for s in steps):
            return None
        before = [s for s in steps if s < j]
        backward = [i for i in backwards if i < before[-1]] if before else []
        if before and backward:
            return "after", events[backward[-1]], events[before[-1]]
        return None

    def _is_step(self, loops: LoopFacts, event: Event, events: list[Event]) -> bool:
        kind = self._step_kind(loops, event)
        if kind != "unknown":
            return kind == "optimizer"
        # A value of unknown type: the iteration's optimizer step only when no
        # other unknown value is stepped (a scheduler built elsewhere).
        unknown = {
            e.receiver.key
            for e in events
            if e.kind == STEP and e.receiver is not None and self._step_kind(loops, e) == "unknown"
        }
        return len(unknown) == 1

    def _step_kind(self, loops: LoopFacts, event: Event) -> str:
        """ "optimizer", "other" (evidently not one: a scheduler), "unknown"."""
        if event.kind != STEP or event.receiver is None:
            return "other"
        if event.receiver.key is None:
            return "other"
        if loops.optimizer(event.receiver):
            return "optimizer"  # also `optimizer.step(closure)`
        if event.args:
            # `scaler.step(optimizer)`; anything else stepped with an argument
            # (`env.step(action)`) is not an optimizer step.
            return "optimizer" if loops.scaler(event.receiver) is not None else "other"
        values = loops.values(event.receiver)
        imports = self.ctx.facts.imports
        if values and all(
            isinstance(v, ast.Call) and imports.qualname(v.func) is not None for v, _ in values
        ):
            return "other"  # built by a known callable that is not an optimizer
        return "unknown"

    def _finding(self, clip: Event, where: str, backward: Event, step: Event) -> Finding:
        call = clip.node
        assert isinstance(call, ast.Call)
        func = ast.unparse(call.func).rsplit(".", 1)[-1]
        if where == "before":
            message = (
                f"`{func}` runs before `backward()`: it clips old gradients, "
                "and the step uses unclipped ones"
            )
        else:
            message = (
                f"`{func}` runs after the optimizer step: the step already used unclipped gradients"
            )
        other = step if where == "after" else backward
        what = "the optimizer step" if where == "after" else "`backward()`"
        related = [self.ctx.related(other.node, f"{what} of this iteration")]
        if clip.via:
            related.insert(0, self.ctx.related(clip.via[0], f"`{func}` runs in this call"))
        return self.finding(call, message, fixes=self._fixes(clip, backward, step), related=related)

    def _fixes(self, clip: Event, backward: Event, step: Event) -> list[Fix]:
        if clip.via or backward.via or step.via:
            return []
        moved = _movable(enclosing_statement(clip.node))
        target = enclosing_statement(step.node)
        back = enclosing_statement(backward.node)
        if moved is None or target is None or back is None:
            return []
        block = _block_of(moved)
        if block is None or block is not _block_of(target) or block is not _block_of(back):
            return []
        if not (back.lineno < target.lineno) or len(block) < 2:
            return []
        source = self.ctx.source
        if not edits.alone_on_lines(source, moved) or not edits.alone_on_lines(source, target):
            return []
        if _conflicts(moved, target):
            return []  # e.g. its result is logged before the step
        lines = source.lines[moved.lineno - 1 : moved.end_lineno or moved.lineno]
        indent = source.indentation(moved.lineno)
        text = source.newline.join(line[len(indent) :] for line in lines)
        return [
            Fix(
                "Move the clip to just before the optimizer step",
                Applicability.SAFE,
                build=lambda: [
                    edits.delete_lines(source, moved),
                    edits.insert_before_statement(source, target, text),
                ],
            )
        ]

    valid = (
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
            note="between backward and step",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion, accum):
                for i, (x, y) in enumerate(loader):
                    if i and i % accum == 0:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                        optimizer.step()
                        optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
            """,
            note="accumulation: the step of the previous gradients comes first",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, scaler, criterion):
                for x, y in loader:
                    optimizer.zero_grad()
                    scaler.scale(criterion(model(x), y)).backward()
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            note="AMP: unscale, clip, step",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    scheduler.step()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
            note="a scheduler's step is not the optimizer step",
        ),
        Valid(
            """
            import torch

            def probe(model, loader):
                for x in loader:
                    model(x).sum().backward()
                    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    print(norm)
            """,
            note="no step at all: measuring the norm",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
            line=10,
            message_contains="after the optimizer step",
            fixed="""
            import torch

            def train(model, loader, optimizer, criterion):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn.utils import clip_grad_value_

            model = torch.nn.Linear(4, 1)
            optimizer = torch.optim.Adam(model.parameters())
            for x in torch.randn(8, 2, 4):
                optimizer.zero_grad()
                clip_grad_value_(model.parameters(), 0.5)
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
            """,
            line=9,
            message_contains="before `backward()`",
            fixed="""
            import torch
            from torch.nn.utils import clip_grad_value_

            model = torch.nn.Linear(4, 1)
            optimizer = torch.optim.Adam(model.parameters())
            for x in torch.randn(8, 2, 4):
                optimizer.zero_grad()
                loss = model(x).sum()
                loss.backward()
                clip_grad_value_(model.parameters(), 0.5)
                optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, criterion, args):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if args.clip:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            """,
            line=11,
            fixed="""
            import torch

            def train(model, loader, optimizer, criterion, args):
                for x, y in loader:
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    if args.clip:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                    optimizer.step()
            """,
            note="under an `if`: the `if` moves with it",
        ),
        Invalid(
            """
            from torch.nn.utils import clip_grad_norm_
            from torch.optim.lr_scheduler import StepLR
            from mypackage import *

            def train(model, loader, clip):
                optimizer = make_optimizer(model)
                scheduler = StepLR(optimizer, step_size=1000)
                for batch in loader:
                    loss = model.loss(batch)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    scheduler.step()
                    clip_grad_norm_(model.parameters(), clip)
            """,
            line=15,
            note="an optimizer of unknown type beside a scheduler that is evidently one",
        ),
        Invalid(
            """
            import torch

            def train_step(model, batch, optimizer: torch.optim.Optimizer):
                optimizer.zero_grad()
                loss = model(batch).mean()
                loss.backward()
                optimizer.step()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                return loss.item()
            """,
            line=9,
            note="a function that is one step (its loop is elsewhere)",
            fixed="""
            import torch

            def train_step(model, batch, optimizer: torch.optim.Optimizer):
                optimizer.zero_grad()
                loss = model(batch).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                return loss.item()
            """,
        ),
    )


def _movable(stmt: ast.stmt | None) -> ast.stmt | None:
    """The statement to move: the clip's own, or an ``if`` (without ``else``)
    that holds only it."""
    while stmt is not None:
        up = parent(stmt)
        if isinstance(up, ast.If) and up.body == [stmt] and not up.orelse:
            stmt = up
            continue
        return stmt
    return None


def _block_of(stmt: ast.stmt) -> list[ast.stmt] | None:
    up = parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(up, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def _conflicts(moved: ast.stmt, target: ast.stmt) -> bool:
    """Would moving ``moved`` to just before ``target`` change what a name
    holds: a statement it jumps over reads or binds a name it binds, or
    binds a name it reads?"""
    block = _block_of(moved) or []
    i = next(k for k, s in enumerate(block) if s is moved)
    t = next(k for k, s in enumerate(block) if s is target)
    jumped = block[i + 1 : t] if i < t else block[t:i]
    bound = _bound(moved)
    read = _names(moved) - bound
    return any(bound & _names(stmt) or read & _bound(stmt) for stmt in jumped)


def _names(stmt: ast.stmt) -> set[str]:
    return {n.id for n in walk_scope(stmt) if isinstance(n, ast.Name)}


def _bound(stmt: ast.stmt) -> set[str]:
    return {
        n.id for n in walk_scope(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
