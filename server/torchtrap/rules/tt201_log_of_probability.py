"""TT201: the log of a softmax or sigmoid output, with no guard."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable

from torchtrap.facts.index import enclosing_function
from torchtrap.facts.remote import remote_where
from torchtrap.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Position,
    Range,
    Severity,
    line_text,
    unsafe_title,
)
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Probability
from torchtrap.values.assumptions import Assumption, probability_assumption
from torchtrap.values.program import Model, module_model
from torchtrap.values.program_values import ProgramProbability, program_probability, value_path

# The clamp bound for the fallback fix. Measured (tests/test_numerics_facts.py):
# 1e-4 is nonzero in float16, bfloat16 and float32, its log is finite, and the
# gradient of log at the bound (1/1e-4 = 1e4) stays finite in float16 (max
# 65504). 1e-5 overflows that gradient in float16 (inf); 1e-8 rounds to 0 in
# float16 (log -inf); torch.finfo(dtype).tiny leaves a gradient of 8.5e37
# in float32 that overflows after a factor of 4.
CLAMP_MIN = "1e-4"

SOFTMAX_FUNCTIONS = {
    "torch.softmax": "torch.log_softmax",
    "torch.nn.functional.softmax": "torch.nn.functional.log_softmax",
    "torch.special.softmax": "torch.special.log_softmax",
}
LOG_FUNCTIONS = frozenset({"torch.log", "torch.log2", "torch.log10"})
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _changed_in_place(arg: ast.expr, scope: ast.AST) -> bool:
    """The argument's variable is modified in place somewhere in its
    function: an in-place method (``p.clamp_``), ``p += eps``, ``out=p``,
    ``p[...] = ...``."""
    name = _root_name(arg)
    if name is None:
        return False
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr.endswith("_")
                and _root_name(func.value) == name
            ):
                return True
            if any(k.arg == "out" and _root_name(k.value) == name for k in node.keywords):
                return True
        elif _writes_into(node, name):
            return True
    return False


def _writes_into(node: ast.AST, name: str) -> bool:
    """``name += ...`` or ``name[...] = ...``."""
    if isinstance(node, ast.AugAssign):
        return _root_name(node.target) == name
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Subscript) and _root_name(t) == name for t in node.targets
    )


class LogOfProbability(Rule):
    """Flags `torch.log` of a softmax or sigmoid output that is not guarded.

    ## What it does
    Flags `torch.log(p)`, `p.log()` (also `log2`/`log10`) where `p` is the
    output of a softmax or sigmoid: `torch.softmax`, `F.softmax`,
    `torch.special.softmax`, `x.softmax(dim)`, `torch.sigmoid`, `F.sigmoid`,
    `torch.special.expit`, `x.sigmoid()`, an `nn.Softmax`/`nn.Sigmoid`
    instance (also as the last layer of an `nn.Sequential`), a selection of
    one (`p[:, 0]`, `p.gather(...)`), `1 - p`, or a local name assigned one
    of these in the same function.

    It stays silent when the value is guarded: `p.clamp(min=...)`,
    `torch.clamp`, `clamp_min`, `p + eps`, `torch.maximum(p, eps)`, an
    in-place `p.clamp_(...)` or `p = p.clamp(...)` before the log, and on
    `log_softmax`/`logsigmoid`, which need no guard.

    In an evaluation (under `torch.no_grad()`, a beam search, or after
    `model.eval()` in a function with no backward) the message says the
    `-inf` lands in the metric or score instead: there is no gradient there.

    A value that is such a probability on some paths only (one branch of
    an `if`, some of a function's callers) is reported at info severity,
    saying what it assumed ("if `p` is the softmax from line 7"), with the
    clamp fix only; a value unknown on every path stays silent.

    `torchtrap run` reports the first loss that is `inf` or NaN at
    `backward()`, on the line of the `log` that made it, with how many of
    the softmax output's values were zero; it finds the softmax wherever it
    is made, also in another file.

    ## Why is this bad?
    A probability that underflows to exactly 0 makes the log `-inf` and the
    gradient NaN, which then spreads into every weight. In float32,
    `torch.log(torch.softmax(x, -1))` with `x = [0, 100, 200]` gives
    `[-inf, -99.98, 0]` and a gradient of `[nan, nan, nan]`; with logits
    `[[0, 120]]` and target 0 the loss is `inf` while `cross_entropy` gives
    120.0. `sigmoid(x)` is exactly 0 for `x < -88.7` and `1 - sigmoid(x)`
    for `x > 16.6`. `log_softmax` and `logsigmoid` compute the same values
    without forming the probability: `[-200, -100, 0]`, finite gradient.

    Fixes: when the argument is literally the softmax (with its `dim`) or
    sigmoid call, the safe fix rewrites it to `log_softmax(x, dim)`,
    `F.logsigmoid(x)`, or `F.logsigmoid(-x)` for `log(1 - sigmoid(x))`.
    Otherwise the (unsafe) fix clamps the argument with `.clamp(min=1e-4)`:
    1e-4 is the smallest power of ten whose log and log-gradient (1e4) stay
    finite in float16, bfloat16 and float32 alike. It changes the loss for
    probabilities below 1e-4 (their gradient becomes 0): review the bound.

    ## Example
    ```python
    probs = F.softmax(logits, dim=-1)
    loss = -(target * torch.log(probs)).sum(-1).mean()
    ```

    ## Use instead
    ```python
    loss = -(target * F.log_softmax(logits, dim=-1)).sum(-1).mean()
    ```

    ## References
    - [torch.nn.Softmax: "use LogSoftmax instead (it's faster and has better numerical properties)"](https://pytorch.org/docs/stable/generated/torch.nn.Softmax.html)
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.logsigmoid.html
    """

    code = "TT201"
    name = "log-of-probability"
    summary = "`torch.log` of a softmax/sigmoid output: -inf and NaN gradients on underflow"
    fact = (
        "Measured in float32: logits [0, 120] with target 0 give loss inf and gradient "
        "NaN through log(softmax); `cross_entropy` gives 120.0."
    )
    requires_text = ("log",)

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.index.of(ast.Call):
            found = self._log_argument(call)
            if found is None:
                continue
            arg, base, method_form = found
            value = self.ctx.values.of(arg, call)
            prob = value.bare_probability()
            if prob is not None:
                yield self._finding(call, arg, base, method_form, prob)
                continue
            maybe = value.probability
            if maybe is None:
                program = self._program_probability(arg)
                if program is not None:
                    yield self._program_finding(call, arg, base, method_form, *program)
                continue
            if maybe.guarded or maybe.scaled:
                continue
            assumption = probability_assumption(value, maybe, self.ctx.path)
            if assumption is not None:
                yield self._may_finding(call, arg, base, method_form, maybe, assumption)

    # -- detection ------------------------------------------------------------
    def _program_probability(self, arg: ast.expr) -> tuple[ProgramProbability, Model] | None:
        """What the whole-program model says ``arg`` holds, when the
        module's own values cannot say: a module whose ``forward`` (in
        another file, through a factory) ends in a softmax, ``self.pi(s)``."""
        if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            return None
        scope = enclosing_function(arg) or self.ctx.tree
        if _changed_in_place(arg, scope):
            return None  # p.clamp_(...), p += eps, out=p: the module's values judge those
        ctx = self.ctx
        model = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
        found = program_probability(model, arg) if model is not None else None
        if found is None or model is None:
            return None
        # Computed in this function too (`p = pick(F.softmax(x))`): the
        # module's values said nothing, so the model's every-path answer stands.
        return found, model

    def _program_finding(
        self,
        call: ast.Call,
        arg: ast.expr,
        base: str,
        method_form: bool,
        prob: ProgramProbability,
        model: Model,
    ) -> Finding:
        log_text = f"`.{base}()`" if method_form else f"`{self._short(call.func)}`"
        ctx = self.ctx
        where = model.where(prob.made.module, prob.made.line, prob.made.col)
        made = "normalisation" if prob.kind == "normalised" else prob.kind
        related = value_path(model, prob.made, f"the {made} is computed here", ctx.path, call)
        shown = ""
        if where is not None:
            path, rng = where
            shown = f" ({os.path.basename(path)}:{rng.start.line})"
        then = self._then(call)
        noun = "output"
        if prob.kind == "softmax":
            consequence = f"{then} once one class takes all the mass"
        elif prob.kind == "normalised":
            noun, consequence = "probability", f"{then} when a probability underflows"
        else:
            consequence = f"{then} for saturated inputs"
        message = f"{log_text} of a {prob.kind} {noun}{shown}: {consequence}"
        return self.finding(
            call, message, fixes=[self._clamp_fix(call, arg, method_form)], related=related
        )

    def _log_argument(self, call: ast.Call) -> tuple[ast.expr, str, bool] | None:
        """(argument, "log"/"log2"/"log10", method form?) of a torch log call."""
        func = call.func
        if isinstance(func, ast.Attribute):
            base = func.attr
        elif isinstance(func, ast.Name):
            base = func.id
        else:
            return None
        if base not in ("log", "log2", "log10"):
            return None
        qualname = self.ctx.facts.imports.qualname(func)
        if qualname is not None:
            if qualname not in LOG_FUNCTIONS or len(call.args) != 1 or call.keywords:
                return None
            if isinstance(call.args[0], ast.Starred):
                return None
            return call.args[0], base, False
        if isinstance(func, ast.Attribute) and not call.args and not call.keywords:
            return func.value, base, True
        return None

    # -- finding and fixes ----------------------------------------------------
    def _finding(
        self, call: ast.Call, arg: ast.expr, base: str, method_form: bool, prob: Probability
    ) -> Finding:
        log_text = f"`.{base}()`" if method_form else f"`{self._short(call.func)}`"
        noun = "probability" if prob.kind == "normalised" else "output"
        what = f"1 - {prob.kind}" if prob.complement else f"a {prob.kind} {noun}"
        line_refs = []
        where = remote_where(prob.origin, self.ctx.path)
        if where is not None and prob.passed and prob.via is not None:
            what += f" passed at {where} (via `{prob.via}`)"
        elif where is not None:
            what += f" ({where})"
        elif prob.via is not None:
            what += f" from {line_text(prob.origin.lineno)} (via `{prob.via}`)"
            line_refs.append(prob.origin.lineno)
        fix = self._rewrite_fix(call, arg, base, method_form, prob)
        if fix is None:
            fix = self._clamp_fix(call, arg, method_form)
        message = f"{log_text} of {what}: {self._consequence(prob, call)}"
        related = []
        made = "normalisation" if prob.kind == "normalised" else prob.kind
        if where is not None:
            related.append(self.ctx.related(prob.origin, f"the {made} comes from here"))
        elif not prob.direct and prob.origin.lineno != call.lineno:
            related.append(self.ctx.related(prob.origin, f"the {made} is computed here"))
        return self.finding(call, message, fixes=[fix], related=related, line_refs=line_refs)

    def _may_finding(
        self,
        call: ast.Call,
        arg: ast.expr,
        base: str,
        method_form: bool,
        prob: Probability,
        assumption: Assumption,
    ) -> Finding:
        """A probability on some paths only (one branch, some callers): the
        path that gives it underflows the same way; said as an assumption,
        at a lower severity, with the clamp fix (the value may be something
        else on the other paths, so no rewrite to log-space)."""
        log_text = f"`.{base}()`" if method_form else f"`{self._short(call.func)}`"
        what = "1 minus a probability" if prob.complement else "a probability"
        message = f"{log_text} of {what} {assumption.phrase}: {self._consequence(prob, call)}"
        fix = self._clamp_fix(call, arg, method_form)
        return self.finding(call, message, fixes=[fix], assumption=assumption)

    def _then(self, call: ast.Call) -> str:
        # In an evaluation (no_grad, or after `model.eval()` with no backward)
        # there is no gradient to poison: the metric computed from the log is
        # what goes wrong.
        if self.ctx.values.autograd.evaluating(call):
            return "-inf in the metric or score"
        return "-inf and a NaN gradient"

    def _consequence(self, prob: Probability, call: ast.Call) -> str:
        then = self._then(call)
        if prob.kind == "sigmoid" and prob.complement:
            return f"{then} for x > 16.6 (float32)"
        if prob.kind == "sigmoid":
            return f"{then} for x < -88.7 (float32)"
        if prob.complement:
            return f"{then} once one class takes all the mass"
        return f"{then} when a probability underflows"

    def _rewrite_fix(
        self, call: ast.Call, arg: ast.expr, base: str, method_form: bool, prob: Probability
    ) -> Fix | None:
        if not prob.direct or prob.module or base != "log" or not isinstance(prob.origin, ast.Call):
            return None
        if prob.kind == "softmax" and not prob.complement:
            return self._log_softmax_fix(call, arg, method_form, prob.origin)
        if prob.kind == "sigmoid":
            return self._logsigmoid_fix(call, prob)
        return None

    def _log_softmax_fix(
        self, call: ast.Call, arg: ast.expr, method_form: bool, softmax: ast.Call
    ) -> Fix | None:
        func = softmax.func
        if any(isinstance(a, ast.Starred) for a in softmax.args) or any(
            kw.arg is None for kw in softmax.keywords
        ):
            return None
        qualname = self.ctx.facts.imports.qualname(func)
        positional_dim = 2 if qualname is not None else 1  # torch.softmax(x, dim) / x.softmax(dim)
        if len(softmax.args) < positional_dim and not any(
            kw.arg == "dim" for kw in softmax.keywords
        ):
            return None  # implicit dim (deprecated): don't guess it
        source = self.ctx.source
        rename: Edit
        if isinstance(func, ast.Attribute):
            attr_start = source.position(
                func.end_lineno or func.lineno, (func.end_col_offset or 0) - len("softmax")
            )
            rename = edits.insert_at(attr_start, "log_")
        elif isinstance(func, ast.Name) and qualname is not None:
            spelled = self._spell(SOFTMAX_FUNCTIONS[qualname])
            if spelled is None:
                return None
            rename = edits.replace(source, func, spelled)
        else:
            return None
        unwrap = self._unwrap_edits(call, arg, method_form)
        if unwrap is None or self._drops_comment(unwrap):
            return None
        return Fix(
            "Use `log_softmax` instead of log(softmax)",
            Applicability.SAFE,
            build=lambda: [*unwrap, rename],
        )

    def _logsigmoid_fix(self, call: ast.Call, prob: Probability) -> Fix | None:
        sigmoid = prob.origin
        if not isinstance(sigmoid, ast.Call):
            return None
        if (
            isinstance(sigmoid.func, ast.Attribute)
            and self.ctx.facts.imports.qualname(sigmoid.func) is None
        ):
            inner = sigmoid.func.value  # x.sigmoid()
        elif len(sigmoid.args) == 1 and not sigmoid.keywords:
            inner = sigmoid.args[0]
            if isinstance(inner, ast.Starred):
                return None
        else:
            return None
        functional = self._spell("torch.nn.functional")
        if functional is None or self._drops_comment(self._outside(call, inner)):
            return None
        source = self.ctx.source
        text = source.segment(source.node_range(inner))
        if prob.complement:
            simple = isinstance(inner, _ATOMIC) or (
                isinstance(inner, ast.Constant) and not str(inner.value).startswith("-")
            )
            text = f"-{text}" if simple else f"-({text})"
        new_text = f"{functional}.logsigmoid({text})"
        # The title quotes what the fix writes (tests/test_fix_titles.py).
        if prob.complement:
            title = (
                f"Use `{new_text}` for log(1 - sigmoid)"
                if len(new_text) <= 48 and "\n" not in new_text
                else f"Use `{functional}.logsigmoid(-...)` for log(1 - sigmoid)"
            )
        else:
            title = f"Use `{functional}.logsigmoid` instead of log(sigmoid)"
        return Fix(title, Applicability.SAFE, build=lambda: [edits.replace(source, call, new_text)])

    def _clamp_fix(self, call: ast.Call, arg: ast.expr, method_form: bool) -> Fix:
        source = self.ctx.source
        clamp = f".clamp(min={CLAMP_MIN})"

        def build() -> list[Edit]:
            if method_form:
                dot = self._dot_before_attribute(call)
                if dot is None:
                    return []
                return [edits.insert_at(dot, clamp)]
            rng = source.node_range(arg)
            if isinstance(arg, _ATOMIC):
                return [edits.insert_at(rng.end, clamp)]
            return [edits.insert_at(rng.start, "("), edits.insert_at(rng.end, ")" + clamp)]

        return Fix(
            unsafe_title(
                f"Clamp the probabilities before the log (`{clamp[1:]}`)",
                f"changes the loss where a probability is below {CLAMP_MIN}",
            ),
            Applicability.UNSAFE,
            build=build,
        )

    # -- helpers ----------------------------------------------------------------
    def _spell(self, qualname: str) -> str | None:
        """How this module can name ``qualname``: through the longest imported
        prefix (``F`` for torch.nn.functional, ``th`` for torch); None when
        nothing on the way is imported."""
        imports = self.ctx.facts.imports
        parts = qualname.split(".")
        for cut in range(len(parts), 0, -1):
            local = sorted(imports.local_names_for(".".join(parts[:cut])))
            if local:
                return ".".join([local[0], *parts[cut:]])
        return None

    def _short(self, func: ast.expr) -> str:
        text = self.ctx.source.segment(self.ctx.range(func))
        return text if len(text) <= 24 and "\n" not in text else "log"

    def _unwrap_edits(self, call: ast.Call, arg: ast.expr, method_form: bool) -> list[Edit] | None:
        """Edits that remove ``torch.log(`` ... ``)`` or ``.log()`` around ``arg``."""
        source = self.ctx.source
        whole = source.node_range(call)
        if method_form:
            dot = self._dot_before_attribute(call)
            if dot is None:
                return None
            return [Edit(Range(dot, whole.end), "")]
        inner = source.node_range(arg)
        return [Edit(Range(whole.start, inner.start), ""), Edit(Range(inner.end, whole.end), "")]

    def _outside(self, call: ast.Call, kept: ast.AST) -> list[Edit]:
        """Edits deleting everything of ``call`` but ``kept``."""
        whole, inner = self.ctx.range(call), self.ctx.range(kept)
        return [Edit(Range(whole.start, inner.start), ""), Edit(Range(inner.end, whole.end), "")]

    def _drops_comment(self, deletions: list[Edit]) -> bool:
        """A rewrite whose deleted text holds a comment is not offered (the
        clamp fix, which deletes nothing, is)."""
        return any("#" in self.ctx.source.segment(edit.range) for edit in deletions)

    def _dot_before_attribute(self, call: ast.Call) -> Position | None:
        """The position of the ``.`` in ``receiver.log()``."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        source = self.ctx.source
        receiver_end = source.node_range(func.value).end
        attr_start = source.position(
            func.end_lineno or func.lineno, (func.end_col_offset or 0) - len(func.attr)
        )
        start, end = source.offset(receiver_end), source.offset(attr_start)
        dot = source.text.rfind(".", start, end)
        if dot < 0:
            return None
        return source.position_at(dot)

    # -- examples -----------------------------------------------------------------
    valid = (
        Valid(
            """
            import torch

            def safe_probs(z):
                return torch.sigmoid(z).clamp(1e-6, 1 - 1e-6)

            def score(z):
                return torch.log(safe_probs(z))
            """,
            note="the helper clamps what it returns",
        ),
        Valid(
            """
            import torch

            def nll(p, y):
                return -(y * torch.log(p)).mean()

            loss = nll(torch.sigmoid(z).clamp(1e-6, 1), y)
            """,
            note="the call site passes a clamped probability",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 1)

                def forward(self, x):
                    return self.fc(x)

            net = Net()
            out = torch.log(net(x))
            """,
            note="a module class that ends in a Linear layer (logits, not probabilities)",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F

            def loss(logits, target):
                a = torch.log_softmax(logits, -1)
                b = F.log_softmax(logits, dim=1)
                c = F.logsigmoid(logits)
                d = logits.log_softmax(-1)
                return a + b + c + d
            """,
            note="already log-space",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F

            def loss(logits, eps=1e-8):
                p = F.softmax(logits, dim=-1)
                a = torch.log(p + eps)
                b = torch.log(p + 1e-8)
                c = p.clamp(min=1e-6).log()
                d = torch.log(torch.clamp(p, min=1e-6))
                e = p.clamp_min(1e-6).log()
                f = torch.log(torch.maximum(p, torch.tensor(1e-6)))
                g = torch.log(torch.sigmoid(logits) + eps)
                h = torch.log(1 + torch.sigmoid(logits))
                return a + b + c + d + e + f + g + h
            """,
            note="guarded arguments",
        ),
        Valid(
            """
            import torch

            def loss(logits):
                p = torch.softmax(logits, -1)
                p = p.clamp(min=1e-7)
                return -torch.log(p).mean()
            """,
            note="reassigned through a clamp",
        ),
        Valid(
            """
            import torch

            def loss(logits):
                p = torch.softmax(logits, -1)
                p.clamp_(min=1e-7)
                q = torch.sigmoid(logits)
                torch.clamp(q, min=1e-7, out=q)
                r = torch.sigmoid(logits)
                r += 1e-7
                return torch.log(p) + torch.log(q) + r.log()
            """,
            note="guarded in place before the log",
        ),
        Valid(
            """
            import torch

            def entropy(probs):
                return -(probs * torch.log(probs)).sum(-1)

            def other(x):
                probs = torch.softmax(x, -1)
                return probs
            """,
            note="a parameter: no evidence it is a softmax",
        ),
        Valid(
            """
            import math
            import numpy as np
            import torch
            from scipy.special import softmax

            def f(x, t):
                p = torch.softmax(t, -1)
                a = np.log(softmax(x))
                b = math.log(float(p[0]))
                return a, b
            """,
            note="numpy/math logs are not torch's",
        ),
        Valid(
            """
            import torch
            import pytorch_lightning as pl

            class Model(pl.LightningModule):
                def validation_step(self, batch, idx):
                    p = torch.softmax(self(batch), -1)
                    self.log("val_p", p.max())
                    self.logger.log(p)
            """,
            note="logging calls, not logarithms",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F

            def loss(logits, use_softmax, probs0):
                if use_softmax:
                    p = F.softmax(logits, dim=1).clamp(min=1e-6)
                else:
                    p = probs0
                return torch.log(p)
            """,
            note="one branch gives a clamped softmax, the other an unknown value",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.act = nn.LogSoftmax(dim=1)
                    self.soft = nn.Softmax(dim=1)

                def forward(self, x):
                    logp = self.act(x)
                    p = self.soft(x).clamp(min=1e-6)
                    return logp, torch.log(p)
            """,
            note="nn.LogSoftmax, and a clamped module output",
        ),
        Valid(
            """
            import torch

            def f(x):
                p = torch.softmax(x, -1) * 0.98 + 0.01
                return torch.log(p), torch.log(x.exp())
            """,
            note="smoothed probabilities",
        ),
        Valid(
            """
            import torch
            import torch.distributions as D

            def f(logits, x):
                dist = D.Categorical(logits=logits)
                lp = dist.log_prob(x)
                probs = dist.probs
                return lp, torch.log(probs.sum(-1)), torch.log(x.softmax(-1).sum())
            """,
            note="distributions, sums of probabilities",
        ),
        Valid(
            """
            import torch

            def nll(p, y):
                return -(y * torch.log(p)).mean()

            a = nll(make_probs(z), y)
            b = nll(torch.sigmoid(z).clamp(1e-6, 1), y)
            """,
            note="callers disagree, but none passes an unguarded probability",
        ),
        Valid(
            """
            import torch

            def f(x, mask):
                p = torch.softmax(x, 1)
                scaled = p * mask
                total = p.sum(1)
                q = torch.cat([p, x], 1)
                return torch.log(scaled), torch.log(total), torch.log(q)
            """,
            note="a product is not a probability until summed; sums over p are 1; "
            "a cat with an unknown part",
        ),
        Valid(
            """
            import torch

            def f(y, w):
                a = torch.log(y / y.sum())
                b = torch.log(y / w.sum(1, keepdim=True))
                return a, b
            """,
            note="normalisation needs the same tensor over its own keepdim sum",
        ),
        Valid(
            """
            import torch
            import torch.distributions as D

            def entropy(p, z):
                given = D.Categorical(probs=p.clamp(min=1e-4))
                return torch.log(given.probs).sum() + torch.log(D.Normal(z, 1.0).mean)
            """,
            note="built from `probs=` (what the caller passed), another attribute",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def loss(logits, use_softmax, probs0):
                if use_softmax:
                    p = F.softmax(logits, dim=1)
                else:
                    p = probs0.clamp(min=1e-6)
                return torch.log(p)
            """,
            line=10,
            severity=Severity.INFO,
            message_contains="if `p` is the softmax from line 7",
            fixed="""
            import torch
            import torch.nn.functional as F

            def loss(logits, use_softmax, probs0):
                if use_softmax:
                    p = F.softmax(logits, dim=1)
                else:
                    p = probs0.clamp(min=1e-6)
                return torch.log(p.clamp(min=1e-4))
            """,
            note="a softmax on one branch only (may): info, saying what it assumed",
        ),
        Invalid(
            """
            import torch

            def nll(p, y):
                return -(y * torch.log(p)).mean()

            a = nll(torch.sigmoid(z), y)
            b = nll(make_probs(z), y)
            """,
            line=5,
            severity=Severity.INFO,
            message_contains="if `p` is the sigmoid passed at line 7",
            note="callers disagree: one passes a sigmoid, one an unknown value (may)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class FocalLoss(nn.Module):
                def __init__(self, class_num):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, pred, class_mask):
                    prob = self.softmax(pred)
                    prob.clamp(min=0.0001, max=1.0)
                    probs = (prob * class_mask).sum(1).view(-1, 1)
                    log_p = probs.log()
                    return -log_p.mean()
            """,
            line=14,
            note="seed 003: a one-hot product summed over classes is still a probability",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Disc(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

                def forward(self, img):
                    validity = self.model(img)
                    return validity

            def boundary_loss(y_pred):
                return torch.mean((torch.log(y_pred) - torch.log(1 - y_pred)) ** 2)

            disc = Disc()
            loss = boundary_loss(disc(x))
            """,
            line=15,
            message_contains="passed at line 18 (via `y_pred`)",
            note="a module-level instance whose forward returns a local name",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            def f(x, q):
                sm = nn.Softmax(1).cuda()
                p = sm(x)
                pq = torch.cat((p, torch.softmax(q, 1)), 0)
                return torch.log(pq)
            """,
            line=9,
            note="nn.Softmax(1).cuda() keeps the module; cat of probabilities",
        ),
        Invalid(
            """
            import torch
            from torch.distributions import Categorical

            def f(z, y):
                probs = Categorical(logits=z).probs
                n = y / y.sum(1, keepdim=True)
                return torch.log(probs) + torch.log(n)
            """,
            line=8,
            note="Categorical(logits=z).probs; y / y.sum(1, keepdim=True)",
        ),
        Invalid(
            """
            import torch
            import torch.distributions as D

            def entropy(logits, z):
                dist = D.Bernoulli(logits=z)
                h = -(dist.probs * dist.probs.log()).sum()
                return h + torch.log(D.Categorical(logits=logits).probs).mean()
            """,
            line=7,
            note="a distribution built from logits: `.probs` is their sigmoid/softmax",
        ),
        Invalid(
            """
            import torch

            def probs(z):
                return torch.sigmoid(z)

            def score(z):
                return torch.log(probs(z))
            """,
            line=8,
            message_contains="a sigmoid output (line 4)",
            note="a project function whose every return is a sigmoid",
        ),
        Invalid(
            """
            import torch

            def bce(y_pred, y):
                return -(y * torch.log(y_pred)).mean()

            loss = bce(torch.sigmoid(z), y)
            """,
            line=5,
            message_contains="passed at line 7 (via `y_pred`)",
            note="a call site passes a sigmoid to the parameter",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Discriminator(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

                def forward(self, x):
                    return self.body(x)

            disc = Discriminator()
            out = torch.log(disc(x))
            """,
            line=14,
            note="a module class whose forward ends in nn.Sigmoid",
        ),
        Invalid(
            """
            import torch

            def nll(x, target):
                return -torch.log(torch.softmax(x, -1))[0, target]
            """,
            line=5,
            message_contains="when a probability underflows",
            fixed="""
            import torch

            def nll(x, target):
                return -torch.log_softmax(x, -1)[0, target]
            """,
        ),
        Invalid(
            """
            import torch.nn.functional as F

            def nll(logits):
                return F.softmax(logits, dim=1).log()
            """,
            fixed="""
            import torch.nn.functional as F

            def nll(logits):
                return F.log_softmax(logits, dim=1)
            """,
        ),
        Invalid(
            """
            from torch.nn import functional as fn

            logp = fn.softmax(logits, 1, dtype=None).log()
            """,
            fixed="""
            from torch.nn import functional as fn

            logp = fn.log_softmax(logits, 1, dtype=None)
            """,
        ),
        Invalid(
            """
            logq = (logits.softmax(-1)).log()
            """,
            fixed="""
            logq = (logits.log_softmax(-1))
            """,
        ),
        Invalid(
            """
            logr = logits.float().softmax(dim=-1).log()
            """,
            fixed="""
            logr = logits.float().log_softmax(dim=-1)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            loss = -torch.log(F.softmax(logits))
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            loss = -torch.log(F.softmax(logits).clamp(min=1e-4))
            """,
            note="implicit dim: clamp instead of guessing the dim",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def loss(logits, target):
                probs = F.softmax(logits, dim=-1)
                return -(target * torch.log(probs)).sum(-1).mean()
            """,
            line=7,
            message_contains="from line 6 (via `probs`)",
            fixed="""
            import torch
            import torch.nn.functional as F

            def loss(logits, target):
                probs = F.softmax(logits, dim=-1)
                return -(target * torch.log(probs.clamp(min=1e-4))).sum(-1).mean()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def bce(z, y):
                pos = y * torch.log(torch.sigmoid(z))
                return -(pos + (1 - y) * torch.log(1 - torch.sigmoid(z)))
            """,
            note="BCE by hand: two findings; the fix-all test applies both",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            neg = torch.log(1 - torch.sigmoid(z))
            """,
            message_contains="x > 16.6",
            fixed="""
            import torch
            import torch.nn.functional as F

            neg = F.logsigmoid(-z)
            """,
        ),
        Invalid(
            """
            import torch

            out = torch.log(1.0 - torch.sigmoid(a + b))
            """,
            fixed="""
            import torch

            out = torch.nn.functional.logsigmoid(-(a + b))
            """,
        ),
        Invalid(
            """
            import torch

            out = torch.log(torch.special.expit(c)) + x.sigmoid().log()
            """,
            message_contains="x < -88.7",
            fixed="""
            import torch

            out = torch.nn.functional.logsigmoid(c) + x.sigmoid().log()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class FocalLoss(nn.Module):
                def __init__(self, class_num):
                    super().__init__()
                    self.class_num = class_num
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, pred, target):
                    prob = self.softmax(pred.view(-1, self.class_num))
                    prob.clamp(min=0.0001, max=1.0)
                    log_p = prob.log()
                    return -log_p.gather(1, target.view(-1, 1)).mean()
            """,
            line=14,
            fixed="""
            import torch
            import torch.nn as nn

            class FocalLoss(nn.Module):
                def __init__(self, class_num):
                    super().__init__()
                    self.class_num = class_num
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, pred, target):
                    prob = self.softmax(pred.view(-1, self.class_num))
                    prob.clamp(min=0.0001, max=1.0)
                    log_p = prob.clamp(min=1e-4).log()
                    return -log_p.gather(1, target.view(-1, 1)).mean()
            """,
            note="the clamp's result is thrown away, so the log is unguarded",
        ),
        Invalid(
            """
            from torch import log, softmax

            y = log(softmax(x, 1))
            """,
            fixed="""
            from torch import log, softmax

            y = log(softmax(x, 1).clamp(min=1e-4))
            """,
            note="log_softmax is not imported and torch is not bound: clamp",
        ),
        Invalid(
            """
            import torch
            from torch import log, softmax

            y = log(softmax(x, 1))
            """,
            fixed="""
            import torch
            from torch import log, softmax

            y = torch.log_softmax(x, 1)
            """,
        ),
        Invalid(
            """
            import torch

            def entropy(logits):
                p = logits.softmax(-1)
                return -(p * torch.log(p)).sum(-1)
            """,
            line=6,
        ),
        Invalid(
            """
            import torch

            bits = torch.log2(torch.softmax(x, -1))
            """,
            fixed="""
            import torch

            bits = torch.log2(torch.softmax(x, -1).clamp(min=1e-4))
            """,
        ),
        Invalid(
            """
            import torch

            log_p = torch.log(
                torch.softmax(logits,  # raw scores, not probabilities
                              dim=-1)
            )
            """,
            fixed="""
            import torch

            log_p = torch.log_softmax(logits,  # raw scores, not probabilities
                              dim=-1)
            """,
            note="a comment inside the kept softmax call survives the rewrite",
        ),
        Invalid(
            """
            import torch

            log_p = torch.log(
                torch.softmax(logits, dim=-1)  # probabilities
            )
            """,
            fixed="""
            import torch

            log_p = torch.log(
                torch.softmax(logits, dim=-1).clamp(min=1e-4)  # probabilities
            )
            """,
            note="the rewrite would delete the comment: only the clamp is offered",
        ),
        Invalid(
            """
            import torch

            def focal(logits, target):
                p = torch.softmax(logits, dim=1)
                pt = p.gather(1, target[:, None]).squeeze(1)
                return -((1 - pt) ** 2 * torch.log(pt)).mean()
            """,
            line=7,
        ),
        Invalid(
            """
            import torch

            def f(z):
                probs = torch.sigmoid(z)
                return torch.log(probs[:, 1])
            """,
            fixed="""
            import torch

            def f(z):
                probs = torch.sigmoid(z)
                return torch.log(probs[:, 1].clamp(min=1e-4))
            """,
        ),
        Invalid(
            """
            import torch

            def f(z):
                probs = torch.sigmoid(z)
                return torch.log(1 - probs).sum()
            """,
            fixed="""
            import torch

            def f(z):
                probs = torch.sigmoid(z)
                return torch.log((1 - probs).clamp(min=1e-4)).sum()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

            def loss(x, y):
                out = model(x)
                return -(y * out.log()).mean()
            """,
            line=9,
            message_contains="x < -88.7",
        ),
        Invalid(
            """
            import torch

            def kl(x, y):
                sm = torch.nn.Softmax(dim=-1)
                return (sm(y) * (sm(y).log() - torch.log(sm(x)))).sum()
            """,
        ),
        Invalid(
            """
            import torch as th
            from torch.nn.functional import softmax

            b = th.log(softmax(x, dim=1))
            """,
            message_contains="`th.log` of a softmax output",
            fixed="""
            import torch as th
            from torch.nn.functional import softmax

            b = th.nn.functional.log_softmax(x, dim=1)
            """,
        ),
        Invalid(
            """
            import torch

            lp = torch.log(torch.special.softmax(x, dim=0))
            """,
            fixed="""
            import torch

            lp = torch.special.log_softmax(x, dim=0)
            """,
        ),
    )
