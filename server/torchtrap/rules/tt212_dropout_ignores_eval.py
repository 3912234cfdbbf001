"""TT212: dropout inside an nn.Module that does not follow `model.eval()`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.index import ancestors, walk, walk_scope
from torchtrap.facts.intent import says
from torchtrap.facts.modules import call_argument, enclosing_method, inert_layer, self_name
from torchtrap.findings import Applicability, Edit, Finding, Fix, unsafe_title
from torchtrap.fixes.edits import add_keyword_argument
from torchtrap.fixes.names import ModuleNames
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.classes import is_module_class

Method = ast.FunctionDef | ast.AsyncFunctionDef

# torch.nn.functional dropouts and their `training` default.
FUNCTIONAL = {
    "dropout": True,
    "dropout1d": True,
    "dropout2d": True,
    "dropout3d": True,
    "alpha_dropout": False,
    "feature_alpha_dropout": False,
}
# nn layers and the function that does the same given `training`.
LAYERS = {
    "Dropout": "dropout",
    "Dropout1d": "dropout1d",
    "Dropout2d": "dropout2d",
    "Dropout3d": "dropout3d",
    "AlphaDropout": "alpha_dropout",
    "FeatureAlphaDropout": "feature_alpha_dropout",
}
_F = "torch.nn.functional."
# Monte-Carlo dropout, or dropout kept at inference, as the code says.
ON_PURPOSE = re.compile(
    r"(?i)(\bmc[_\s-]|mc_?dropout|\bmcd\b|monte[\s_-]?carlo|always (appl|on\b|active|drop)"
    r"|(at|during|in) (inference|test|eval)|test[- ]time)"
)
# Methods that only run in training mode (Lightning's hooks, by name).
_TRAINING_ONLY = ("training_step", "train_step", "on_train_")
_MC_NAME = re.compile(r"(?i)(^|_)mc($|_)|mcdropout|monte_?carlo")


class DropoutIgnoresEval(Rule):
    """Flags dropout in an `nn.Module` that keeps dropping after `model.eval()`.

    ## What it does
    Inside a method of an `nn.Module` subclass, flags:

    - `F.dropout(x, p)` (also `dropout1d/2d/3d`, through any import of
      `torch.nn.functional`) without `training=`: it drops in eval mode too;
    - `F.alpha_dropout` / `F.feature_alpha_dropout` without `training=`:
      their default is `training=False`, so they never drop, not even in training;
    - `training=True` where the same class's other dropout follows the
      mode (`training=self.training` elsewhere, or an `nn.Dropout` layer):
      the odd one out;
    - an `nn.Dropout(p)` built in a method other than `__init__` and applied
      there (`nn.Dropout(p)(x)`, or through a local name): a fresh module
      is in training mode whatever the parent's mode.

    Silent for `training=self.training` and any other non-literal value
    (derived from it, or the caller's), `training=False`, `p=0`, a call under
    an `if` that tests `.training`, an `nn.Dropout` built in `__init__` (or
    stored on `self`), a lone `training=True` (an explicit choice, as in
    Tacotron 2's prenet, which keeps dropout at inference), Monte-Carlo
    dropout or dropout kept at inference that the code names as such (a
    `mc_`/`mc_dropout`/`monte_carlo` name of the method or class, a comment or
    docstring such as "MC dropout" or "always applies dropout"), methods that
    only run in training (`training_step`, `train_step`, `on_train_*`), and
    functions outside a Module (they take `training` from their caller).

    ## Why is this bad?
    `model.eval()` sets `self.training = False` on every submodule, and
    `nn.Dropout` reads it; `F.dropout` reads only its `training` argument,
    which defaults to `True`. Measured with torch 2.13: a model that calls
    `F.dropout(h, 0.5)` in `forward` gives two different outputs for the
    same input after `model.eval()` (about half of the hidden units zeroed
    and the rest doubled each time), so validation scores are noisy and
    lower than the model's real accuracy, and predictions at inference are
    random. The same holds for an `nn.Dropout` created inside `forward`: it
    is not a registered submodule, so `eval()` never reaches it.

    Fixes (safe): add `training=self.training`; replace `nn.Dropout(p)(x)`
    with `F.dropout(x, p, training=self.training)`. For `alpha_dropout` the
    fix is unsafe: dropout then starts acting in training, which changes
    training results.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = F.dropout(h, p=0.5)
            return self.fc2(h)
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = F.dropout(h, p=0.5, training=self.training)
            return self.fc2(h)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html
    - https://github.com/pytorch/pytorch/issues/26338
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    """

    code = "TT212"
    name = "dropout-ignores-eval"
    summary = (
        "`F.dropout` without `training=self.training` (or a fresh `nn.Dropout`) drops in eval too"
    )
    fact = (
        "Measured with torch 2.13: after `model.eval()`, two passes over the same input differ "
        "when `forward` calls `F.dropout(h, 0.5)`."
    )
    requires_text = ("ropout",)

    def check(self) -> Iterable[Finding]:
        imports = self.ctx.facts.imports
        by_name = self.ctx.facts.calls_by_name
        names = set(FUNCTIONAL) | set(LAYERS)
        for qualname in (*(_F + f for f in FUNCTIONAL), *(f"torch.nn.{c}" for c in LAYERS)):
            names.update(imports.local_names_for(qualname))
        modules: dict[str, bool] = {}
        for call in (c for name in sorted(names) for c in by_name.get(name, ())):
            qualname = imports.qualname(call.func) or ""
            head, _, last = qualname.rpartition(".")
            if head == "torch.nn.functional" and last in FUNCTIONAL:
                kind = "functional"
            elif head == "torch.nn" and last in LAYERS:
                kind = "layer"
            else:
                continue
            found = enclosing_method(call)
            if found is None:
                continue
            method, cls = found
            me = self_name(method)
            info = self.ctx.facts.classes.get(cls.name)
            if me is None or info is None or info.node is not cls:
                continue
            if method.name.startswith(_TRAINING_ONLY):
                continue
            if kind == "functional":
                finding = self._functional(call, last, me, info)
            else:
                finding = self._layer(call, last, method, me)
            if finding is None or _guarded(call) or self._monte_carlo(call, method, cls):
                continue
            if cls.name not in modules:
                modules[cls.name] = is_module_class(
                    info, self.ctx.facts.classes, self.ctx.project, self.ctx.path
                )
            if modules[cls.name]:
                yield finding

    # -- F.dropout ------------------------------------------------------------------
    def _functional(self, call: ast.Call, name: str, me: str, info: ClassInfo) -> Finding | None:
        if _unpacked(call):
            return None
        p = call_argument(call, "p", 1)
        if isinstance(p, ast.Constant) and p.value in (0, 0.0):
            return None
        training = call_argument(call, "training", 2)
        spelled = self.ctx.source.segment(self.ctx.range(call.func))
        spelled = spelled if len(spelled) <= 16 else name
        fix = self._add_training(call, me, unsafe=not FUNCTIONAL[name])
        if training is None:
            if FUNCTIONAL[name]:
                message = (
                    f"`{spelled}` without `training={me}.training` keeps dropping after "
                    "`model.eval()`: evaluation is noisy"
                )
            else:
                message = (
                    f"`{spelled}` defaults to `training=False`: it never drops, not even in "
                    f"training; pass `training={me}.training`"
                )
            return self.finding(call, message, fixes=[fix])
        if not (isinstance(training, ast.Constant) and training.value is True):
            return None
        if not self._follows_mode_elsewhere(info, call):
            return None  # a lone `training=True`: an explicit choice
        message = (
            f"`training=True` keeps this dropout on after `model.eval()`, unlike the class's "
            f"other dropout; pass `{me}.training`"
        )
        return self.finding(training, message, fixes=[self._set_training(training, me)])

    def _follows_mode_elsewhere(self, info: ClassInfo, call: ast.Call) -> bool:
        imports = self.ctx.facts.imports
        for node in walk(info.node):
            if not isinstance(node, ast.Call) or node is call:
                continue
            qualname = imports.qualname(node.func) or ""
            head, _, last = qualname.rpartition(".")
            if head == "torch.nn" and last in LAYERS and not inert_layer(last, node):
                return True
            if head == "torch.nn.functional" and last in FUNCTIONAL:
                training = call_argument(node, "training", 2)
                if isinstance(training, ast.Attribute) and training.attr == "training":
                    return True
        return False

    def _add_training(self, call: ast.Call, me: str, *, unsafe: bool) -> Fix:
        source = self.ctx.source
        title = f"Pass `training={me}.training`"
        if unsafe:
            title = unsafe_title(title, "dropout starts acting in training, changing its results")
        return Fix(
            title,
            Applicability.UNSAFE if unsafe else Applicability.SAFE,
            build=lambda: [add_keyword_argument(source, call, "training", f"{me}.training")],
        )

    def _set_training(self, training: ast.expr, me: str) -> Fix:
        source = self.ctx.source
        return Fix(
            f"Pass `training={me}.training`",
            Applicability.SAFE,
            build=lambda: [Edit(source.node_range(training), f"{me}.training")],
        )

    # -- nn.Dropout built in a method -------------------------------------------------
    def _layer(self, call: ast.Call, name: str, method: Method, me: str) -> Finding | None:
        if method.name == "__init__" or inert_layer(name, call) or _unpacked(call):
            return None
        applied = _applied_now(call)
        if applied is None and not _applied_through_local(call, method):
            return None
        spelled = self.ctx.source.segment(self.ctx.range(call.func))
        message = (
            f"`{spelled}` built in `{method.name}` is always in training mode: it keeps "
            "dropping after `model.eval()`"
        )
        fixes = [self._functional_fix(call, applied, name, me)] if applied is not None else []
        return self.finding(call, message, fixes=fixes)

    def _functional_fix(self, layer: ast.Call, applied: ast.Call, name: str, me: str) -> Fix:
        source, ctx = self.ctx.source, self.ctx
        function = LAYERS[name]

        def build() -> list[Edit]:
            names = ModuleNames(source, ctx.tree, ctx.facts.index)
            ref = names.reference(_F + function) or f"torch.nn.functional.{function}"
            parts = [source.segment(source.node_range(applied.args[0]))]
            p = call_argument(layer, "p", 0)
            if p is not None:
                parts.append(source.segment(source.node_range(p)))
            parts.append(f"training={me}.training")
            inplace = call_argument(layer, "inplace", 1)
            if inplace is not None:
                parts.append(f"inplace={source.segment(source.node_range(inplace))}")
            text = f"{ref}({', '.join(parts)})"
            return [Edit(source.node_range(applied), text), *names.import_edits()]

        return Fix(
            f"Use `{function}(..., training={me}.training...)` from torch.nn.functional",
            Applicability.SAFE,
            build=build,
        )

    def _monte_carlo(self, call: ast.Call, method: Method, cls: ast.ClassDef) -> bool:
        if any(_MC_NAME.search(n) for n in (method.name, cls.name)):
            return True
        inner = [
            a for a in ancestors(call) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        if any(_MC_NAME.search(f.name) for f in inner):
            return True
        return says(
            self.ctx.source, ON_PURPOSE, node=call, before=2, documented=(*inner, method, cls)
        )

    valid = (
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    x = F.dropout(x, p=0.1, training=self.training)
                    x = F.dropout(x, 0.1, self.training)
                    x = F.dropout(x, 0.2, training=self.training and not self.frozen)
                    return self.drop(self.fc(x))
            """,
            note="follows the mode, also through a value derived from it; a layer built in init",
        ),
        Valid(
            """
            import torch.nn.functional as F

            def ffn(x, w, p, training):
                return F.dropout(x @ w, p, training=training)

            def augment(x):
                return F.dropout(x, 0.1)
            """,
            note="functions outside a Module take `training` from their caller",
        ),
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class BayesNet(nn.Module):
                def mc_forward(self, x):
                    return F.dropout(self.fc(x), 0.5)

                def forward(self, x):
                    # Monte Carlo dropout: sample at test time too
                    return F.dropout(self.fc(x), 0.5, training=True)

            class MCDropout(nn.Module):
                def forward(self, x):
                    return F.dropout(x, 0.5)

            class Head(nn.Module):
                def sample(self, x):
                    \"\"\"MC dropout: stochastic passes for uncertainty.\"\"\"
                    return nn.Dropout(0.3)(x)
            """,
            note="Monte-Carlo dropout the code names as such",
        ),
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Prenet(nn.Module):
                def forward(self, x):
                    for layer in self.layers:
                        x = F.dropout(layer(x), p=self.dropout)  # always applies dropout
                    return x

            class GAN(nn.Module):
                def training_step(self, batch, batch_idx):
                    def compute_loss():
                        return self.loss(F.dropout(self(batch[0]), 0.1))
                    return compute_loss()
            """,
            note="a comment that says so (fairseq's Tacotron 2); a hook that runs only in training",
        ),
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Prenet(nn.Module):
                def __init__(self, sizes):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in sizes])

                def forward(self, x):
                    for linear in self.layers:
                        x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
                    return x
            """,
            note="a lone explicit `training=True` (Tacotron 2's prenet keeps dropout at inference)",
        ),
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class FairseqDropout(nn.Module):
                def forward(self, x):
                    if self.p > 0 and (self.training or self.apply_during_inference):
                        return F.dropout(x, p=self.p, training=True)
                    return x

            class Net(nn.Module):
                def forward(self, x):
                    x = F.dropout(x, p=0.0)
                    x = F.dropout(x, 0.5, training=False)
                    return nn.Dropout(0)(x)
            """,
            note="under a test of `.training`; p=0; training=False",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def build(self, p):
                    self.drop = nn.Dropout(p)

                def forward(self, x):
                    return self.drop(x)

            class Stats:
                def forward(self, x):
                    return nn.Dropout(0.5)(x)
            """,
            note="a Dropout stored on self is registered; a class that is not a Module",
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
            """,
            note="CDAN's domain discriminator: Dropout layers built in __init__",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def forward(self, x):
                    h = F.relu(self.fc1(x))
                    h = F.dropout(h, p=0.5)
                    return self.fc2(h)
            """,
            line=8,
            message_contains="keeps dropping after `model.eval()`",
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def forward(self, x):
                    h = F.relu(self.fc1(x))
                    h = F.dropout(h, p=0.5, training=self.training)
                    return self.fc2(h)
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn import functional as fn

            class Block(torch.nn.Module):
                def forward(self, x):
                    x = fn.dropout2d(x, 0.2)
                    return torch.nn.functional.dropout3d(x)
            """,
            line=7,
            note="dropout2d/3d, other spellings of torch.nn.functional",
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.drop = nn.Dropout(0.1)

                def forward(self, x):
                    x = self.drop(x)
                    return F.dropout(x, 0.3, training=True)
            """,
            line=12,
            message_contains="unlike the class's other dropout",
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.drop = nn.Dropout(0.1)

                def forward(self, x):
                    x = self.drop(x)
                    return F.dropout(x, 0.3, training=self.training)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def forward(self, h):
                    return nn.Dropout(0.3, inplace=True)(h)
            """,
            line=6,
            message_contains="built in `forward` is always in training mode",
            fixed="""
            import torch.nn as nn

            class Net(nn.Module):
                def forward(self, h):
                    return nn.functional.dropout(h, 0.3, training=self.training, inplace=True)
            """,
        ),
        Invalid(
            """
            from torch import nn

            class Net(nn.Module):
                def forward(self, x):
                    drop = nn.Dropout(p=0.2)
                    return drop(x)
            """,
            line=6,
            note="applied through a local name: flagged, no fix",
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class SelfNormalising(nn.Module):
                def forward(self, x):
                    return F.alpha_dropout(self.fc(x), 0.1)
            """,
            line=7,
            message_contains="never drops, not even in training",
            note="alpha_dropout defaults to training=False",
        ),
    )


def _unpacked(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    )


def _guarded(call: ast.Call) -> bool:
    """Under an ``if``/conditional expression whose test reads ``.training``."""
    child: ast.AST = call
    for node in ancestors(call):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        if (
            isinstance(node, (ast.If, ast.IfExp, ast.While))
            and child is not node.test
            and any(
                (isinstance(n, ast.Attribute) and n.attr == "training")
                or (isinstance(n, ast.Name) and n.id == "training")
                for n in walk(node.test)
            )
        ):
            return True
        child = node
    return False


def _applied_now(layer: ast.Call) -> ast.Call | None:
    """``nn.Dropout(p)(x)``: the call that applies the fresh layer to one input."""
    outer = next(ancestors(layer), None)
    if (
        isinstance(outer, ast.Call)
        and outer.func is layer
        and len(outer.args) == 1
        and not outer.keywords
        and not isinstance(outer.args[0], ast.Starred)
    ):
        return outer
    return None


def _applied_through_local(layer: ast.Call, method: Method) -> bool:
    """``drop = nn.Dropout(p)`` then ``drop(x)`` in the same method, the name
    never stored elsewhere."""
    stmt = next(ancestors(layer), None)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is layer
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return False
    name = stmt.targets[0].id
    called = False
    for node in _names_in(method):
        if node.id != name or node is stmt.targets[0]:
            continue
        parent_node = next(ancestors(node), None)
        if isinstance(parent_node, ast.Call) and parent_node.func is node:
            called = True
        else:
            return False  # stored, passed or returned: not ours to judge
    return called


def _names_in(method: Method) -> Iterator[ast.Name]:
    for node in walk_scope(method):
        if isinstance(node, ast.Name):
            yield node
