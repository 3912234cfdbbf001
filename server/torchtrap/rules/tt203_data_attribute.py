"""TT203: changes made through `.data`, which autograd does not see."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import enclosing_statement, parent, walk
from torchtrap.facts.init_code import in_init_code, on_fresh_module
from torchtrap.findings import Applicability, Edit, Finding, Fix, Range, Severity
from torchtrap.rules.base import Invalid, Rule, Valid

_IN_PLACE, _ASSIGN, _READ = "in-place", "assign", "read"


class DataAttribute(Rule):
    """Flags changes made through `.data`, which bypass autograd's checks.

    ## What it does
    Flags, as a warning, an in-place operation or assignment through
    `.data` on a value in the autograd graph: `y.data.zero_()`,
    `y.data[mask] = 0`, `y.data += 1`, `nn.init.zeros_(y.data)`, where `y`
    is evidently an activation (a module's output, or a tensor operation on
    a parameter or on a tensor created with `requires_grad=True`, computed
    with grad enabled). Also flags `z = y.data` at hint severity: the
    `.detach()` spelling says the same and keeps autograd's checks.

    Flags, as a hint, `p.data.mul_(...)`, `p.data[...] = ...`,
    `p.data += ...`, `p.grad.data = 0.5 * p.grad.data` (an update, not the
    swap-in of another tensor), `nn.init.normal_(p.data)` and `p.grad.data.zero_()` on
    parameters (`module.weight`, `nn.Parameter`, loop variables over
    `.parameters()`) outside
    `torch.no_grad()`: they work, but `with torch.no_grad(): p.mul_(...)`
    says what it means.

    Silent for `.data` of anything not evidently a tensor (a Dataset's
    `self.data` array, torchvision's `dataset.data`, `PackedSequence.data`,
    other libraries' `.data`), for `.data` reads used in an expression
    (logging, printing, `.cpu().numpy()`), for parameters inside
    `torch.no_grad()`, and for values computed under `torch.no_grad()`.
    The parameter hints are also silent in initialisation code (`__init__`,
    `reset_parameters`, `init_weights`, `weights_init` and the like, and a
    function that builds the module itself: `m = nn.Linear(...)`), where no
    forward pass has built a graph yet.

    ## Why is this bad?
    A change through `.data` is invisible to autograd: the tensor's version
    counter does not move, so backward uses the modified values as if they
    were the ones saved in the forward pass. Measured with torch 2.13
    (pytorch issue 6990): `y = x.sigmoid(); y.data.zero_(); y.sum().backward()`
    gives `x.grad = [0, 0]` instead of the true `[0.1966, 0.1050]`, with no
    error; the same change through `y.detach().zero_()` raises "one of the
    variables needed for gradient computation has been modified by an
    inplace operation".

    Fixes: a `.data` read → `.detach()` (safe where the value is only read);
    an in-place change → the same change on the tensor itself inside
    `with torch.no_grad():` (unsafe: on a graph value, backward then raises
    instead of returning a wrong gradient; on a parameter it is the same
    update).

    ## Example
    ```python
    for p in model.parameters():
        p.data.mul_(0.9)
    ```

    ## Use instead
    ```python
    for p in model.parameters():
        with torch.no_grad():
            p.mul_(0.9)
    ```

    ## References
    - https://github.com/pytorch/pytorch/issues/6990
    - https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html
    """

    code = "TT203"
    name = "data-attribute"
    summary = "an in-place change through `.data`, invisible to autograd"
    requires_text = (".data",)

    def check(self) -> Iterable[Finding]:
        self.autograd = self.ctx.values.autograd
        for node in self.ctx.facts.index.attributes("data"):
            finding = self._check_data(node)
            if finding is not None:
                yield finding

    def _check_data(self, data: ast.Attribute) -> Finding | None:
        use, stmt = _usage(data, self.ctx.facts.imports)
        if use is None or stmt is None:
            return None
        owner = data.value
        if use == _READ:
            if (
                isinstance(stmt, ast.Assign)
                and stmt.value is data
                and self.autograd.in_graph(owner, stmt)
            ):
                return self._read_finding(data, stmt)
            return None
        if self.autograd.in_graph(owner, stmt):
            return self._change_finding(data, stmt, use, Severity.WARNING)
        if use == _ASSIGN:
            # `p.data = t` swaps in another tensor (re-parameterisation, loading):
            # `copy_` under no_grad would not allow a new shape or shared storage.
            return None
        grad = isinstance(owner, ast.Attribute) and owner.attr == "grad"
        if in_init_code(stmt) or on_fresh_module(owner, stmt, self.ctx.facts.imports):
            return None  # `__init__`, `reset_parameters`, `m = nn.Linear(...)`: no graph yet
        if (grad or self.autograd.is_parameter(owner, stmt)) and grad_off_context(
            data, self.ctx.facts.imports
        ) is None:
            return self._change_finding(data, stmt, use, Severity.HINT)
        return None

    # -- findings ---------------------------------------------------------------
    def _change_finding(
        self, data: ast.Attribute, stmt: ast.stmt, use: str, severity: Severity
    ) -> Finding:
        shown = self._text(data.value)
        if severity is Severity.WARNING:
            message = (
                f"a change through `{shown}.data` is invisible to autograd: "
                "its gradients are silently wrong"
            )
        else:
            what = "a gradient" if shown.endswith(".grad") else "a parameter"
            message = (
                f"`{shown}.data` changes {what} behind autograd; use `torch.no_grad()` instead"
            )
        fix = self._no_grad_fix(data, stmt) if use != _ASSIGN else None
        return self.finding(data, message, severity=severity, fixes=[fix] if fix else [])

    def _read_finding(self, data: ast.Attribute, stmt: ast.Assign) -> Finding:
        shown = self._text(data.value)
        source = self.ctx.source
        start = source.node_range(data.value).end
        end = source.node_range(data).end
        fixes: list[Fix] = []
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if isinstance(target, ast.Name) and not self.ctx.values.mutated_after(target.id, stmt):
            fixes.append(
                Fix(
                    f"Use `{shown}.detach()`",
                    Applicability.SAFE,
                    build=lambda: [Edit(Range(start, end), ".detach()")],
                )
            )
        message = f"`{shown}.data` detaches without autograd's checks; use `{shown}.detach()`"
        return self.finding(data, message, severity=Severity.HINT, fixes=fixes)

    def _no_grad_fix(self, data: ast.Attribute, stmt: ast.stmt) -> Fix | None:
        """``with torch.no_grad():`` around a one-line statement, ``.data``
        dropped."""
        if stmt.lineno != stmt.end_lineno or not isinstance(parent(stmt), _BODIES):
            return None
        if sum(1 for n in walk(stmt) if isinstance(n, ast.Attribute) and n.attr == "data") > 1:
            return None  # several `.data`: one rewrite per round would leave a mix
        torch_name = next(iter(self.ctx.facts.imports.local_names_for("torch")), None)
        if torch_name is None:
            return None
        source = self.ctx.source
        line = source.line(stmt.lineno)
        if line[: len(line) - len(line.lstrip())].strip() or line.rstrip().endswith((";", "\\")):
            return None
        stmt_range = source.node_range(stmt)
        if stmt_range.start.column != len(line) - len(line.lstrip()):
            return None  # `if x: p.data.zero_()` on one line
        data_start = source.node_range(data.value).end
        data_end = source.node_range(data).end
        text = source.segment(Range(stmt_range.start, data_start)) + source.segment(
            Range(data_end, stmt_range.end)
        )
        indent = source.indentation(stmt.lineno)
        unit = "    " if "\t" not in indent else "\t"
        new = f"with {torch_name}.no_grad():{source.newline}{indent}{unit}{text}"
        return Fix(
            "Change the tensor itself under `torch.no_grad()` (unsafe: on a graph value, "
            "backward then raises)",
            Applicability.UNSAFE,
            build=lambda: [Edit(stmt_range, new)],
        )

    def _text(self, node: ast.AST) -> str:
        text = self.ctx.source.segment(self.ctx.range(node))
        return text if len(text) <= 40 and "\n" not in text else "..."

    valid = (
        Valid(
            """
            import math
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.fc = nn.Linear(n, n)
                    self.fc.weight.data.normal_(0, 0.02)
                    self.fc.bias.data.zero_()

                def reset_parameters(self):
                    stdv = 1.0 / math.sqrt(self.fc.weight.size(1))
                    self.fc.weight.data.uniform_(-stdv, stdv)

            def weights_init(m):
                if isinstance(m, nn.Conv2d):
                    m.weight.data.normal_(0.0, 0.02)

            def _init_weights(model):
                for p in model.parameters():
                    p.data.mul_(0.5)

            def Linear(in_features, out_features, dropout=0.0):
                m = nn.Linear(in_features, out_features)
                m.weight.data.normal_(mean=0, std=math.sqrt((1 - dropout) / in_features))
                m.bias.data.zero_()
                return m

            def LSTM(input_size, hidden_size, **kwargs):
                m = nn.LSTM(input_size, hidden_size, **kwargs)
                for name, param in m.named_parameters():
                    if "weight" in name or "bias" in name:
                        param.data.uniform_(-0.1, 0.1)
                return m
            """,
            note="initialisation code and fairseq's module factories: no forward pass, no graph",
        ),
        Valid(
            """
            import numpy as np
            from torch.utils.data import Dataset

            class Points(Dataset):
                def __init__(self):
                    self.data = np.zeros((10, 2))

                def __getitem__(self, i):
                    self.data[i] += 1
                    return self.data[i]
            """,
            note="a Dataset's own `self.data` array",
        ),
        Valid(
            """
            import torchvision

            train = torchvision.datasets.MNIST("data", download=True)
            train.data = train.data[:1000]
            """,
            note="torchvision's `dataset.data`",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            lstm = nn.LSTM(4, 4)

            def run(packed):
                out, _ = lstm(packed)
                out.data.clamp_(0)
                return out
            """,
            note="an LSTM returns a tuple: `out` may be a PackedSequence, not evidently a tensor",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)

            def step(x):
                out = model(x)
                print(out.data.cpu().numpy())
                value = out.data.mean().item()
                return value
            """,
            note="`.data` reads for logging",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)
            with torch.no_grad():
                model.weight.data.mul_(0.5)
                for p in model.parameters():
                    p.data.clamp_(-1, 1)
            """,
            note="parameters inside `torch.no_grad()`",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)

            @torch.no_grad()
            def ema(target):
                for p, q in zip(target.parameters(), model.parameters()):
                    p.data.mul_(0.99).add_(q.data, alpha=0.01)
            """,
            note="a `@torch.no_grad()` function",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)

            def probe(x):
                with torch.no_grad():
                    out = model(x)
                out.data.zero_()
                return out
            """,
            note="a value computed under `torch.no_grad()` is not in the graph",
        ),
        Valid(
            """
            import torch

            def reset(records):
                for r in records:
                    r.data.zero_()
            """,
            note="unknown receivers",
        ),
        Valid(
            """
            import torch.nn as nn

            model = nn.Linear(4, 2)

            def save_grads(buffers):
                for buf, p in zip(buffers, model.parameters()):
                    buf.copy_(p.grad.data)
            """,
            note="`p.grad.data` as the argument of another tensor's `copy_` is only read "
            "(fairseq's fp16 optimizer)",
        ),
        Valid(
            """
            import torch.nn as nn

            class RepConv(nn.Module):
                def reparameterize(self, kernel, bias):
                    self.conv = nn.Conv2d(4, 4, 3)
                    self.conv.weight.data = kernel
                    self.conv.bias.data = bias
            """,
            note="`p.data = t` on a parameter swaps in another tensor (timm's "
            "re-parameterisation): `copy_` under no_grad would not allow a new shape",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            layer = nn.Linear(4, 2)
            other = nn.Linear(4, 2)
            layer.weight.data = other.weight.data.clone()
            layer.bias.data = torch.zeros(2)
            """,
            note="swapping in another tensor (reading another `.data`) is no update",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch.nn as nn

            shared = nn.Linear(4, 2)
            for p in shared.parameters():
                p.grad.data = 0.5 * p.grad.data
            """,
            line=6,
            severity=Severity.HINT,
            message_contains="changes a gradient",
            note="an update through `.data` (CoGAN's shared-gradient averaging)",
        ),
        Invalid(
            """
            import torch

            x = torch.tensor([1.0, 2.0], requires_grad=True)
            y = x.sigmoid()
            y.data.zero_()
            y.sum().backward()
            """,
            line=6,
            severity=Severity.WARNING,
            message_contains="invisible to autograd",
            fixed="""
            import torch

            x = torch.tensor([1.0, 2.0], requires_grad=True)
            y = x.sigmoid()
            with torch.no_grad():
                y.zero_()
            y.sum().backward()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.fc(x)
                    h.data[h.data < 0] = 0
                    return h * 2
            """,
            line=12,
            severity=Severity.WARNING,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)
            for p in model.parameters():
                p.data.mul_(0.9)
                p.grad.data.zero_()
            """,
            line=7,
            severity=Severity.HINT,
            fixed="""
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)
            for p in model.parameters():
                with torch.no_grad():
                    p.mul_(0.9)
                p.grad.data.zero_()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            master = nn.Linear(4, 2)
            half = nn.Linear(4, 2)
            master.weight.grad.data.copy_(half.weight.grad.data)
            """,
            line=7,
            severity=Severity.HINT,
            message_contains="changes a gradient",
            note="one finding: the argument of `copy_` is only read",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)

            def features(x):
                out = model(x)
                snapshot = out.data
                return snapshot
            """,
            line=9,
            severity=Severity.HINT,
            fixed="""
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)

            def features(x):
                out = model(x)
                snapshot = out.detach()
                return snapshot
            """,
        ),
    )


