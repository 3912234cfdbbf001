"""TT217: gradients clipped while a GradScaler still multiplies them."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.index import enclosing_function, enclosing_statement
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.assumptions import Assumption
from torchtrap.values.loops import BACKWARD, CALL, CLIP, STEP, UNSCALE, Event, LoopFacts, Ref


class ClipScaledGradients(Rule):
    """Flags gradient clipping with a GradScaler before `scaler.unscale_(optimizer)`.

    ## What it does
    Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` (and
    `get_total_norm`) called after `scaler.scale(loss).backward()` and before
    `scaler.step(optimizer)`, with no `scaler.unscale_(...)` in between, when
    `scaler` is a `torch.amp.GradScaler` / `torch.cuda.amp.GradScaler` built
    in this file (also as `self.scaler`). The steps may sit in helper
    functions of the same file. A scaler that is on only when a flag is set
    (`GradScaler(enabled=args.amp)`) still counts: the message names the flag.
    A function given the scaler as a parameter annotated `GradScaler` (also
    `Optional[GradScaler]`), whose caller did the scaled backward, that clips
    before `scaler.step(optimizer)` is reported at information level: it
    holds if its callers do not unscale first (no fix: the scaler may be
    `None` there).

    Silent when `unscale_` comes first, when there is no scaler on that path
    (or it is built with `enabled=False`), when the scaler is not evidently a
    `GradScaler` (a parameter from another file, a wrapper such as timm's
    `NativeScaler` that unscales itself), when a call the analysis cannot
    follow gets the scaler or optimizer before the clip, for
    `accelerator.clip_grad_norm_` and Lightning's own clipping (hooks of a
    `LightningModule` or `Callback`).

    `torchtrap run` reports `clip_grad_norm_`/`clip_grad_value_` called after
    an enabled `GradScaler.scale()` without `unscale_` before
    `scaler.step()`, on the clipping line, also in a helper of another
    module.

    ## Why is this bad?
    Until `unscale_` runs, every gradient is multiplied by the scale (65,536
    at the start), so the threshold is compared with a norm 65,536 times too
    large and clipping scales the real gradients down to `max_norm / 65536`.
    Measured with torch 2.13 (`torch.amp.GradScaler("cpu")`): a linear
    layer whose true gradient norm is 1.61 reports a norm of 105,293 to
    `clip_grad_norm_(..., 1.0)`, and after the step's unscaling its gradient
    norm is 0.0000153 instead of 1.0: training all but stops, silently.

    Fix (safe): insert `scaler.unscale_(optimizer)` before the clip;
    `scaler.step` then does not unscale again.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## References
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    - https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_
    """

    code = "TT217"
    name = "clip-scaled-gradients"
    summary = (
        "gradients clipped before `scaler.unscale_`: the threshold applies to scaled gradients"
    )
    fact = (
        "torch 2.13: a true norm of 1.61 reads 105,293 under the initial scale; "
        "after clip_grad_norm_(..., 1.0) the real norm is 1.5e-5"
    )
    requires_text = ("clip_grad", "get_total_norm")

    def check(self) -> Iterable[Finding]:
        loops = self.ctx.values.loops
        # Only scopes that call `X.scale(...).backward()` themselves: the
        # clip and the step may sit in helpers they call.
        scopes: dict[int, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module] = {}
        for call in self.ctx.facts.calls_by_name.get("backward", ()):
            value = call.func.value if isinstance(call.func, ast.Attribute) else None
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "scale"
            ):
                scope = enclosing_function(call) or self.ctx.tree
                scopes[id(scope)] = scope
        # One finding per clip, from the scope that runs it most directly
        # (there the fix can name the scaler and the optimizer).
        best: dict[int, tuple[int, Finding]] = {}
        for scope in scopes.values():
            events = loops.function_events(scope)
            if not any(e.kind == CLIP for e in events):
                continue
            for depth, clip, finding in self._check_events(loops, events):
                if id(clip) not in best or depth < best[id(clip)][0]:
                    best[id(clip)] = (depth, finding)
        for function in self.ctx.facts.index.of(ast.FunctionDef):
            if id(function) in scopes or not _scaler_parameters(function):
                continue
            events = loops.function_events(function)
            for clip, finding in self._given_scaler(loops, function, events):
                if id(clip) not in best:
                    best[id(clip)] = (0, finding)
        for _, finding in sorted(best.values(), key=lambda b: b[1].range.start):
            yield finding

    def _given_scaler(
        self, loops: LoopFacts, function: ast.FunctionDef, events: list[Event]
    ) -> Iterable[tuple[ast.AST, Finding]]:
        """A function handed a `GradScaler` (its parameter annotated so) whose
        caller backpropagated through it: a clip before `scaler.step(opt)`
        with no `unscale_` first (returnn's `Updater.step(grad_scaler=...)`)."""
        for j, clip in enumerate(events):
            if clip.kind != CLIP or loops.in_framework(clip.node):
                continue
            before = events[:j]
            if any(e.kind in (BACKWARD, UNSCALE) for e in before):
                continue  # the scaled backward is here: the rule's main path
            step = next(
                (
                    e
                    for e in events[j + 1 :]
                    if e.kind == STEP
                    and e.args
                    and e.receiver is not None
                    and isinstance(e.receiver.expr, ast.Name)
                    and e.receiver.expr.id in _scaler_parameters(function)
                    and loops.annotated_scaler(e.receiver)
                ),
                None,
            )
            if step is None or step.receiver is None:
                continue
            scaler, optimizer = step.receiver, step.args[0]
            if any(_may_unscale(e, scaler, optimizer) for e in before):
                continue
            name = scaler.key
            phrase = f"if the callers do not call `{name}.unscale_()` first"
            args = function.args
            parameter = next(
                a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == name
            )
            assumption = Assumption(
                phrase, parameter, f"`{name}` is given as a `GradScaler`: what it steps is scaled"
            )
            call = clip.node
            assert isinstance(call, ast.Call)
            func = ast.unparse(call.func).rsplit(".", 1)[-1]
            threshold = "max_norm" if "norm" in func else "clip_value"
            candidates = (
                f"`{func}` sees gradients scaled by `{name}` {phrase}: "
                f"they end up clipped to {threshold}/65,536",
                f"`{func}` sees gradients scaled 65,536x {phrase}",
            )
            message = next((m for m in candidates if len(m) <= MESSAGE_LIMIT), candidates[-1])
            # No fix: the scaler may be None here (`Optional`), and a second
            # clip before the same step must not unscale twice.
            yield call, self.finding(call, message, assumption=assumption)

    def _check_events(
        self, loops: LoopFacts, events: list[Event]
    ) -> Iterable[tuple[int, ast.AST, Finding]]:
        for j, clip in enumerate(events):
            if clip.kind != CLIP:
                continue
            if loops.in_framework(clip.node):
                continue
            backward = next(
                ((i, e) for i, e in reversed(list(enumerate(events[:j]))) if e.kind == BACKWARD),
                None,
            )
            if backward is None or backward[1].scaled_by is None:
                continue
            i, back = backward
            scaler = back.scaled_by
            assert scaler is not None
            if scaler.key is None:
                continue
            step = next(
                (
                    (k, e)
                    for k, e in enumerate(events[j + 1 :], j + 1)
                    if e.kind == STEP and _same(e.receiver, scaler) and e.args
                ),
                None,
            )
            if step is None:
                continue
            k, step_event = step
            optimizer = step_event.args[0]
            between = events[i + 1 : j]
            if any(e.kind == UNSCALE for e in between):
                continue
            if any(_may_unscale(e, scaler, optimizer) for e in between):
                continue
            constructed = loops.scaler(scaler)
            if constructed is None or constructed.disabled:
                continue
            unscaled_later = any(
                e.kind == UNSCALE and _same(e.receiver, scaler) for e in events[j + 1 : k]
            )
            flag = constructed.flag
            finding = self._finding(clip, scaler, optimizer, flag, unscaled_later)
            yield len(clip.via), clip.node, finding

    def _finding(
        self,
        clip: Event,
        scaler: Ref,
        optimizer: Ref,
        flag: ast.expr | None,
        unscaled_later: bool,
    ) -> Finding:
        call = clip.node
        assert isinstance(call, ast.Call)
        func = ast.unparse(call.func).rsplit(".", 1)[-1]
        name = scaler.key
        threshold = "max_norm" if "norm" in func else "clip_value"
        message = (
            f"`{func}` sees gradients scaled by `{name}` (65,536x at start): "
            f"they end up clipped to {threshold}/65,536"
        )
        if len(message) > MESSAGE_LIMIT:
            message = (
                f"`{func}` sees gradients scaled 65,536x: they end up clipped to {threshold}/65,536"
            )
        if flag is not None:
            condition = ast.unparse(flag)
            candidates = (
                f"With `{condition}` on, " + message,
                f"With `{condition}` on, `{func}` sees gradients scaled 65,536x: "
                f"they end up clipped to {threshold}/65,536",
                f"With `{condition}` on, `{func}` clips gradients scaled 65,536x",
            )
            message = next((m for m in candidates if len(m) <= MESSAGE_LIMIT), candidates[-1])
        fixes: list[Fix] = []
        stmt = enclosing_statement(call)
        if (
            not clip.via
            and optimizer.key is not None
            and optimizer.expr is optimizer.at
            and not unscaled_later
            and stmt is not None
        ):
            line = f"{name}.unscale_({optimizer.key})"
            source = self.ctx.source
            anchor = stmt
            fixes.append(
                Fix(
                    f"Call `{line}` before `{func}`",
                    Applicability.SAFE,
                    build=lambda: [edits.insert_before_statement(source, anchor, line)],
                )
            )
        related = [self.ctx.related(clip.via[0], f"`{func}` runs in this call")] if clip.via else []
        return self.finding(call, message, fixes=fixes, related=related)

    valid = (
        Valid(
            """
            import torch

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler("cuda")
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = model(x, y)
                    scaler.scale(loss).backward()
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            note="`unscale_` before the clip",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = model(x, y)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
            note="no scaler on that path",
        ),
        Valid(
            """
            import torch
            from accelerate import Accelerator

            def train(model, loader, optimizer):
                accelerator = Accelerator(mixed_precision="fp16")
                model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
                for x, y in loader:
                    optimizer.zero_grad()
                    accelerator.backward(model(x, y))
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
            """,
            note="accelerate unscales in its own `clip_grad_norm_`",
        ),
        Valid(
            """
            import torch
            import lightning as L

            class Model(L.LightningModule):
                def configure_gradient_clipping(self, optimizer, gradient_clip_val=None):
                    self.scaler.scale(self.loss).backward()
                    torch.nn.utils.clip_grad_norm_(self.parameters(), gradient_clip_val)
                    self.scaler.step(optimizer)
            """,
            note="Lightning unscales before its clipping hooks",
        ),
        Valid(
            """
            import torch

            def step(model, loss, optimizer, scaler):
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            note="the scaler is a parameter from unknown callers: it may be a wrapper",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer):
                scaler = torch.cuda.amp.GradScaler(enabled=False)
                for x, y in loader:
                    scaler.scale(model(x, y)).backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            note="a scaler built disabled does not scale",
        ),
        Valid(
            """
            import torch

            def unscale_all(scaler, optimizer):
                scaler.unscale_(optimizer)

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler()
                for x, y in loader:
                    scaler.scale(model(x, y)).backward()
                    unscale_all(scaler, optimizer)
                    torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            note="`unscale_` in a helper of the same file",
        ),
        Valid(
            """
            import torch
            from mytools import unscale_and_log

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler()
                for x, y in loader:
                    scaler.scale(model(x, y)).backward()
                    unscale_and_log(scaler, optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            note="an imported helper gets the scaler before the clip: it may unscale",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler()
                for x, y in loader:
                    scaler.scale(model(x, y)).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
            note="no step follows the clip before the next backward (a different mistake)",
        ),
        Valid(
            """
            from typing import Optional

            import torch

            class Updater:
                def __init__(self, network, optimizer, clip):
                    self.network = network
                    self.optimizer = optimizer
                    self.clip = clip

                def step(self, *, grad_scaler: Optional[torch.cuda.amp.GradScaler] = None):
                    if self.clip:
                        if grad_scaler is not None:
                            grad_scaler.unscale_(self.optimizer)
                        torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.clip)
                    if grad_scaler is not None:
                        grad_scaler.step(self.optimizer)
                        grad_scaler.update()
                    else:
                        self.optimizer.step()
            """,
            note="a `GradScaler` given by the caller, unscaled before the clip",
        ),
    )

    invalid = (
        Invalid(
            """
            from typing import Optional

            import torch

            class Updater:
                def __init__(self, network, optimizer, clip):
                    self.network = network
                    self.optimizer = optimizer
                    self.clip = clip

                def step(self, *, grad_scaler: Optional[torch.cuda.amp.GradScaler] = None):
                    if self.clip:
                        torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.clip)
                    if grad_scaler is not None:
                        grad_scaler.step(self.optimizer)
                        grad_scaler.update()
                    else:
                        self.optimizer.step()
            """,
            line=14,
            message_contains="if the callers do not call `grad_scaler.unscale_()` first",
            note="the scaler given as a parameter annotated `GradScaler` (returnn's Updater)",
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler("cuda")
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = model(x, y)
                    scaler.scale(loss).backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            line=10,
            message_contains="clipped to max_norm/65,536",
            fixed="""
            import torch

            def train(model, loader, optimizer):
                scaler = torch.amp.GradScaler("cuda")
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = model(x, y)
                    scaler.scale(loss).backward()
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn.utils import clip_grad_value_

            def train(model, loader, optimizer, args):
                scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast("cuda", enabled=args.amp):
                        loss = model(x, y)
                    scaler.scale(loss).backward()
                    if args.clip:
                        clip_grad_value_(model.parameters(), args.clip)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            line=13,
            message_contains="With `args.amp` on",
            note="a scaler on only when a flag is set; the clip under a condition",
            fixed="""
            import torch
            from torch.nn.utils import clip_grad_value_

            def train(model, loader, optimizer, args):
                scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
                for x, y in loader:
                    optimizer.zero_grad()
                    with torch.autocast("cuda", enabled=args.amp):
                        loss = model(x, y)
                    scaler.scale(loss).backward()
                    if args.clip:
                        scaler.unscale_(optimizer)
                        clip_grad_value_(model.parameters(), args.clip)
                    scaler.step(optimizer)
                    scaler.update()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Trainer:
                def __init__(self, model, optimizer):
                    self.model = model
                    self.optimizer = optimizer
                    self.scaler = torch.amp.GradScaler("cpu")

                def clip(self):
                    return nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)

                def step(self, loss):
                    self.optimizer.zero_grad()
                    self.scaler.scale(loss).backward()
                    norm = self.clip()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                    return norm
            """,
            line=12,
            message_contains="`self.scaler`",
            note="the clip in a method the step calls: flagged there, no fix (another function)",
        ),
        Invalid(
            """
            import torch

            model = torch.nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu")
            for x in torch.randn(8, 2, 4):
                optimizer.zero_grad()
                scaler.scale(model(x).sum()).backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            line=10,
            note="a script at module level",
            fixed="""
            import torch

            model = torch.nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu")
            for x in torch.randn(8, 2, 4):
                optimizer.zero_grad()
                scaler.scale(model(x).sum()).backward()
                scaler.unscale_(optimizer)
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
    )


def _same(ref: Ref | None, other: Ref) -> bool:
    return ref is not None and ref.key is not None and ref.key == other.key


def _scaler_parameters(function: ast.FunctionDef) -> set[str]:
    """Parameters whose annotation names a GradScaler (checked by the value
    layer; this is the cheap filter)."""
    args = function.args
    return {
        a.arg
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
        if a.annotation is not None and "GradScaler" in ast.unparse(a.annotation)
    }


def _may_unscale(event: Event, scaler: Ref, optimizer: Ref) -> bool:
    """A call this analysis does not follow that gets the scaler or the
    optimizer (``unscale_and_clip(scaler, opt)`` from another file)."""
    if event.kind != CALL or event.callee is not None:
        return False
    keys = {k for k in (scaler.key, optimizer.key) if k is not None}
    return any(a.key in keys for a in event.args) or (
        event.receiver is not None
        and event.receiver.key is not None
        and any(event.receiver.key.startswith(k + ".") for k in keys)
        and not event.receiver.key.endswith((".scale", ".parameters"))
    )
