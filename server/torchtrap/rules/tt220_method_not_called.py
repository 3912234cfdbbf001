"""TT220: `model.eval`, `optimizer.step`, `loss.backward` written without `()`."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.modules import enclosing_method, self_name
from torchtrap.findings import Applicability, Finding, Fix, Severity
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind
from torchtrap.values.loops import Ref
from torchtrap.values.program import module_model
from torchtrap.values.program_values import program_holds_only

MODULE = "module"
OPTIMIZER = "optimizer"
SCHEDULER = "scheduler"
TENSOR = "tensor"
_MAX_DEPTH = 3  # callers followed for a parameter

# Which receivers each method does something on, and what is lost when it is
# only named: (receiver kind, consequence).
METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    "eval": ((MODULE, "the model stays in training mode (dropout on, batch-norm stats updated)"),),
    "train": ((MODULE, "the model's mode is not changed"),),
    "zero_grad": (
        (OPTIMIZER, "gradients are not zeroed and add up across steps"),
        (MODULE, "gradients are not zeroed and add up across steps"),
    ),
    "step": (
        (OPTIMIZER, "the parameters are not updated"),
        (SCHEDULER, "the learning rate is not changed"),
    ),
    "backward": ((TENSOR, "no gradients are computed"),),
}


class MethodNotCalled(Rule):
    """Flags `model.eval`, `optimizer.step`, `loss.backward`... named but not called.

    ## What it does
    Flags an expression statement that is only an attribute, without the
    call: `model.eval`, `model.train`, `optimizer.zero_grad`,
    `optimizer.step`, `scheduler.step`, `loss.backward`. Only where the value
    layer knows the receiver: a module (an `nn.*` layer, a local
    `nn.Module` subclass, `self` in one), an optimizer (`torch.optim.*`),
    a learning-rate scheduler (`torch.optim.lr_scheduler.*`, Hugging Face's
    schedule builders) or a tensor (a loss computed by a loss module or
    `torch` function). `zero_grad` is flagged on optimizers and modules.

    Silent on a receiver it cannot identify (a parameter nobody passes a
    known value, an imported object), on `self.eval` in a class that is not
    an `nn.Module` (it may be a plain attribute), and on other objects'
    `step` (`env.step`).

    ## Why is this bad?
    Naming a method without calling it evaluates to the bound method and
    throws it away, so nothing happens and nothing fails: `model.eval`
    leaves dropout on, `optimizer.step` never updates the parameters,
    `loss.backward` computes no gradients. Measured with torch 2.13 on CPU:
    after a bare `model.eval`, `model.training` is still `True` and two
    passes of the same batch through a dropout model differ; with
    `model.eval()` they are equal.

    Fix: add `()` (safe).

    ## Example
    ```python
    model.eval
    with torch.no_grad():
        predictions = model(x)
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.no_grad():
        predictions = model(x)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.step.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
    """

    code = "TT220"
    name = "method-not-called"
    summary = "`model.eval`, `optimizer.step`, `loss.backward` without `()`: nothing happens"
    fact = (
        "Measured with torch 2.13: after a bare `model.eval`, `model.training` is still "
        "True and dropout stays on."
    )
    default_severity = Severity.ERROR
    requires_text = ("eval", "train", "zero_grad", "step", "backward")

    def check(self) -> Iterable[Finding]:
        for stmt in self.ctx.facts.index.of(ast.Expr):
            attr = stmt.value
            if not isinstance(attr, ast.Attribute) or attr.attr not in METHODS:
                continue
            found = self._receiver(attr, stmt)
            if found is None:
                continue
            yield self._finding(stmt, attr, found)

    def _receiver(self, attr: ast.Attribute, stmt: ast.Expr) -> str | None:
        """The consequence of not calling ``attr`` on its receiver, None when
        the receiver is not evidently one the method acts on."""
        receiver = attr.value
        for kind, consequence in METHODS[attr.attr]:
            if self._is(kind, receiver, stmt):
                return consequence
        # A receiver made in another function or file (a parameter, a
        # factory's result, a class of another module): the program's model.
        if isinstance(receiver, (ast.Name, ast.Attribute)):
            ctx = self.ctx
            model = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
            for kind, consequence in METHODS[attr.attr]:
                if (
                    kind != TENSOR
                    and model is not None
                    and program_holds_only(model, receiver, kind)
                ):
                    return consequence
        return None

    def _is(self, kind: str, receiver: ast.expr, stmt: ast.AST, depth: int = 0) -> bool:
        values = self.ctx.values
        if kind in (MODULE, TENSOR):
            if (
                kind == MODULE
                and isinstance(receiver, ast.Name)
                and self._self_of_module(receiver, stmt)
            ):
                return True
            if values.of(receiver, stmt).holds(Kind.MODULE if kind == MODULE else Kind.TENSOR):
                return True
            if kind == MODULE and isinstance(receiver, ast.Attribute) and depth < _MAX_DEPTH:
                # `self.model = model` in `__init__(self, model)`: what it was given.
                held = values.loops.values(Ref(receiver, stmt, None))
                return bool(held) and all(
                    isinstance(v, ast.Name) and self._is(kind, v, at, depth + 1)
                    for v, at in held or ()
                )
            # `def evaluate(model): model.eval`: what every caller passes.
            function = values.parameter(receiver, stmt) if isinstance(receiver, ast.Name) else None
            if function is None or depth >= _MAX_DEPTH or not isinstance(receiver, ast.Name):
                return False
            passed = values.loaders.parameter_arguments(function, receiver.id)
            return bool(passed) and all(
                self._is(kind, arg, call, depth + 1) for arg, call in passed or ()
            )
        ref = Ref(receiver, stmt, None)
        if kind == OPTIMIZER:
            return values.loops.optimizer(ref)
        return values.loops.scheduler(ref)

    def _self_of_module(self, name: ast.Name, stmt: ast.AST) -> bool:
        """``self`` in a method of a class that derives from ``nn.Module``."""
        method = enclosing_method(stmt)
        if method is None or self_name(method[0]) != name.id:
            return False
        if _rebinds(method[0], name.id):
            return False
        classes = self.ctx.facts.classes
        info = classes.get(method[1].name)
        return info is not None and info.node is method[1] and classes.is_module(info)

    def _finding(self, stmt: ast.Expr, attr: ast.Attribute, consequence: str) -> Finding:
        source = self.ctx.source
        shown = source.segment(source.node_range(attr))
        if len(shown) > 40 or "\n" in shown:
            shown = f".{attr.attr}"
        message = f"`{shown}` is not called: {consequence}"
        end = source.node_range(attr).end
        fix = Fix(
            f"Call it: `{attr.attr}()`",
            Applicability.SAFE,
            build=lambda: [edits.insert_at(end, "()")],
        )
        return self.finding(attr, message, fixes=[fix])

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            def evaluate(model, loader):
                model.eval
                for x, y in loader:
                    model(x)

            class Agent:
                def __init__(self, env):
                    self.env = env
                    self.eval = False

                def act(self):
                    self.eval
                    self.env.step
            """,
            note="receivers the value layer does not know: a parameter, a non-module class",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 10)
            loss = model(torch.randn(1, 2)).sum()
            model.eval()
            model.train(True)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step = opt.step
            hooks = [model.eval, loss.backward]
            """,
            note="called, or the bound method is used as a value",
        ),
        Valid(
            """
            import torch

            class Runner:
                def __init__(self, env, cfg):
                    self.env = env
                    self.cfg = cfg

                def run(self):
                    self.env.step
                    self.cfg.train
                    self.cfg.eval
            """,
            note="attributes named like the methods on other objects",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(2, 2)
            model.step
            model.backward
            opt = torch.optim.Adam(model.parameters())
            opt.eval
            opt.backward
            """,
            note="a method the receiver's kind does not have is an AttributeError, not this",
        ),
        Valid(
            """
            import torch

            class Runner:
                def __init__(self, optimizer, schedule: "Schedule"):
                    self.optimizer = optimizer
                    self.schedule = schedule

                def run(self):
                    self.optimizer.zero_grad
                    self.schedule.step
            """,
            note="stored on `self` from a parameter nobody annotates or passes a known value",
        ),
        Valid(
            """
            import torch.nn as nn

            class Runner:
                def __init__(self, model):
                    self.model = model

                def run(self):
                    self.model.eval

            class Child(Runner):
                pass

            class Holder:
                def __init__(self, env):
                    self.env = env

                def tick(self):
                    self.env.eval

            Runner(nn.Linear(2, 2))
            Holder(object())
            """,
            note="a constructor that may run from elsewhere (the class is a base), or "
            "given something that is not a module",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
            model.eval
            with torch.no_grad():
                out = model(torch.randn(2, 4))
            """,
            line=6,
            severity=Severity.ERROR,
            message_contains="`model.eval` is not called: the model stays in training mode",
            fixed="""
            import torch
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
            model.eval()
            with torch.no_grad():
                out = model(torch.randn(2, 4))
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            def train(loader):
                model = nn.Linear(4, 2)
                criterion = nn.CrossEntropyLoss()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 5)
                for x, y in loader:
                    optimizer.zero_grad
                    loss = criterion(model(x), y)
                    loss.backward
                    optimizer.step
                scheduler.step
            """,
            message_contains="`loss.backward` is not called: no gradients are computed",
            note="four at once: optimizer, tensor, scheduler",
        ),
        Invalid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(2, 2)

                def predict(self, x):
                    self.eval
                    return self.fc(x)
            """,
            line=10,
            message_contains="`self.eval` is not called",
            fixed="""
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(2, 2)

                def predict(self, x):
                    self.eval()
                    return self.fc(x)
            """,
            note="`self` in an nn.Module subclass",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Trainer:
                def __init__(self, model):
                    self.model = nn.Linear(2, 2)
                    self.optimizer = torch.optim.Adam(self.model.parameters())

                def step(self, loss):
                    self.optimizer.zero_grad
                    loss.backward()
                    self.optimizer.step()
            """,
            line=11,
            message_contains="gradients are not zeroed",
            note="an optimizer held in an attribute",
        ),
        Invalid(
            """
            from torch import optim

            class Trainer:
                def __init__(self, dynamics, optimizer: optim.Optimizer):
                    self.dynamics = dynamics
                    self.optimizer = optimizer

                def train_step(self, x):
                    self.optimizer.zero_grad
                    loss = self.dynamics(x).sum()
                    loss.backward()
                    self.optimizer.step()
            """,
            line=10,
            message_contains="`self.optimizer.zero_grad` is not called",
            note="an optimizer known by its annotation, stored on `self` (l2hmc-qcd)",
        ),
        Invalid(
            """
            import torch.nn as nn

            class Trainer:
                def __init__(self, setting, model):
                    self.setting = setting
                    self.model = model

                def validate(self, batch):
                    self.model.eval
                    return self.model(batch)

            def run(setting, batch):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                return Trainer(setting, model).validate(batch)
            """,
            line=10,
            message_contains="`self.model.eval` is not called",
            note="a module given to the constructor, stored on `self` (paperSpectralTranscoder)",
        ),
    )


def _rebinds(function: ast.AST, name: str) -> bool:
    """``self = other`` inside the method: ``self`` is no longer the instance."""
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(function)
    )
