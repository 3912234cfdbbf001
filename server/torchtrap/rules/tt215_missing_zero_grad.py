"""TT215: a training loop that never zeroes the gradients its optimizer steps on."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.index import ancestors, enclosing_function, enclosing_statement
from torchtrap.findings import Applicability, Finding, Fix, Severity, unsafe_title
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loops import BACKWARD, CALL, STEP, ZERO_GRAD, Event, Loop, LoopFacts, Ref


class MissingZeroGrad(Rule):
    """Flags a loop that calls `backward()` and `optimizer.step()` but never zeroes the gradients.

    ## What it does
    Flags `optimizer.step()` (or `scaler.step(optimizer)`) in a loop whose
    iteration also calls `backward()`, when nothing in that iteration zeroes
    the gradients: no `optimizer.zero_grad()`, `model.zero_grad()`,
    `p.grad = None` or `p.grad.zero_()`, also not in a helper of this file
    that the iteration calls. A `zero_grad()` that runs once before the loop
    (or once per epoch around a batch loop) is flagged too. The optimizer is
    `torch.optim.*(...)` built in this file (a local, `self.optimizer`, a
    parameter whose callers here pass one, one annotated `Optimizer`), or
    the optimizer handed to a `GradScaler`'s `step`.

    A parameter of unknown origin stepped with no arguments right after a
    tensor's `loss.backward()` (the optimizer passed in from another file) is
    reported at information level, the first such step only (a scheduler's
    `step()` after it is not).

    Silent when a `zero_grad()` runs in the iteration, even under a
    condition (gradient accumulation that zeroes every N steps), when the
    step takes a closure (`LBFGS`: the closure zeroes), when several
    optimizers are each zeroed, when the optimizer is built by an unknown
    factory, for an engine's `engine.backward(loss)` / `engine.step()`
    (DeepSpeed zeroes in `step()`), when a call the analysis cannot follow gets
    the optimizer or the model, and in Lightning or HF `Trainer` classes
    (the framework zeroes).

    `torchtrap run` reports an `optimizer.step()` whose gradients are still
    the ones of the previous step (no `zero_grad()` of the optimizer or a
    module, nor `zero_()`, since), also inside classes and helpers this
    static analysis does not follow.

    ## Why is this bad?
    `backward()` adds to `.grad` instead of replacing it, so without zeroing
    each step uses the sum of every gradient since the last zeroing.
    Measured with torch 2.13: the same batch twice gives a gradient twice as
    large in the second step (norm 1.0x, 2.0x, 3.0x, ...), so the effective
    learning rate grows with every step and training diverges or stalls
    without an error.

    Fix (unsafe: it changes training where accumulation was meant): insert
    `optimizer.zero_grad()` before the backward.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
    - https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html
    """

    code = "TT215"
    name = "missing-zero-grad"
    summary = "`backward()` and `optimizer.step()` in a loop that never zeroes the gradients"
    fact = "torch 2.13: the same batch twice gives a gradient twice as large in the second step"
    requires_text = ("backward",)

    def check(self) -> Iterable[Finding]:
        loops = self.ctx.values.loops
        seen: set[int] = set()
        for loop in loops.loops():
            if not loops.may_backpropagate(loop) or loops.in_framework(loop):
                continue
            events = loops.iteration(loop)
            if not any(e.kind == BACKWARD for e in events):
                continue
            for step, optimizer, known in self._steps(loops, events):
                if id(step.node) in seen:
                    continue
                if not known and any(e.kind == ZERO_GRAD for e in events):
                    continue
                backward = _backward_for(events, step)
                if backward is None:
                    continue
                if _zeroed(loops, events, optimizer, step) or _may_zero(events, optimizer):
                    continue
                seen.add(id(step.node))
                yield self._finding(loops, loop, step, backward, optimizer, known)

    def _steps(self, loops: LoopFacts, events: list[Event]) -> Iterable[tuple[Event, Ref, bool]]:
        """Optimizer steps: (the step, the optimizer, whether it is known to
        be one). A parameter of unknown origin stepped with no arguments right
        after a tensor's ``backward()`` is the iteration's optimizer step by
        the loop's shape alone: reported at information level."""
        unknown_taken = False
        for event in events:
            if event.kind == BACKWARD:
                unknown_taken = False
            if event.kind != STEP or event.receiver is None:
                continue
            if not event.args and not event.node.keywords:  # type: ignore[attr-defined]
                if event.receiver.key is None:
                    continue
                if loops.optimizer(event.receiver):
                    yield event, event.receiver, True
                elif not unknown_taken and self._passed_in(loops, event.receiver, events):
                    unknown_taken = True
                    yield event, event.receiver, False
            elif (
                event.args
                and event.args[0].key is not None
                and loops.scaler(event.receiver) is not None
            ):
                # `scaler.step(optimizer)`; `optimizer.step(closure)` zeroes in the closure.
                yield event, event.args[0], True

    def _passed_in(self, loops: LoopFacts, ref: Ref, events: list[Event]) -> bool:
        """A parameter whose callers are elsewhere, after a tensor-style
        ``loss.backward()`` in the iteration (not an engine's
        ``engine.backward(loss)``, whose ``step()`` may zero by itself)."""
        if not isinstance(ref.expr, ast.Name) or loops.values(ref) is not None:
            return False
        if self.ctx.values.parameter(ref.expr, ref.at) is None:
            return False
        return any(
            e.kind == BACKWARD
            and isinstance(e.node, ast.Call)
            and isinstance(e.node.func, ast.Attribute)
            and e.node.func.attr == "backward"
            and not e.node.args
            for e in events
        )

    def _finding(
        self,
        loops: LoopFacts,
        loop: Loop,
        step: Event,
        backward: Event,
        optimizer: Ref,
        known: bool,
    ) -> Finding:
        name = optimizer.key
        once = _zeroed_before(loops, loop, optimizer)
        if once is not None:
            message = (
                f"`{name}.zero_grad()` runs once, outside this loop: "
                "every step adds the gradients of all earlier iterations"
            )
            related = [self.ctx.related(once, "the only zero_grad, outside the loop")]
        else:
            message = (
                f"`{name}` steps on gradients summed over all earlier iterations: "
                "nothing zeroes them in this loop"
            )
            related = []
        related.append(self.ctx.related(backward.node, "backward() adds to .grad here"))
        fixes: list[Fix] = []
        stmt = enclosing_statement(backward.node)
        if stmt is not None and name is not None and _spelled_alike(backward, name):
            line = f"{name}.zero_grad()"
            source = self.ctx.source
            fixes.append(
                Fix(
                    unsafe_title(
                        f"Call `{line}` before the backward",
                        "drops gradients that were meant to accumulate",
                    ),
                    Applicability.UNSAFE,
                    build=lambda: [edits.insert_before_statement(source, stmt, line)],
                )
            )
        return self.finding(
            step.node,
            message,
            severity=None if known else Severity.INFO,
            fixes=fixes,
            related=related,
        )

    valid = (
        Valid(
            """
            import torch

            def train(model, loader, bfloat_enable):
                opt = torch.optim.AdamW(model.parameters())
                if bfloat_enable:
                    scaler = torch.amp.GradScaler()
                for x in loader:
                    loss = model(x).mean()
                    opt.zero_grad()
                    if not bfloat_enable:
                        loss.backward()
                        opt.step()
                    else:
                        scaler.scale(loss).backward()
                        scaler.step(opt)
                        scaler.update()
            """,
            note="issue 34 (facebookresearch/nwm after the fix): zeroed ahead of both branches",
        ),
        Valid(
            """
            import torch

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
            """,
            note="zeroed every iteration",
        ),
        Valid(
            """
            import torch

            def train(model, loader, accumulation=4):
                optimizer = torch.optim.AdamW(model.parameters())
                for i, (x, y) in enumerate(loader):
                    loss = model(x, y) / accumulation
                    loss.backward()
                    if (i + 1) % accumulation == 0:
                        optimizer.step()
                        optimizer.zero_grad(set_to_none=True)
            """,
            note="deliberate gradient accumulation: zeroes every N steps",
        ),
        Valid(
            """
            import torch

            def train(model, loader):
                optimizer = torch.optim.LBFGS(model.parameters())
                for x, y in loader:
                    def closure():
                        optimizer.zero_grad()
                        loss = model(x, y)
                        loss.backward()
                        return loss
                    optimizer.step(closure)
            """,
            note="an LBFGS closure zeroes inside",
        ),
        Valid(
            """
            import torch

            def train(generator, discriminator, loader):
                opt_g = torch.optim.Adam(generator.parameters())
                opt_d = torch.optim.Adam(discriminator.parameters())
                for real in loader:
                    opt_d.zero_grad()
                    d_loss = discriminator(real, generator(real))
                    d_loss.backward()
                    opt_d.step()
                    opt_g.zero_grad()
                    g_loss = -discriminator(generator(real))
                    g_loss.backward()
                    opt_g.step()
            """,
            note="several optimizers, each zeroed",
        ),
        Valid(
            """
            import torch

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    model.zero_grad()
                    model(x, y).backward()
                    optimizer.step()
            """,
            note="`model.zero_grad()` zeroes the same parameters",
        ),
        Valid(
            """
            import torch

            def reset(model):
                for p in model.parameters():
                    p.grad = None

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    reset(model)
                    model(x, y).backward()
                    optimizer.step()
            """,
            note="`p.grad = None` in a helper of this file",
        ),
        Valid(
            """
            import torch

            def train(engine, loader):
                for x, y in loader:
                    loss = engine(x, y)
                    engine.backward(loss)
                    engine.step()
            """,
            note="an engine's backward/step (DeepSpeed's `step()` zeroes the gradients itself)",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, scheduler):
                for x, y in loader:
                    optimizer.zero_grad()
                    model(x, y).backward()
                    optimizer.step()
                    scheduler.step()
            """,
            note="parameters of unknown origin, zeroed",
        ),
        Valid(
            """
            import torch
            from mylib import clear_gradients

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    clear_gradients(optimizer)
                    model(x, y).backward()
                    optimizer.step()
            """,
            note="an imported helper gets the optimizer: it may zero",
        ),
        Valid(
            """
            import torch

            def fisher(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    model(x, y).backward()
                scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
                for _ in range(3):
                    scheduler.step()
            """,
            note="gradients summed on purpose, no optimizer step; a scheduler's step",
        ),
        Valid(
            """
            import torch
            import lightning as L

            class Model(L.LightningModule):
                def training_step(self, batch, batch_idx):
                    opt = torch.optim.SGD(self.parameters(), lr=0.1)
                    for micro in batch:
                        self.manual_backward(self(micro))
                        opt.step()
            """,
            note="inside a LightningModule",
        ),
        Valid(
            """
            import torch

            def train(model, loader, epochs):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    optimizer.zero_grad()
                    for x, y in loader:
                        model(x, y).backward()
                    optimizer.step()
            """,
            note="one step per epoch on the epoch's summed gradients: zeroed each epoch",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def train(model, loader, bfloat_enable):
                opt = torch.optim.AdamW(model.parameters())
                if bfloat_enable:
                    scaler = torch.amp.GradScaler()
                for x in loader:
                    loss = model(x).mean()
                    if not bfloat_enable:
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                    else:
                        scaler.scale(loss).backward()
                        scaler.step(opt)
                        scaler.update()
            """,
            line=16,
            note="issue 34 (facebookresearch/nwm): only the fp32 branch zeroes; "
            "the bfloat16 branch steps on summed gradients",
        ),
        Invalid(
            """
            import torch

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
            """,
            line=9,
            message_contains="nothing zeroes them in this loop",
            fixed="""
            import torch

            def train(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    loss = model(x, y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch

            def train(model, loader, epochs):
                optimizer = torch.optim.Adam(model.parameters())
                optimizer.zero_grad()
                for epoch in range(epochs):
                    for x, y in loader:
                        loss = model(x, y)
                        loss.backward()
                        optimizer.step()
            """,
            line=11,
            message_contains="runs once, outside this loop",
            note="zeroed only once, before the loops",
        ),
        Invalid(
            """
            import torch

            class Trainer:
                def __init__(self, model):
                    self.model = model
                    self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                    self.scaler = torch.amp.GradScaler("cuda")

                def train_step(self, x, y):
                    loss = self.model(x, y)
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()

                def fit(self, loader):
                    for x, y in loader:
                        self.train_step(x, y)
            """,
            line=13,
            message_contains="`self.optimizer` steps",
            note="the step in a method the loop calls, through a GradScaler",
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, scheduler, criterion):
                model.train()
                for x, y in loader:
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    scheduler.step()
            """,
            line=9,
            severity=Severity.INFO,
            message_contains="`optimizer` steps",
            note="a parameter from elsewhere stepped after loss.backward(): information level, "
            "the scheduler after it is not reported",
        ),
        Invalid(
            """
            import torch

            def train_epoch(model, loader, optimizer):
                for x, y in loader:
                    model(x, y).backward()
                    optimizer.step()

            def main(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(10):
                    optimizer.zero_grad()
                    train_epoch(model, loader, optimizer)
            """,
            line=7,
            message_contains="`optimizer` steps",
            note="a parameter whose caller passes an optimizer; zeroed per epoch, steps per batch",
            fixed="""
            import torch

            def train_epoch(model, loader, optimizer):
                for x, y in loader:
                    optimizer.zero_grad()
                    model(x, y).backward()
                    optimizer.step()

            def main(model, loader):
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(10):
                    optimizer.zero_grad()
                    train_epoch(model, loader, optimizer)
            """,
        ),
    )


def _backward_for(events: list[Event], step: Event) -> Event | None:
    """The last backward before ``step`` in the iteration (else the last
    one after it) that shares no inner loop with it: the loop is the
    innermost one around both."""
    index = events.index(step)
    candidates = [e for e in events if e.kind == BACKWARD and not _inner_together(e, step)]
    before = [e for e in candidates if events.index(e) < index]
    if before:
        return before[-1]
    return candidates[-1] if candidates else None


def _spelled_alike(event: Event, name: str) -> bool:
    """Does ``name`` mean the same where ``event`` sits (directly in the
    loop's function, or in methods reached through ``self.method()``)?"""
    if not event.via:
        return True
    return name.startswith("self.") and all(
        isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == "self"
        for c in event.via
    )


def _inner_together(a: Event, b: Event) -> bool:
    return bool(a.loops and b.loops and a.loops[0] is b.loops[0])


def _zeroed(loops: LoopFacts, events: list[Event], optimizer: Ref, step: Event) -> bool:
    for event in events:
        if event.kind != ZERO_GRAD or _exclusive(event, step):
            continue
        receiver = event.receiver
        if receiver is None or receiver.key is None or receiver.key == optimizer.key:
            return True
        if not loops.optimizer(receiver):
            return True  # a model (or anything else): may hold the same parameters
    return False


def _may_zero(events: list[Event], optimizer: Ref) -> bool:
    """A call the analysis does not follow that gets the optimizer."""
    return any(
        e.kind == CALL
        and e.callee is None
        and any(a.key is not None and a.key == optimizer.key for a in e.args)
        for e in events
    )


def _zeroed_before(loops: LoopFacts, loop: Loop, optimizer: Ref) -> ast.AST | None:
    """A ``zero_grad`` of the optimizer in the loop's function (or an outer
    loop) that runs before the loop, not in it."""
    function = enclosing_function(loop)
    scope: ast.AST = function if function is not None else _module(loop)
    events = loops.function_events(scope)  # type: ignore[arg-type]
    inside = {id(n) for n in ast.walk(loop)}
    for event in events:
        if (
            event.kind == ZERO_GRAD
            and not event.via
            and id(event.node) not in inside
            and event.receiver is not None
            and event.receiver.key == optimizer.key
            and getattr(event.node, "lineno", 0) < loop.lineno
        ):
            return event.node
    return None


def _module(node: ast.AST) -> ast.AST:
    from torchtrap.facts.index import ancestors

    return next(a for a in ancestors(node) if isinstance(a, ast.Module))


def _exclusive(a: Event, b: Event) -> bool:
    """Do ``a`` and ``b`` sit in the two arms of one ``if`` (the AMP branch
    zeroes, the other does not)? A zero_grad under a condition on the same
    path as the step (accumulation every N steps) is not exclusive."""
    arms = _arms(a.via[0] if a.via else a.node)
    other = _arms(b.via[0] if b.via else b.node)
    return any(key in other and other[key] != arm for key, arm in arms.items())


def _arms(node: ast.AST) -> dict[int, str]:
    """For each ``if`` around ``node`` (in its function): which arm holds it."""
    out: dict[int, str] = {}
    child = node
    for anc in ancestors(node):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
        if isinstance(anc, ast.If):
            if any(child is s for s in anc.body):
                out[id(anc)] = "body"
            elif any(child is s for s in anc.orelse):
                out[id(anc)] = "orelse"
        child = anc
    return out
