"""TT216: an evaluation leaves the model in eval mode for the next training steps."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.imports import dotted_name
from torchtrap.facts.index import enclosing_function, parent
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Applicability, Finding, Fix, Severity, line_text
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loops import BACKWARD, CALL, EVAL, TRAIN, Event, Loop, LoopFacts, Ref

# A forward whose output is cut from the graph trains nothing of that model.
_DETACHING = frozenset({"detach", "data", "item", "tolist", "numpy"})


class TrainModeNotRestored(Rule):
    """Flags training steps that run after an evaluation switched the model to eval mode.

    ## What it does
    Follows one iteration of each loop (helpers of this file included) and
    flags an evaluation that calls `model.eval()` (or `model.train(False)`),
    directly, in a branch, or in a function the loop calls, when the
    iteration's next training step (a forward of the same model with grad
    on, then `backward()`) can run before any `model.train()`: the mode is
    followed around the loop, so an evaluation at the end of an epoch and a
    training step at the start of the next one count, and so does an
    evaluation inside the batch loop (`if step % 500 == 0: validate(model)`).

    Silent when `model.train()` runs before the next training step (at the
    top of the epoch, in the training function, after the evaluation), when
    the evaluator restores the previous mode (`model.train(was_training)`),
    for `eval()` on another object (a copy, an EMA model, a frozen
    teacher), for models whose class (defined in this file, or in another
    file the whole-program model reads, submodules included) has neither
    Dropout nor BatchNorm, for a module switched to eval mode on every step
    next to the training code (a frozen part), for a model whose forward in
    the training step is detached (`self.encoder(obs).detach()`: a frozen
    pretrained encoder kept in eval mode on purpose), for an evaluation inside a
    context manager that restores the mode (detectron2's
    `inference_context`), and in Lightning or HF `Trainer` classes. A model
    whose layers neither this file nor the model shows is reported at
    information level.

    `torchtrap run` reports an `optimizer.step()` after a forward pass in
    which Dropout/BatchNorm ran in eval mode and every module holding the
    stepped parameters was in eval mode (a frozen BatchNorm is not
    reported), and names the line that put the model in eval mode.

    ## Why is this bad?
    `model.eval()` stays in effect until `model.train()`: every training step
    after the evaluation runs with Dropout off and BatchNorm normalizing with
    its frozen running statistics, which silently changes what is trained.
    Measured with torch 2.13: with an evaluation at the end of each epoch,
    `nn.Dropout(0.5)` zeroes 50% of its inputs in the first epoch's training
    steps and 0% in the second's; an `nn.BatchNorm1d` in eval mode leaves
    its running mean and `num_batches_tracked` unchanged by a training batch
    of mean 5.

    Fix (safe): `model.train()` at the start of the training step's loop.

    ## Example
    ```python
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)  # calls model.eval()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
    - https://pytorch.org/tutorials/beginner/basics/optimization_tutorial.html
    """

    code = "TT216"
    name = "train-mode-not-restored"
    summary = "training continues after an evaluation without `model.train()`"
    fact = (
        "torch 2.13: Dropout(0.5) zeroed 50% of activations in epoch 1's training, 0% in epoch 2's"
    )
    # A training step needs a backward; "eval" alone is in most files.
    requires_text = ("backward",)

    def check(self) -> Iterable[Finding]:
        if "eval" not in self.ctx.text and "train(False)" not in self.ctx.text:
            return
        loops = self.ctx.values.loops
        self.models = self.ctx.values.models
        seen: set[int] = set()
        for loop in loops.loops():
            if not loops.may_backpropagate(loop) or loops.in_framework(loop):
                continue
            events = loops.iteration(loop)
            if not any(e.kind == EVAL for e in events) or not any(
                e.kind == BACKWARD for e in events
            ):
                continue
            for position, event in enumerate(events):
                if event.kind != EVAL or event.receiver is None or event.receiver.key is None:
                    continue
                if id(event.node) in seen or _switch_by_flag(events, event):
                    continue
                step = _unrestored_step(loops, events, position, loop)
                if step is None:
                    continue
                layers = self._layers(event.receiver)
                if layers is None:
                    layers = loops.train_mode_layers(event.receiver)
                if layers is False:
                    continue
                seen.add(id(event.node))
                yield self._finding(loops, loop, events, event, step, layers is True)

    def _layers(self, model: Ref) -> bool | None:
        """True: a class of this file with Dropout/BatchNorm; False: a class
        of this file without them; None: not known here."""
        origin = self.models.model_constructor(model.expr, model.at)
        if origin is None:
            return None
        if self.models.layers_of_constructor(origin.call):
            return True
        local = self.models.classes.class_of_call(origin.call)
        qualname = self.models.imports.qualname(origin.call.func) or ""
        if local is not None or qualname == "torch.nn.Sequential":
            return False
        if qualname.startswith("torch.nn.") and qualname.rsplit(".", 1)[-1][:1].isupper():
            return False  # a torch layer without train-mode behaviour (nn.Linear)
        return None

    def _finding(
        self,
        loops: LoopFacts,
        loop: Loop,
        events: list[Event],
        evaluation: Event,
        step: tuple[Event, Event],
        known: bool,
    ) -> Finding:
        forward, backward = step
        model = evaluation.receiver
        assert model is not None and model.key is not None
        name = model.key
        # The evaluation as the loop's function spells it: the helper call, or `model.eval()`.
        anchor = evaluation.via[0] if evaluation.via else evaluation.node
        trained = forward.via[0] if forward.via else forward.node
        line = getattr(trained, "lineno", 0)
        after = (
            f" after `{ast.unparse(anchor.func)}()`"
            if isinstance(anchor, ast.Call) and evaluation.via
            else ""
        )
        candidates = (
            f"`{name}` stays in eval mode{after}: the training step on {line_text(line)} "
            "runs with Dropout off, BatchNorm frozen",
            f"`{name}` stays in eval mode: the training step on {line_text(line)} runs with "
            "Dropout off, BatchNorm frozen",
        )
        message = next((m for m in candidates if len(m) <= MESSAGE_LIMIT), candidates[-1])
        related = [self.ctx.related(backward.node, "a training step that runs in eval mode")]
        if evaluation.via:
            related.insert(0, self.ctx.related(evaluation.node, "switched to eval mode here"))
        fixes = self._fixes(loop, evaluation, forward, backward, name)
        return self.finding(
            anchor,
            message,
            severity=None if known else Severity.INFO,
            fixes=fixes,
            related=related,
            line_refs=(line,),
        )

    def _fixes(
        self, loop: Loop, evaluation: Event, forward: Event, backward: Event, name: str
    ) -> list[Fix]:
        inner = backward.loops[-1] if backward.loops else loop
        function = enclosing_function(inner)
        if enclosing_function(forward.node) is not function:
            return []
        spelled = dotted_name(forward.node.func) if isinstance(forward.node, ast.Call) else None
        if spelled is None:
            return []
        if inner is loop or inner in evaluation.loops:
            anchor: ast.stmt = inner.body[0]  # the evaluation runs inside that loop
        else:
            anchor = inner
        text = f"{spelled}.train()"
        source = self.ctx.source
        return [
            Fix(
                f"Call `{text}` at the start of the training loop",
                Applicability.SAFE,
                build=lambda: [edits.insert_before_statement(source, anchor, text)],
            )
        ]

    valid = (
        Valid(
            """
            import torch

            def main(rgb_encoder, predictor, loader, val_loader, epochs):
                optimizer = torch.optim.AdamW(predictor.parameters())
                for epoch in range(epochs):
                    rgb_encoder.eval()
                    predictor.train()
                    for rgb, target in loader:
                        feats = rgb_encoder(rgb)
                        loss = (predictor(feats) - target).pow(2).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                    rgb_encoder.eval()
                    predictor.eval()
                    with torch.no_grad():
                        for rgb, target in val_loader:
                            predictor(rgb_encoder(rgb))
            """,
            note="issue 34 (waypoint-predictor): a frozen encoder set to eval at the top of "
            "each epoch, on purpose",
        ),
        Valid(
            """
            import torch

            class ClassificationModel:
                def train(self, loader, epochs, optimizer):
                    model = self.model
                    for epoch in range(epochs):
                        model.train()
                        for batch in loader:
                            loss = model(**batch)[0]
                            loss.backward()
                            optimizer.step()
                            model.zero_grad()
                        self.evaluate(loader)

                def evaluate(self, loader):
                    model = self.model
                    model.eval()
                    with torch.no_grad():
                        return [model(**batch)[1] for batch in loader]
            """,
            note="issue 34 (simpletransformers after the fix): `model.train()` in the epoch loop",
        ),
        Valid(
            """
            import torch

            def main(model, iterator, optim, eval_steps):
                @torch.no_grad()
                def _eval_epoch():
                    model.eval()
                    for batch in iterator:
                        model(batch)

                def _train_epoch():
                    for step, batch in enumerate(iterator):
                        model.train()
                        optim.zero_grad()
                        model(batch).sum().backward()
                        optim.step()
                        if step % eval_steps == 0:
                            _eval_epoch()

                for epoch in range(10):
                    _train_epoch()
            """,
            note="issue 34 (texar-pytorch after the fix): the nested evaluation, "
            "train mode set again on every step",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def validate(model, loader):
                model.eval()
                with torch.no_grad():
                    return sum(model(x).sum() for x in loader)

            def main(loader, val_loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    model.train()
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    validate(model, val_loader)
            """,
            note="`model.train()` at the top of the epoch",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def evaluate(model, loader):
                was_training = model.training
                model.eval()
                with torch.no_grad():
                    out = [model(x) for x in loader]
                model.train(was_training)
                return out

            def main(loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    evaluate(model, loader)
            """,
            note="the evaluator restores the previous mode",
        ),
        Valid(
            """
            import copy
            import torch
            import torch.nn as nn

            def main(loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    snapshot = copy.deepcopy(model)
                    snapshot.eval()
                    with torch.no_grad():
                        snapshot(x)
            """,
            note="`eval()` on a copy",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def main(loader, epochs):
                model = nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    model.eval()
                    with torch.no_grad():
                        model(x)
            """,
            note="a model without Dropout or BatchNorm",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def main(student, teacher, loader):
                optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
                for x in loader:
                    teacher.eval()
                    with torch.no_grad():
                        target = teacher(x)
                    optimizer.zero_grad()
                    ((student(x) - target) ** 2).mean().backward()
                    optimizer.step()
            """,
            note="a frozen teacher switched to eval mode on every step",
        ),
        Valid(
            """
            import torch
            from detectron2.evaluation import inference_context

            def main(model, loader, optimizer, epochs):
                for epoch in range(epochs):
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    with inference_context(model), torch.no_grad():
                        model(x)
            """,
            note="a context manager that restores the mode",
        ),
        Valid(
            """
            import torch

            def train_one_epoch(model, loader, optimizer):
                model.train()
                for x in loader:
                    optimizer.zero_grad()
                    model(x).sum().backward()
                    optimizer.step()

            def main(model, loader, optimizer, epochs):
                for epoch in range(epochs):
                    train_one_epoch(model, loader, optimizer)
                    model.eval()
                    with torch.no_grad():
                        model(next(iter(loader)))
            """,
            note="the training function switches to train mode itself",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def run_epoch(model, loader, optimizer, mode):
                if mode == "train":
                    model.train()
                else:
                    model.eval()
                for x in loader:
                    loss = model(x).sum()
                    if mode == "train":
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()

            def main(loader, val_loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
                optimizer = torch.optim.Adam(model.parameters())
                for epoch in range(epochs):
                    run_epoch(model, loader, optimizer, "train")
                    run_epoch(model, val_loader, None, "valid")
            """,
            note="one helper sets the mode it is asked for (fairseq's pitch predictor)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Agent:
                def __init__(self):
                    self.encoder = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
                    self.policy = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
                    self.optimizer = torch.optim.Adam(self.policy.parameters())

                def train_mode(self):
                    self.policy.train()
                    self.encoder.eval()

                def update(self, obs):
                    z = self.encoder(obs).detach()
                    loss = self.policy(z).sum()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()

                def run(self, loader, epochs):
                    for epoch in range(epochs):
                        self.train_mode()
                        for obs in loader:
                            self.update(obs)
            """,
            note="issue 34: a frozen pretrained encoder kept in eval mode, its output detached",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            class ClassificationModel:
                def train(self, loader, epochs, optimizer, n_gpu):
                    model = self.model
                    if n_gpu > 1:
                        model = torch.nn.DataParallel(model)
                    model.train()
                    for epoch in range(epochs):
                        for batch in loader:
                            loss = model(**batch)[0]
                            loss.backward()
                            optimizer.step()
                            model.zero_grad()
                        self.eval_model(loader)

                def eval_model(self, loader):
                    return self.evaluate(loader)

                def evaluate(self, loader):
                    model = self.model
                    model.eval()
                    with torch.no_grad():
                        return [model(**batch)[1] for batch in loader]
            """,
            line=16,
            severity=Severity.INFO,
            message_contains="`self.model` stays in eval mode",
            note="issue 34 (simpletransformers): `model = self.model` in both methods",
        ),
        Invalid(
            """
            import torch

            def main(model, iterator, optim, eval_steps):
                @torch.no_grad()
                def _eval_epoch():
                    model.eval()
                    for batch in iterator:
                        model(batch)

                def _train_epoch():
                    model.train()
                    for step, batch in enumerate(iterator):
                        optim.zero_grad()
                        model(batch).sum().backward()
                        optim.step()
                        if step % eval_steps == 0:
                            _eval_epoch()

                for epoch in range(10):
                    _train_epoch()
            """,
            line=18,
            severity=Severity.INFO,
            message_contains="`model` stays in eval mode after `_eval_epoch()`",
            note="issue 34 (asyml/texar-pytorch): nested functions, the evaluation "
            "inside the batch loop",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 2)
                    self.bn = nn.BatchNorm1d(8)

                def forward(self, x):
                    return self.fc(self.bn(x))

            class Trainer:
                def __init__(self, loader, test_loader):
                    self.net = nn.DataParallel(Net())
                    self.solver = torch.optim.SGD(self.net.parameters(), lr=0.1)
                    self.loader, self.test_loader = loader, test_loader

                def train(self, epochs):
                    self.net.train(True)
                    for epoch in range(epochs):
                        for x, y in self.loader:
                            self.solver.zero_grad()
                            nn.functional.cross_entropy(self.net(x), y).backward()
                            self.solver.step()
                        self._accuracy()

                def _accuracy(self):
                    self.net.eval()
                    with torch.no_grad():
                        return sum((self.net(x).argmax(1) == y).sum() for x, y in self.test_loader)
            """,
            line=27,
            message_contains="`self.net` stays in eval mode",
            note="issue 34 (zhangyongshun/resnet_finetune_cub): the model wrapped in DataParallel",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            def validate(model, loader):
                model.eval()
                with torch.no_grad():
                    return sum(model(x).sum() for x in loader)

            def main(loader, val_loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model.train()
                for epoch in range(epochs):
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    validate(model, val_loader)
            """,
            line=19,
            message_contains="`model` stays in eval mode after `validate()`: the training step "
            "on line 17",
            fixed="""
            import torch
            import torch.nn as nn

            def validate(model, loader):
                model.eval()
                with torch.no_grad():
                    return sum(model(x).sum() for x in loader)

            def main(loader, val_loader, epochs):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model.train()
                for epoch in range(epochs):
                    model.train()
                    for x in loader:
                        optimizer.zero_grad()
                        model(x).sum().backward()
                        optimizer.step()
                    validate(model, val_loader)
            """,
        ),
        Invalid(
            """
            import torch

            class Trainer:
                def evaluate(self):
                    self.model.eval()
                    with torch.no_grad():
                        for x in self.val_loader:
                            self.model(x)

                def fit(self):
                    self.model.train()
                    for step, x in enumerate(self.loader):
                        self.optimizer.zero_grad()
                        self.model(x).sum().backward()
                        self.optimizer.step()
                        if step % 500 == 0:
                            self.evaluate()
            """,
            line=18,
            severity=Severity.INFO,
            message_contains="`self.model` stays in eval mode",
            note="evaluation inside the batch loop; a model whose layers are not known here",
            fixed="""
            import torch

            class Trainer:
                def evaluate(self):
                    self.model.eval()
                    with torch.no_grad():
                        for x in self.val_loader:
                            self.model(x)

                def fit(self):
                    self.model.train()
                    for step, x in enumerate(self.loader):
                        self.model.train()
                        self.optimizer.zero_grad()
                        self.model(x).sum().backward()
                        self.optimizer.step()
                        if step % 500 == 0:
                            self.evaluate()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 2)
                    self.bn = nn.BatchNorm1d(8)

                def forward(self, x):
                    return self.fc(self.bn(x))

            def train_epoch(net, loader, optimizer):
                for x, y in loader:
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(net(x), y).backward()
                    optimizer.step()

            def main(loader, val_loader):
                model = Net()
                optimizer = torch.optim.Adam(model.parameters())
                for epoch in range(10):
                    train_epoch(model, loader, optimizer)
                    model.eval()
                    with torch.no_grad():
                        accuracy = sum((model(x).argmax(1) == y).sum() for x, y in val_loader)
            """,
            line=25,
            severity=Severity.WARNING,
            message_contains="`model` stays in eval mode: the training step on line 24",
            note="the training function of this file never calls train(); fixed there",
            fixed="""
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 2)
                    self.bn = nn.BatchNorm1d(8)

                def forward(self, x):
                    return self.fc(self.bn(x))

            def train_epoch(net, loader, optimizer):
                net.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(net(x), y).backward()
                    optimizer.step()

            def main(loader, val_loader):
                model = Net()
                optimizer = torch.optim.Adam(model.parameters())
                for epoch in range(10):
                    train_epoch(model, loader, optimizer)
                    model.eval()
                    with torch.no_grad():
                        accuracy = sum((model(x).argmax(1) == y).sum() for x, y in val_loader)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Agent:
                def __init__(self):
                    self.encoder = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
                    self.policy = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
                    self.optimizer = torch.optim.Adam(
                        [*self.policy.parameters(), *self.encoder.parameters()]
                    )

                def train_mode(self):
                    self.policy.train()
                    self.encoder.eval()

                def update(self, obs):
                    z = self.encoder(obs)
                    loss = self.policy(z).sum()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()

                def run(self, loader, epochs):
                    for epoch in range(epochs):
                        self.train_mode()
                        for obs in loader:
                            self.update(obs)
            """,
            note="near miss of the frozen encoder: trained through (not detached), left in eval",
        ),
    )


def _unrestored_step(
    loops: LoopFacts, events: list[Event], position: int, loop: Loop
) -> tuple[Event, Event] | None:
    """From the eval event at ``position``, around the loop: the first
    training step (a grad-on forward of the model, then a backward) reached
    before any ``train()`` of it; None when it is restored first."""
    evaluation = events[position]
    model = evaluation.receiver
    assert model is not None and model.key is not None
    order = events[position + 1 :] + events[:position]
    tail = len(events) - position - 1  # events of this iteration; the rest are the next one's
    forward: Event | None = None
    latest, latest_wrapped = evaluation, False  # the last eval() of the model before the step
    for index, event in enumerate(order):
        wrapped = index >= tail
        if (
            event.kind == TRAIN
            and event.receiver is not None
            and _same_model(event.receiver, model)
        ):
            return None
        if (
            event.kind == EVAL
            and event is not evaluation
            and event.receiver is not None
            and _same_model(event.receiver, model)
        ):
            forward = None
            latest, latest_wrapped = event, wrapped
            continue
        if (
            event.kind == CALL
            and event.receiver is not None
            and event.receiver.key == model.key
            and not _grad_off(loops, event)
            and not _output_detached(event)
        ):
            forward = event
        elif event.kind == BACKWARD and forward is not None:
            if _next_to_training(evaluation, event):
                return None  # a frozen part switched each step, next to the training code
            if latest_wrapped == wrapped and _set_for_training(latest, event):
                return None  # `encoder.eval()` at the top of the epoch: frozen on purpose
            return forward, event
    return None


def _switch_by_flag(events: list[Event], evaluation: Event) -> bool:
    """``if train: model.train() else: model.eval()``: a function that sets
    the mode its caller asks for (a run-epoch helper called for training and
    for validation); which branch runs is not known here."""
    if not evaluation.conditional:
        return False
    model = evaluation.receiver
    return any(
        e.kind == TRAIN
        and e.via == evaluation.via
        and e.conditional
        and e.receiver is not None
        and model is not None
        and _same_model(e.receiver, model)
        and enclosing_function(e.node) is enclosing_function(evaluation.node)
        for e in events
    )


def _next_to_training(evaluation: Event, backward: Event) -> bool:
    """An unconditional ``m.eval()`` written in the same loop body as the
    training step (not in a helper, a branch or another loop level)."""
    return (
        not evaluation.via
        and not evaluation.conditional
        and evaluation.loops == backward.loops
        and not backward.via
    )


def _set_for_training(evaluation: Event, backward: Event) -> bool:
    """An unconditional ``m.eval()`` written in the loop's own code before the
    training step of the same iteration, at its loop level or around it
    (`rgb_encoder.eval()` at the top of each epoch, the batch loop inside):
    the model trains in eval mode because the code says so (a frozen
    pretrained encoder), not because an evaluation left it there."""
    depth = len(evaluation.loops)
    return (
        not evaluation.via
        and not evaluation.conditional
        and backward.loops[:depth] == evaluation.loops
        and getattr(evaluation.node, "lineno", 0) < getattr(backward.node, "lineno", 0)
    )


def _output_detached(event: Event) -> bool:
    """``self.encoder(obs).detach()``: a frozen part's forward, no training
    step of it (nothing flows back into it)."""
    up = parent(event.node)
    return isinstance(up, ast.Attribute) and up.value is event.node and up.attr in _DETACHING


def _grad_off(loops: LoopFacts, event: Event) -> bool:
    return any(
        grad_off_context(node, loops.imports) is not None for node in (event.node, *event.via)
    )


def _same_model(ref: Ref, model: Ref) -> bool:
    key, name = ref.key, model.key
    if key is None or name is None:
        return True  # unknown: may be the model (stay silent)
    return key == name or name.startswith(key + ".") or key.startswith(name + ".")