_BODIES = (
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.ExceptHandler,
    ast.ClassDef,
)


def _usage(data: ast.Attribute, imports: ImportTable) -> tuple[str | None, ast.stmt | None]:
    """How ``x.data`` is used: changed in place, assigned, or read; and the
    statement."""
    node: ast.AST = data
    up = parent(node)
    # `x.data.mul_(...)`, also chained: `x.data.mul_(a).add_(b)`.
    if isinstance(up, ast.Attribute) and up.value is node:
        call = parent(up)
        name = up.attr
        if (
            isinstance(call, ast.Call)
            and call.func is up
            and name.endswith("_")
            and not name.startswith("_")
        ):
            return _IN_PLACE, enclosing_statement(call)
        return _READ, enclosing_statement(data)
    if isinstance(data.ctx, ast.Store):
        if isinstance(up, ast.AugAssign):
            return _IN_PLACE, up
        if isinstance(up, ast.Assign) and _reads_itself(data, up.value):
            return _IN_PLACE, up  # `g.data = 0.5 * g.data`: an update, not a swap
        return _ASSIGN, enclosing_statement(data)
    if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.ctx, ast.Store):
        return _IN_PLACE, enclosing_statement(up)
    if isinstance(up, ast.Call) and up.args and up.args[0] is node:
        name = _function_name(up.func, imports)
        if name.endswith("_") and not name.startswith("_"):
            return _IN_PLACE, enclosing_statement(up)  # `nn.init.zeros_(x.data)`
    return _READ, enclosing_statement(data)


def _reads_itself(data: ast.Attribute, value: ast.expr) -> bool:
    """``value`` reads the same ``<x>.data`` that is assigned."""
    target = dotted_name(data.value)  # (not ast.dump: its recursive closure is cyclic garbage)
    return target is not None and any(
        isinstance(n, ast.Attribute)
        and n.attr == "data"
        and n is not data
        and dotted_name(n.value) == target
        for n in walk(value)
    )


def _function_name(func: ast.expr, imports: ImportTable) -> str:
    """The name of a function (not a method of a value: in `a.copy_(b.data)`,
    `b.data` is the source)."""
    if isinstance(func, ast.Name):
        return func.id
    qualname = imports.qualname(func)
    return qualname.rpartition(".")[2] if qualname else ""
