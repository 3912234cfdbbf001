"""TT213: a loss given an input that is already normalised the way the loss normalises it."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from torchtrap.facts.index import enclosing_function, parent, walk_scope
from torchtrap.facts.remote import same_file
from torchtrap.facts.shapes import shape
from torchtrap.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Position,
    Range,
    Severity,
    unsafe_title,
)
from torchtrap.fixes.names import ModuleNames
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Probability
from torchtrap.values.assumptions import Assumption, probability_assumption
from torchtrap.values.program import Model, module_model
from torchtrap.values.program_values import (
    ProgramProbability,
    program_module_types,
    program_probability,
    value_path,
)

F = "torch.nn.functional."


@dataclass(frozen=True)
class _Loss:
    """A loss and the normalisation it applies to its input itself."""

    name: str  # as the message names it
    applies: str  # "log_softmax" / "sigmoid"
    wrong: str  # the probability kind that is wrong here: "softmax" / "sigmoid"


_CE = _Loss("cross_entropy", "log_softmax", "softmax")
_NLL = _Loss("nll_loss", "", "softmax")
_BCE_LOGITS = _Loss("binary_cross_entropy_with_logits", "sigmoid", "sigmoid")
FUNCTIONS = {
    F + "cross_entropy": _CE,
    F + "nll_loss": _NLL,
    F + "binary_cross_entropy_with_logits": _BCE_LOGITS,
}
MODULES = {
    "torch.nn.CrossEntropyLoss": _CE,
    "torch.nn.NLLLoss": _NLL,
    "torch.nn.BCEWithLogitsLoss": _BCE_LOGITS,
}
_SOFTMAX_TO_LOG = {
    "torch.softmax": "torch.log_softmax",
    F + "softmax": F + "log_softmax",
    "torch.special.softmax": "torch.special.log_softmax",
}


class DoubleNormalisedLoss(Rule):
    """Flags a softmax or sigmoid output given to a loss that normalises its input itself.

    ## What it does
    Flags, using the value layer (`ctx.values`, which follows local names,
    `self.` attributes, and model classes of other files whose `forward`
    ends in `Softmax`/`Sigmoid`):

    - a softmax output into `F.cross_entropy` / `nn.CrossEntropyLoss`
      (softmax applied twice);
    - a softmax (not log-softmax) output into `F.nll_loss` / `nn.NLLLoss`
      (the loss becomes -p instead of -log p);
    - a sigmoid output into `F.binary_cross_entropy_with_logits` /
      `nn.BCEWithLogitsLoss` (sigmoid applied twice).

    Silent for logits into cross entropy, log-softmax into NLL, a sigmoid
    into `BCELoss`, a softmax used only for metrics or at inference (the
    loss gets the logits), a `forward` that normalises only when not
    training, a probability that is scaled or complemented (`p * w`,
    `1 - p`), and log-softmax into cross entropy: `log_softmax` is
    idempotent, so that loss and its gradient are the same as from the
    logits (measured: equal to 1e-8), redundant but harmless. A value that
    is a probability on some paths only (one branch of an `if`, some of a
    function's callers) is reported at info severity, saying what it
    assumed ("if `out` is the softmax from line 8"), without a fix.

    ## Why is this bad?
    `cross_entropy` computes `log_softmax` of its input and
    `binary_cross_entropy_with_logits` a sigmoid: given probabilities, they
    squash values in [0, 1] a second time, so the predicted distribution
    can never get close to one-hot and the gradients shrink. Measured with
    torch 2.13 on a 3-class linear classifier trained 300 SGD steps (lr 0.5):
    `cross_entropy(logits)` falls from 1.47 to 0.01, `cross_entropy(softmax(logits))`
    only from 1.05 to 0.56 (its floor is 0.55 for 3 classes), and the first
    gradient is 4.4 times smaller. `nll_loss` expects log-probabilities; given
    `softmax(z)` it minimises `-p`, whose gradient vanishes when `p` is small,
    which is where it matters.

    Fixes: `nll_loss(softmax(z))` → `nll_loss(log_softmax(z))` (safe when the
    loss is the softmax's only use, unsafe otherwise); drop the extra
    softmax/sigmoid before `cross_entropy`/`..._with_logits` (safe when
    the loss is its only use; unsafe otherwise: other uses expect
    probabilities). No fix when the normalisation is a model's last layer.

    ## Example
    ```python
    logits = model(x)
    probs = torch.softmax(logits, dim=1)
    loss = F.cross_entropy(probs, y)
    ```

    ## Use instead
    ```python
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
    - https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html
    - https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html
    """

    code = "TT213"
    name = "double-normalised-loss"
    summary = "A softmax/sigmoid output fed to a loss that applies it again: training stalls"
    fact = (
        "Measured with torch 2.13: 300 SGD steps take `cross_entropy(logits)` from 1.47 to "
        "0.01, `cross_entropy(softmax(logits))` only from 1.05 to 0.56."
    )
    requires_text = (
        "cross_entropy",
        "CrossEntropyLoss",
        "nll_loss",
        "NLLLoss",
        "with_logits",
        "WithLogitsLoss",
        # A criterion built elsewhere (a factory, another file): the model says which.
        "criterion",
        "loss",
    )

    def check(self) -> Iterable[Finding]:
        self._program: Model | Literal[False] | None = None  # the model, asked once
        seen: set[int] = set()
        for call, loss in self._loss_calls():
            arg = _input(call)
            if arg is None or id(call) in seen:
                continue
            seen.add(id(call))
            value = self.ctx.values.of(arg, call)
            prob = value.probability
            if prob is None:
                found = self._program_probability(arg)
                if found is not None and found[0].kind == loss.wrong:
                    yield self._program_finding(call, arg, loss, *found)
                continue
            if prob.kind != loss.wrong or prob.scaled or prob.complement:
                continue
            if value.definite:
                yield self._finding(call, arg, loss, prob)
                continue
            assumption = probability_assumption(value, prob, self.ctx.path)
            if assumption is not None:
                yield self._may_finding(arg, loss, assumption)

    def _loss_calls(self) -> Iterator[tuple[ast.Call, _Loss]]:
        """Calls of a loss function, and calls of a loss module: only names a
        loss module is stored under (`criterion = nn.CrossEntropyLoss()`,
        `self.loss_fn = ...`) can be, and the value layer confirms them."""
        imports = self.ctx.facts.imports
        by_name = self.ctx.facts.calls_by_name
        for qualname, loss in FUNCTIONS.items():
            for name in {qualname.rpartition(".")[2], *imports.local_names_for(qualname)}:
                for call in by_name.get(name, ()):
                    if imports.qualname(call.func) == qualname:
                        yield call, loss
        holders: set[str] = set()
        for qualname, loss in MODULES.items():
            for name in {qualname.rpartition(".")[2], *imports.local_names_for(qualname)}:
                for built in by_name.get(name, ()):
                    if imports.qualname(built.func) != qualname:
                        continue
                    outer = parent(built)
                    if isinstance(outer, ast.Call) and outer.func is built:
                        yield outer, loss  # nn.CrossEntropyLoss()(out, y)
                    holder = _stored_name(built)
                    if holder is not None:
                        holders.add(holder)
        yield from self._program_loss_calls()
        models = self.ctx.values.models
        for holder in sorted(holders):
            for call in by_name.get(holder, ()):
                if not call.args and not call.keywords:
                    continue
                origin = models.model_constructor(call.func, call)
                built_name = imports.qualname(origin.call.func) if origin is not None else None
                found = MODULES.get(built_name) if built_name is not None else None
                if found is not None:
                    yield call, found

    def _model(self) -> Model | None:
        ctx = self.ctx
        if self._program is None:
            self._program = module_model(ctx.project, ctx.path, ctx.text, ctx.tree) or False
        return self._program or None

    def _program_loss_calls(self) -> Iterator[tuple[ast.Call, _Loss]]:
        """Calls of a loss module the file alone does not show: a criterion
        built by a factory (`build_criterion(cfg)`), a dict of constructors,
        another file; the whole-program model says what the callee holds."""
        if not any(word in self.ctx.text for word in ("loss", "Loss", "criterion")):
            return
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not call.args or not isinstance(func, (ast.Name, ast.Attribute)):
                continue
            if self.ctx.facts.imports.qualname(func) is not None:
                continue  # an imported function or class: the module's own question
            model = self._model()
            if model is None:
                return
            types = program_module_types(model, func)
            losses = {MODULES.get(t) for t in types} if types else set()
            if len(losses) == 1 and None not in losses:
                yield call, losses.pop()  # type: ignore[misc]

    def _program_probability(self, arg: ast.expr) -> tuple[ProgramProbability, Model] | None:
        """A softmax or sigmoid the module's values cannot see: the end of a
        `forward` in another file, a method returning probabilities."""
        if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            return None
        model = self._model()
        found = program_probability(model, arg) if model is not None else None
        if found is None or model is None:
            return None
        return found, model

    def _program_finding(
        self, call: ast.Call, arg: ast.expr, loss: _Loss, prob: ProgramProbability, model: Model
    ) -> Finding:
        where = model.where(prob.made.module, prob.made.line, prob.made.col)
        related = value_path(
            model, prob.made, f"the {prob.kind} is computed here", self.ctx.path, call
        )
        shown = ""
        if where is not None:
            path, rng = where
            elsewhere = not same_file(path, self.ctx.path)
            shown = f" ({os.path.basename(path)}:{rng.start.line})" if elsewhere else ""
        if loss is _NLL:
            message = (
                f"`nll_loss` expects log-probabilities: given a softmax output{shown} the loss "
                "is -p, not -log p"
            )
        else:
            message = (
                f"`{loss.name}` applies {loss.applies} itself: given a {prob.kind} "
                f"output{shown}, it normalises twice"
            )
        return self.finding(arg, message, related=related)

    def _finding(self, call: ast.Call, arg: ast.expr, loss: _Loss, prob: Probability) -> Finding:
        given = f"the model's {prob.kind} output" if prob.module else f"this {prob.kind} output"
        if loss is _NLL:
            message = (
                f"`nll_loss` expects log-probabilities: given {given} the loss is -p, "
                "not -log p; use `log_softmax`"
            )
        else:
            # In an evaluation (no_grad, or `model.eval()` with no backward) nothing
            # trains: the reported loss is what is off.
            effect = (
                "the loss value is off"
                if self.ctx.values.autograd.evaluating(call)
                else "training stalls"
            )
            message = (
                f"`{loss.name}` applies {loss.applies} itself: given {given}, it normalises "
                f"twice and {effect}"
            )
            if len(message) > 120:
                message = f"`{loss.name}` applies {loss.applies} itself: {given} is squashed twice"
        origin = self.ctx.related(prob.origin, f"the {prob.kind} is computed here")
        # Related rows are for other places: `loss(softmax(z))` flags the softmax itself.
        here = self.ctx.range(arg)
        inside = origin.path is None and here.start <= origin.range.start <= here.end
        related = [] if inside else [origin]
        return self.finding(arg, message, fixes=self._fixes(call, arg, loss, prob), related=related)

    def _may_finding(self, arg: ast.expr, loss: _Loss, assumption: Assumption) -> Finding:
        """A probability on some paths only (one branch, some callers): that
        path normalises twice; said as an assumption, at a lower severity,
        without a fix (the other paths may need the value as it is)."""
        if loss is _NLL:
            message = (
                f"`nll_loss` expects log-probabilities: {assumption.phrase}, "
                "the loss is -p, not -log p"
            )
        else:
            message = (
                f"`{loss.name}` applies {loss.applies} itself: {assumption.phrase}, "
                "it normalises twice"
            )
        return self.finding(arg, message, assumption=assumption)

    # -- fixes ----------------------------------------------------------------------
    def _fixes(self, call: ast.Call, arg: ast.expr, loss: _Loss, prob: Probability) -> list[Fix]:
        origin = prob.origin
        if prob.module or prob.passed or prob.guarded or not isinstance(origin, ast.Call):
            return []
        if enclosing_function(origin) is not enclosing_function(call):
            return []
        if origin is arg:
            only_use = True
        elif prob.via is not None and _assigned_to(origin, prob.via):
            only_use = _uses(prob.via, origin, exclude=arg) == 0
        else:
            return []
        if loss is _NLL:
            return self._log_softmax_fix(origin, only_use)
        return self._drop_fix(origin, loss, only_use)

    def _drop_fix(self, origin: ast.Call, loss: _Loss, only_use: bool) -> list[Fix]:
        inner = self._normalised_input(origin)
        if inner is None:
            return []
        source = self.ctx.source
        text = source.segment(source.node_range(inner))
        stmt = parent(origin)
        if (
            isinstance(stmt, ast.Assign)
            and stmt.value is origin
            and [shape(t) for t in stmt.targets] == [shape(_stored(inner))]
            and stmt.end_lineno == stmt.lineno
            and source.line(stmt.lineno).strip() == source.segment(source.node_range(stmt))
        ):
            # `y_hat = torch.softmax(y_hat, 1)`: dropping it leaves `y_hat = y_hat`.
            edit = Edit(Range(Position(stmt.lineno, 0), Position(stmt.lineno + 1, 0)), "")
        else:
            edit = Edit(source.node_range(origin), text)
        kind = "softmax" if loss is _CE else "sigmoid"
        title = f"Drop the {kind}: {loss.name} applies it"  # names the loss, not code it writes
        if not only_use:
            title = unsafe_title(title, "other uses of the value expect probabilities")
        return [
            Fix(
                title,
                Applicability.SAFE if only_use else Applicability.UNSAFE,
                build=lambda: [edit],
            )
        ]

    def _normalised_input(self, call: ast.Call) -> ast.expr | None:
        """``torch.softmax(z, 1)`` / ``F.sigmoid(z)`` / ``z.softmax(1)`` → ``z``."""
        if self.ctx.facts.imports.qualname(call.func) is not None:
            first = call.args[0] if call.args else None
            return None if first is None or isinstance(first, ast.Starred) else first
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("softmax", "sigmoid"):
            return call.func.value
        return None

    def _log_softmax_fix(self, origin: ast.Call, only_use: bool) -> list[Fix]:
        source, ctx = self.ctx.source, self.ctx
        func = origin.func
        qualname = ctx.facts.imports.qualname(func)
        method = qualname is None and isinstance(func, ast.Attribute) and func.attr == "softmax"
        if not method and qualname not in _SOFTMAX_TO_LOG:
            return []

        def build() -> list[Edit]:
            if method:
                assert isinstance(func, ast.Attribute)
                receiver = source.segment(source.node_range(func.value))
                return [Edit(source.node_range(func), f"{receiver}.log_softmax")]
            if isinstance(func, ast.Attribute):
                head = source.segment(source.node_range(func.value))
                return [Edit(source.node_range(func), f"{head}.log_softmax")]
            names = ModuleNames(source, ctx.tree, ctx.facts.index)
            target = _SOFTMAX_TO_LOG[qualname or ""]
            ref = names.reference(target) or target
            return [Edit(source.node_range(func), ref), *names.import_edits()]

        title = "Use `log_softmax`: `nll_loss` expects log-probabilities"
        if not only_use:
            title = unsafe_title(title, "other uses of the value expect probabilities")
        return [Fix(title, Applicability.SAFE if only_use else Applicability.UNSAFE, build=build)]

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            def step(model, x, y):
                logits = model(x)
                loss = F.cross_entropy(logits, y) + nn.CrossEntropyLoss()(logits, y)
                probs = torch.softmax(logits, dim=1)
                accuracy = (probs.argmax(1) == y).float().mean()
                return loss, accuracy
            """,
            note="logits into cross entropy; the softmax is for metrics only",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            def losses(z, y, t):
                a = F.nll_loss(F.log_softmax(z, dim=1), y)
                b = nn.NLLLoss()(torch.log_softmax(z, 1), y)
                c = nn.BCELoss()(torch.sigmoid(z[:, 0]), t)
                d = F.binary_cross_entropy(z.sigmoid()[:, 0], t)
                e = F.cross_entropy(F.log_softmax(z, 1), y)
                return a + b + c + d + e
            """,
            note="log-softmax into NLL, sigmoid into BCELoss; log-softmax into CE is idempotent",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)

                def forward(self, x):
                    z = self.fc(x)
                    if not self.training:
                        return torch.softmax(z, dim=1)
                    return z

            def train_step(x, y):
                model = Net()
                return F.cross_entropy(model(x), y)
            """,
            note="a forward that normalises only when not training",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F

            def step(z, y, w, calibrated):
                p = torch.softmax(z, 1)
                if calibrated:
                    p = z
                return F.cross_entropy(p * w, y)
            """,
            note="a scaled probability (on some paths only) is not a probability",
        ),
        Valid(
            """
            import torch.nn as nn

            class AdversarialNetwork(nn.Module):
              def __init__(self, in_feature, hidden_size):
                super(AdversarialNetwork, self).__init__()

                self.ad_layer1 = nn.Linear(in_feature, hidden_size)
                self.ad_layer2 = nn.Linear(hidden_size, hidden_size)
                self.ad_layer3 = nn.Linear(hidden_size, 1)

                self.relu1 = nn.ReLU()
                self.relu2 = nn.ReLU()

                self.dropout1 = nn.Dropout(0.5)
                self.dropout2 = nn.Dropout(0.5)

                self.sigmoid = nn.Sigmoid()

                self.iter_num = 0
                self.alpha = 10
                self.low = 0.0
                self.high = 1.0
                self.max_iter = 10000.0

              def forward(self, x):
                if self.training:
                    self.iter_num += 1
                x = x * 1.0
                x = self.ad_layer1(x)
                x = self.relu1(x)
                x = self.dropout1(x)
                x = self.ad_layer2(x)
                x = self.relu2(x)
                x = self.dropout2(x)
                y = self.ad_layer3(x)
                y = self.sigmoid(y)

                return y

              def output_num(self):
                return 1

              def get_parameters(self):
                return [{
                "params":self.parameters(), "lr_mult":10, 'decay_mult':2}]

            def domain_loss(features, labels):
                ad_net = AdversarialNetwork(256, 1024)
                return nn.BCELoss()(ad_net(features), labels)
            """,
            note="CDAN's discriminator ends in Sigmoid and feeds BCELoss: correct",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F

            def step(model, x, y, calibrate):
                out = model(x)
                if calibrate:
                    out = temperature_scale(out)
                return F.cross_entropy(out, y)
            """,
            note="one branch gives an unknown value, the other the model's: no probability",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def step(model, x, y, probs_out):
                out = model(x)
                if probs_out:
                    out = out.softmax(-1)
                return F.cross_entropy(out, y)
            """,
            line=9,
            severity=Severity.INFO,
            message_contains="if `out` is the softmax from line 8, it normalises twice",
            note="a softmax on one branch only (may): info, saying what it assumed, no fix",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def step(model, x, y):
                logits = model(x)
                probs = torch.softmax(logits, dim=1)
                return F.cross_entropy(probs, y)
            """,
            line=8,
            message_contains="`cross_entropy` applies log_softmax itself",
            fixed="""
            import torch
            import torch.nn.functional as F

            def step(model, x, y):
                logits = model(x)
                probs = logits
                return F.cross_entropy(probs, y)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.criterion = nn.CrossEntropyLoss()

                def validation_step(self, batch):
                    x, y = batch
                    y_hat = self(x)
                    y_hat = torch.softmax(y_hat, dim=1)
                    loss = self.criterion(y_hat, y)
                    self.log_metrics(y_hat, y)
                    return loss
            """,
            line=14,
            fix_title="Drop the softmax",
            note="a criterion on self (SciCo's double softmax); other uses: the fix is unsafe",
        ),
        Invalid(
            """
            import torch.nn.functional as F

            def nll(z, y):
                return F.nll_loss(F.softmax(z, dim=-1), y)
            """,
            line=5,
            message_contains="the loss is -p",
            fixed="""
            import torch.nn.functional as F

            def nll(z, y):
                return F.nll_loss(F.log_softmax(z, dim=-1), y)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            def bce(logits, target):
                criterion = nn.BCEWithLogitsLoss()
                return criterion(torch.sigmoid(logits), target)
            """,
            line=7,
            message_contains="applies sigmoid itself",
            fixed="""
            import torch
            import torch.nn as nn

            def bce(logits, target):
                criterion = nn.BCEWithLogitsLoss()
                return criterion(logits, target)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)
                    self.out = nn.Softmax(dim=1)

                def forward(self, x):
                    return self.out(self.fc(x))

            def train_step(x, y):
                model = Net()
                return F.cross_entropy(model(x), y)
            """,
            line=17,
            message_contains="given the model's softmax output",
            note="a model whose forward ends in Softmax: flagged, no fix",
        ),
    )


def _stored_name(call: ast.Call) -> str | None:
    """The name (or attribute) a constructor call is assigned to."""
    stmt = parent(call)
    while isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute):
        stmt = parent(stmt)  # nn.CrossEntropyLoss().cuda()
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) == 1:
            target = targets[0]
            if isinstance(target, ast.Name):
                return target.id
            if isinstance(target, ast.Attribute):
                return target.attr
    return None


def _input(call: ast.Call) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "input":
            return kw.value
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return None


def _stored(expr: ast.expr) -> ast.expr:
    """``expr`` as an assignment target (to compare with one)."""
    if isinstance(expr, ast.Name):
        return ast.Name(id=expr.id, ctx=ast.Store())
    return expr


def _assigned_to(origin: ast.Call, name: str) -> bool:
    stmt = parent(origin)
    return (
        isinstance(stmt, ast.Assign)
        and stmt.value is origin
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    )


def _uses(name: str, origin: ast.Call, exclude: ast.expr) -> int:
    """Loads of ``name`` in the function, other than ``exclude``."""
    function = enclosing_function(origin)
    if function is None:
        return 1
    return sum(
        1
        for node in walk_scope(function)
        if isinstance(node, ast.Name)
        and node.id == name
        and isinstance(node.ctx, ast.Load)
        and node is not exclude
    )
