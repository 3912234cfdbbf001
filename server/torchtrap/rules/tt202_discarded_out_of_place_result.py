"""TT202: an out-of-place tensor operation whose result is thrown away."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.index import ancestors, enclosing_scope, parent
from torchtrap.facts.tensors import ELEMENTWISE, words
from torchtrap.findings import Applicability, Edit, Finding, Fix, marked_title, unsafe_title
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind
from torchtrap.values.program import module_model
from torchtrap.values.program_values import program_may_define

# Methods only tensors have (no Python, numpy, pandas or matplotlib type has
# them): flagged on any receiver, unless it is a module, `self`, an imported
# object, or a local class defines a method of that name.
TENSOR_ONLY = words(
    """
    clamp clamp_min clamp_max masked_fill masked_scatter scatter_add scatter_reduce
    index_fill index_add index_copy index_put index_reduce unsqueeze addcmul addcdiv
    nan_to_num narrow expand_as view_as reshape_as type_as contiguous unflatten
    """
)
# Methods other types also have (set.add, ndarray.squeeze, plt.scatter, Logger.log,
# TextIOWrapper.detach, nn.Module.to ...): flagged only with evidence that the
# receiver is a tensor.
NEEDS_EVIDENCE = (
    words(
        """
    clip scatter squeeze transpose t add sub mul div pow abs neg exp log sqrt rsqrt
    reciprocal square floor ceil round trunc sign sigmoid tanh relu lerp fmod remainder
    detach view reshape permute expand flatten repeat clone softmax log_softmax sort
    float half double bfloat16 int long bool byte to cuda cpu type
    """
    )
    | ELEMENTWISE
)
# In place on an nn.Module (it converts itself and returns self), out of place
# on a tensor.
MODULE_SHARED = words("to cuda cpu float half double bfloat16 type")
# Methods without an in-place twin (`x.to_` does not exist); all others have one.
NO_TWIN = words(
    """
    narrow expand_as view_as reshape_as type_as contiguous unflatten view reshape permute
    expand flatten repeat clone softmax log_softmax sort float half double bfloat16 int long
    bool byte to cuda cpu type
    """
)
METHODS = TENSOR_ONLY | NEEDS_EVIDENCE
# `torch.<name>(x, ...)` statements: the same operations as functions.
FUNCTIONS = (
    words(
        """
    clamp clamp_min clamp_max clip masked_fill masked_scatter scatter scatter_add
    scatter_reduce index_fill index_add index_copy index_put index_reduce unsqueeze squeeze
    transpose t add sub mul div pow abs neg exp log sqrt rsqrt reciprocal square floor ceil
    round trunc sign sigmoid tanh relu addcmul addcdiv lerp nan_to_num fmod remainder detach
    narrow reshape permute flatten unflatten clone softmax log_softmax
    """
    )
    | ELEMENTWISE
)
# Enclosing functions (besides test*) where a discarded result is on purpose:
# timing and warm-up loops.
_PURPOSEFUL_FUNCTIONS = ("bench", "warmup", "warm_up", "profil", "timing", "timeit")
_EXPECTS_ERROR = ("raises", "warns", "assertraises", "assertwarns", "assert_raises")


class DiscardedOutOfPlaceResult(Rule):
    """Flags a statement that calls an out-of-place tensor operation and drops its result.

    ## What it does
    Flags an expression statement that is only a call of an out-of-place
    tensor method or `torch` function, e.g. `prob.clamp(min=1e-4)` or
    `torch.clamp(x, 0, 1)` on a line of its own: the result is thrown away.

    Methods flagged on any receiver (only tensors have them): `clamp`,
    `clamp_min`, `clamp_max`, `masked_fill`, `masked_scatter`, `scatter_add`,
    `scatter_reduce`, `index_fill`, `index_add`, `index_copy`, `index_put`,
    `index_reduce`, `unsqueeze`, `addcmul`, `addcdiv`, `nan_to_num`, `narrow`,
    `expand_as`, `view_as`, `reshape_as`, `type_as`, `contiguous`, `unflatten`.

    Methods flagged only when the receiver is evidently a tensor (other
    types share the name: `set.add`, numpy's `squeeze`/`reshape`/`clip`,
    `plt.scatter`, `logger.log`, `stream.detach`, `list.sort`): `clip`,
    `scatter`, `squeeze`, `transpose`, `t`, `add`, `sub`, `mul`, `div`, `pow`,
    `abs`, `neg`, `exp`, `log`, `sqrt`, `rsqrt`, `reciprocal`, `square`,
    `floor`, `ceil`, `round`, `trunc`, `sign`, `sigmoid`, `tanh`, `relu`,
    `lerp`, `fmod`, `remainder`, `detach`, `view`, `reshape`, `permute`,
    `expand`, `flatten`, `repeat`, `clone`, `softmax`, `log_softmax`, `sort`,
    `int`, `long`, `bool`, `byte`, and the ones `nn.Module` shares: `to`,
    `cuda`, `cpu`, `float`, `half`, `double`, `bfloat16`, `type`. Evidence
    is a `torch` tensor function, a tensor method of a tensor, a parameter
    annotated `torch.Tensor`, a module's output, `nn.Parameter`,
    `self.x = torch...`, `register_buffer`, `.grad`, or a loop over
    `.parameters()` or a `DataLoader`.

    The rest of torch's elementwise math, as methods (with tensor evidence)
    and as `torch.<name>(x)` functions: `sin`, `cos`, `tan`, `asin`, `acos`,
    `atan`, `atan2`, `arcsin`, `arccos`, `arctan`, `arctan2`, `sinh`,
    `cosh`, `asinh`, `acosh`, `atanh`, `arcsinh`, `arccosh`, `arctanh`,
    `exp2`, `expm1`, `log1p`, `logit`, `erf`, `erfc`, `erfinv`, `lgamma`,
    `digamma`, `i0`, `sinc`, `hypot`, `xlogy`, `sgn`, `frac`, `fix`,
    `deg2rad`, `rad2deg`, `float_power`, `heaviside`, `copysign`,
    `nextafter`, `negative`, `bitwise_and`, `bitwise_or`, `bitwise_xor`,
    `bitwise_not`, `logical_and`, `logical_or`, `logical_not`,
    `logical_xor`, `subtract`, `multiply`, `divide`, `absolute`, `ldexp`,
    `gcd`, `lcm`.

    Never flagged: a receiver that is a module (`self`, `self.<submodule>`,
    a name bound to an `nn.*` or local `nn.Module` subclass instance):
    `model.to(device)`, `model.cuda()`, `net.float()`, `.train()`, `.eval()`
    convert modules in place. Also silent with `out=` or `inplace=`, inside
    `pytest.raises`/`assertRaises` blocks and `try:` bodies (probing whether
    an operation fails), and in `test*`/benchmark/warm-up functions. In a
    notebook, silent for a cell's last expression (Jupyter displays its
    value; with a trailing `;` it does not, and the result is thrown away)
    and in `%%timeit` cells.

    ## Why is this bad?
    These operations return a new tensor and leave their input unchanged, so
    the code after a discarded result runs on the old values: a focal loss
    that clamps `prob` this way still takes the log of zeros.
    `x.clamp(min=1e-4)` as a statement leaves `x = [0, -1, 0.5]` as it was;
    only the `_` twin (`clamp_`) or `x = x.clamp(...)` changes `x`. For
    tensors, `x.to(device)`, `x.cuda()` and `x.float()` return copies too,
    unlike `nn.Module`, which converts itself.

    Fixes: assign the result back (`x = x.clamp(...)`; safe when the receiver
    is a local name used afterwards, or `.data`/`.grad`), or use the in-place
    twin (`x.clamp_(...)`; unsafe: autograd refuses in-place changes of a
    leaf that requires grad or of a value it saved for backward).

    ## Example
    ```python
    prob = self.softmax(pred)
    prob.clamp(min=0.0001, max=1.0)
    loss = -(1 - prob) ** 2 * prob.log()
    ```

    ## Use instead
    ```python
    prob = self.softmax(pred)
    prob = prob.clamp(min=0.0001, max=1.0)
    loss = -(1 - prob) ** 2 * prob.log()
    ```

    ## References
    - [Autograd mechanics: in-place operations](https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    - https://pytorch.org/docs/stable/tensor_view.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.clamp_.html
    """

    code = "TT202"
    name = "discarded-out-of-place-result"
    summary = "an out-of-place tensor op (`x.clamp(...)`) whose result is thrown away"
    fact = (
        "Measured: `x.clamp(min=1e-4)` as a statement leaves `x = [0, -1, 0.5]` as it "
        "was; `x.clamp_(min=1e-4)` changes it."
    )
    requires_text = ("torch",)

    def check(self) -> Iterable[Finding]:
        imports = self.ctx.facts.imports
        for stmt in self.ctx.facts.index.of(ast.Expr):
            call = stmt.value
            if not isinstance(call, ast.Call) or not isinstance(
                call.func, (ast.Attribute, ast.Name)
            ):
                continue
            if any(kw.arg in ("out", "inplace") for kw in call.keywords):
                continue
            if stmt.lineno in self.ctx.displayed and parent(stmt) is self.ctx.tree:
                continue  # a notebook cell's last expression: Jupyter displays it
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id
            if name not in METHODS and name not in FUNCTIONS:
                continue
            qualname = imports.qualname(func)
            if qualname is not None and qualname.startswith("torch."):
                function_form = qualname == f"torch.{name}" and name in FUNCTIONS and call.args
                if function_form and not self._purposeful(stmt):
                    yield self._function_finding(stmt, call, name)
                continue
            if not isinstance(func, ast.Attribute) or name not in METHODS:
                continue
            if self._flag_method(stmt, call, func) and not self._purposeful(stmt, func.value):
                yield self._method_finding(stmt, call, func)

    # -- detection ------------------------------------------------------------
    def _flag_method(self, stmt: ast.Expr, call: ast.Call, func: ast.Attribute) -> bool:
        name, receiver = func.attr, func.value
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            return False
        if name == "type" and not call.args and not call.keywords:
            return False  # `x.type()` is a query
        value = self.ctx.values.of(receiver, stmt)
        if value.holds(Kind.MODULE):
            return False
        if value.holds(Kind.TENSOR):
            return True  # also returned by a project function (`-> tuple[Tensor, Tensor]`)
        if name not in TENSOR_ONLY:
            return False
        if self.ctx.facts.imports.qualname(receiver) is not None:
            return False  # an imported object: not a local tensor
        # A local class with a method of that name (`Boxes.clamp`) may be the receiver.
        if any(name in c.methods for c in self.ctx.facts.classes.classes.values()):
            return False
        # So may one of another file, as the whole-program model sees it.
        ctx = self.ctx
        model = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
        return model is None or not program_may_define(model, receiver, name)

    def _purposeful(self, stmt: ast.stmt, receiver: ast.expr | None = None) -> bool:
        """Places where throwing the result away is the point. A test
        probing a call (``x.cuda()``) needs no type test first: a branch
        that makes sure it holds a tensor (``if isinstance(x, torch.Tensor):
        x.to(dtype)``) means to convert it."""
        for function in ancestors(stmt):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            lowered = function.name.lower()
            if lowered.lstrip("_").startswith("test") or any(
                part in lowered for part in _PURPOSEFUL_FUNCTIONS
            ):
                if receiver is None or not self.ctx.values.narrowed(receiver, stmt):
                    return True
                break
        child: ast.AST = stmt
        for anc in ancestors(stmt):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                break
            if isinstance(anc, ast.Try) and child in anc.body:
                return True  # probing: `try: x.cuda() except RuntimeError: ...`
            if isinstance(anc, (ast.With, ast.AsyncWith)) and any(
                _expects_error(item.context_expr) for item in anc.items
            ):
                return True
            child = anc
        return False

    # -- findings -------------------------------------------------------------
    def _method_finding(self, stmt: ast.Expr, call: ast.Call, func: ast.Attribute) -> Finding:
        name, receiver = func.attr, func.value
        shown = self._display(receiver)
        message = f"`.{name}()` returns a new tensor that is thrown away"
        if shown is not None:
            message += f": `{shown}` is unchanged"
        if name in MODULE_SHARED and len(message) + 31 <= 120:
            message += " (only a module converts itself)"
        fixes: list[Fix] = []
        assign = self._assign_back(stmt, receiver, name)
        if assign is not None:
            fixes.append(assign)
        if name not in NO_TWIN and isinstance(receiver, (ast.Name, ast.Attribute)):
            end = self.ctx.source.position(func.end_lineno or func.lineno, func.end_col_offset or 0)
            fixes.append(
                Fix(
                    unsafe_title(
                        f"Use the in-place `{name}_()`",
                        "breaks backward if autograd saved the tensor",
                    ),
                    Applicability.UNSAFE,
                    build=lambda: [edits.insert_at(end, "_")],
                )
            )
        return self.finding(call, message, fixes=fixes)

    def _function_finding(self, stmt: ast.Expr, call: ast.Call, name: str) -> Finding:
        target = call.args[0]
        shown = self._display(target) if not isinstance(target, ast.Starred) else None
        message = f"`torch.{name}()` returns a new tensor that is thrown away"
        if shown is not None:
            message += f": `{shown}` is unchanged"
        assign = self._assign_back(stmt, target, name)
        return self.finding(call, message, fixes=[assign] if assign is not None else [])

    def _display(self, node: ast.expr) -> str | None:
        if not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return None
        text = self.ctx.source.segment(self.ctx.range(node))
        return text if len(text) <= 32 and "\n" not in text else None

    def _assign_back(self, stmt: ast.Expr, target: ast.expr, name: str) -> Fix | None:
        """``x = x.clamp(...)``: safe for a local name read afterwards and for
        ``.data``/``.grad``; unsafe for other attributes (assigning a plain
        tensor to an ``nn.Parameter`` attribute raises)."""
        if isinstance(target, ast.Name):
            scope = enclosing_scope(stmt)
            if not isinstance(scope, ast.Module) and not self.ctx.values.binds(target.id, scope):
                return None  # a global or closure name: assigning would make it local
            if not self._read_later(target.id, stmt):
                return None  # the new value would be dead: only the in-place twin helps
            applicability = Applicability.SAFE
        elif isinstance(target, ast.Attribute) and _root_is_name(target):
            if self._is_parameter(target, stmt):
                return None  # `module.weight = tensor` raises: only the in-place twin
            safe = target.attr in ("data", "grad")
            applicability = Applicability.SAFE if safe else Applicability.UNSAFE
        else:
            return None
        source = self.ctx.source
        text = source.segment(source.node_range(target))
        start = source.position(stmt.lineno, stmt.col_offset)
        end = source.node_range(stmt).end
        suffix = ".values" if name == "sort" else ""

        def build() -> list[Edit]:
            out = [edits.insert_at(start, f"{text} = ")]
            if suffix:
                out.append(edits.insert_at(end, suffix))
            return out

        what = "the sorted values" if suffix else "the result"
        title = marked_title(
            f"Assign {what} back to `{text}`",
            applicability,
            "raises if the attribute is an nn.Parameter",
        )
        return Fix(title, applicability, build=build)

    def _is_parameter(self, target: ast.Attribute, stmt: ast.stmt) -> bool:
        """``module.weight`` / ``self.w = nn.Parameter(...)``: an nn.Parameter."""
        if target.attr in ("weight", "bias"):
            return True
        return self.ctx.values.autograd.is_parameter(target, stmt, every=False)

    def _read_later(self, name: str, stmt: ast.stmt) -> bool:
        """Is ``name`` read after ``stmt`` (in its scope, or anywhere for a
        module-level name)?"""
        scope = enclosing_scope(stmt)
        after = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
        for node in self.ctx.facts.index.names(name):
            if not isinstance(node.ctx, ast.Load):
                continue
            if isinstance(scope, ast.Module):
                if enclosing_scope(node) is not scope or (node.lineno, node.col_offset) > after:
                    return True
            elif (node.lineno, node.col_offset) > after and _inside(node, scope):
                return True
        return False

    valid = (
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader

            def fit(loader, device):
                for batch in loader:
                    batch["x"].to(device)

            fit(DataLoader(data, collate_fn=collate), "cuda")
            """,
            note="a collate_fn: the batch may hold objects whose .to() works in place",
        ),
        Valid(
            """
            import torch

            def fit(loader, device):
                for batch in loader:
                    batch["x"].to(device)

            fit([{"x": torch.zeros(1)}], "cuda")
            """,
            note="the parameter is given a list, not a DataLoader",
        ),
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader

            def fit(model, loader, device):
                for batch in loader:
                    model.to(device)

            fit(net, DataLoader(data), "cuda")
            """,
            note="module.to(device) stays silent however the module arrived",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def setup(self, device):
                    self.fc.to(device)
                    self.fc.half()
                    self.to(device)
                    self.float()

            def main(device):
                model = Net()
                model.to(device)
                model.cuda()
                model.float()
                model.train()
                model.eval()
                net = nn.Sequential(nn.Linear(2, 2))
                net.double()
                net.type(torch.float64)
            """,
            note="nn.Module converts in place",
        ),
        Valid(
            """
            import torch

            def setup(model, device, other):
                model.to(device)
                model.half()
                other.cuda()
                model.module.float()
            """,
            note="unknown receivers with module-shared methods: never flagged",
        ),
        Valid(
            """
            import torch
            import torchvision

            m = torchvision.models.resnet18()
            m.cuda()
            loaded = torch.load("model.pt")
            loaded.to("cuda")
            compiled = torch.compile(loaded)
            compiled.float()
            """,
            note="models from torchvision, torch.load, torch.compile",
        ),
        Valid(
            """
            import torch

            def f(x: torch.Tensor, y, z):
                x = x.clamp(min=0)
                x.clamp_(max=1)
                y = x.unsqueeze(0)
                torch.max(x, y, out=z)
                x.add(y, out=z)
                torch.clamp(x, 0, 1, out=x)
                print(x.clamp(0, 1))
                return x.float(), [x.to("cpu")]
            """,
            note="results used, in-place twins, out=",
        ),
        Valid(
            """
            import re
            import logging
            import sys
            import numpy as np
            import pandas as pd
            import matplotlib.pyplot as plt
            import torch

            def g(df, arr, items, ax, logger):
                seen = set()
                seen.add(1)
                items.sort()
                df.clip(lower=0, inplace=True)
                arr.squeeze()
                arr.reshape(2, 3)
                np.clip(arr, 0, 1)
                plt.scatter([1], [2])
                ax.scatter([1], [2])
                re.sub("a", "b", "abc")
                logger.log(logging.INFO, "x")
                sys.stdout.detach()
                arr.transpose()
            """,
            note="names shared with set, list, pandas, numpy, matplotlib, re, logging, io",
        ),
        Valid(
            """
            import torch

            class Boxes:
                def clamp(self, h, w):
                    self.h = min(self.h, h)

            def f(boxes):
                boxes.clamp(10, 10)
            """,
            note="a local class defines clamp (in place)",
        ),
        Valid(
            """
            import unittest
            import pytest
            import torch

            def check_view():
                x = torch.zeros(3, 5).t()
                with pytest.raises(RuntimeError):
                    x.view(15)
                try:
                    x.cuda()
                except (RuntimeError, AssertionError):
                    pass

            class T(unittest.TestCase):
                def check(self):
                    x = torch.zeros(2)
                    with self.assertRaises(RuntimeError):
                        x.unsqueeze(5)
            """,
            note="probing whether an operation fails",
        ),
        Valid(
            """
            import torch

            def test_unsqueeze_smoke():
                torch.zeros(3).unsqueeze(0)

            def benchmark_to(x: torch.Tensor):
                for _ in range(10):
                    x.to("cuda")

            def warmup(x: torch.Tensor):
                x.float()
            """,
            note="smoke tests and timing loops discard on purpose",
        ),
        Valid(
            """
            import torch

            x = torch.zeros(3)
            x.type()
            x.requires_grad_()
            x.retain_grad()
            x.zero_()
            x.fill_(1)
            x.numpy()
            """,
            note="queries and in-place methods",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = build_body()

                def forward(self, x):
                    self.body.to(x.device)
                    return self.body(x)
            """,
            note="a submodule of unknown type",
        ),
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader

            def run(dataset, collate, device):
                loader = DataLoader(dataset, batch_size=8, collate_fn=collate)
                for inputs, labels in loader:
                    inputs.to(device)
                for batch in DataLoader(dataset):
                    batch.to(device)
            """,
            note="custom collate_fn (a BatchEncoding moves in place), or the whole batch",
        ),
        Valid(
            """
            import torch

            def f(x: torch.Tensor, items):
                x.clamp(0, 1) if x.numel() else None
                _ = x.clamp(0, 1)
                items.append(x.clamp(0, 1))
                x.data.clamp_(0, 1)
                lambda: x.clamp(0, 1)
            """,
            note="the result is used, or not a statement of its own",
        ),
        Valid(
            """
            import math
            import numpy as np

            def rotate(theta, values):
                math.sin(theta)
                np.cos(values)
                values.cos()
                return theta
            """,
            note="`sin`/`cos` of math and numpy, and `.cos()` on a value of unknown type",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def split(x, y) -> tuple[torch.Tensor, torch.Tensor]:
                order = torch.randperm(len(x))
                return x[order], y[order]

            def fit(x, y, device):
                train_x, train_y = split(x, y)
                train_x.to(device)
                return train_x, train_y
            """,
            line=10,
            message_contains="`train_x` is unchanged",
            note="a tuple returned by a function annotated `-> tuple[Tensor, Tensor]`, unpacked",
        ),
        Invalid(
            """
            import torch

            def rotate(theta):
                angle = torch.zeros(3)
                torch.sin(angle)
                angle.cos()
                return angle + theta
            """,
            line=6,
            note="the rest of torch's elementwise functions: `torch.sin`, `.cos()`",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def fit(loader, device):
                for t in loader:
                    X, y = t["X"], t["y"]
                    X.to(device)

            fit(DataLoader(data, batch_size=8), "cuda")
            """,
            line=8,
            message_contains="`X` is unchanged",
            note="a batch item of a DataLoader that the call site passes as `loader`",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            loader = DataLoader(data, batch_size=8)
            for batch in loader:
                batch[0].cuda()
            """,
            line=7,
            note="an item of a whole batch (default collate: tensors)",
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
                    prob = self.softmax(pred.view(-1,self.class_num))
                    prob.clamp(min=0.0001,max=1.0)
                    return -prob.log().gather(1, target.view(-1, 1)).mean()
            """,
            line=13,
            message_contains="`prob` is unchanged",
            fix_title="Assign",
            fixed="""
            import torch
            import torch.nn as nn

            class FocalLoss(nn.Module):
                def __init__(self, class_num):
                    super().__init__()
                    self.class_num = class_num
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, pred, target):
                    prob = self.softmax(pred.view(-1,self.class_num))
                    prob = prob.clamp(min=0.0001,max=1.0)
                    return -prob.log().gather(1, target.view(-1, 1)).mean()
            """,
            note="the discarded clamp, exactly as reported",
        ),
        Invalid(
            """
            import torch

            def focal(prob):
                prob.clamp(min=0.0001, max=1.0)  # keep this comment
                return prob.log()
            """,
            fix_title="in-place",
            fixed="""
            import torch

            def focal(prob):
                prob.clamp_(min=0.0001, max=1.0)  # keep this comment
                return prob.log()
            """,
        ),
        Invalid(
            """
            import torch

            def move(device):
                x = torch.zeros(3)
                x.to(device, non_blocking=True)
                return x
            """,
            message_contains="`x` is unchanged",
            fix_title="Assign",
            fixed="""
            import torch

            def move(device):
                x = torch.zeros(3)
                x = x.to(device, non_blocking=True)
                return x
            """,
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader as DL

            def train(model, dataset):
                loader = DL(dataset, batch_size=4)
                for i, (images, labels) in enumerate(loader):
                    images.cuda()
                    out = model(images)
            """,
            line=8,
            fix_title="Assign",
            fixed="""
            import torch
            from torch.utils.data import DataLoader as DL

            def train(model, dataset):
                loader = DL(dataset, batch_size=4)
                for i, (images, labels) in enumerate(loader):
                    images = images.cuda()
                    out = model(images)
            """,
        ),
        Invalid(
            """
            import torch

            def trim(output, data_source):
                output.narrow(0, 0, data_source.size(0))
                return output
            """,
            fix_title="Assign",
            fixed="""
            import torch

            def trim(output, data_source):
                output = output.narrow(0, 0, data_source.size(0))
                return output
            """,
            note="a discarded narrow",
        ),
        Invalid(
            """
            import torch

            def f(x):
                torch.clamp(x, min=0)
                return x
            """,
            fix_title="Assign",
            fixed="""
            import torch

            def f(x):
                x = torch.clamp(x, min=0)
                return x
            """,
        ),
        Invalid(
            """
            from torch import clamp

            def f(x):
                clamp(x, 0, 1)
                return x
            """,
            fix_title="Assign",
            fixed="""
            from torch import clamp

            def f(x):
                x = clamp(x, 0, 1)
                return x
            """,
        ),
        Invalid(
            """
            import torch

            def clip_weights(model):
                for p in model.parameters():
                    p.data.clamp(-0.01, 0.01)
            """,
            fix_title="Assign",
            fixed="""
            import torch

            def clip_weights(model):
                for p in model.parameters():
                    p.data = p.data.clamp(-0.01, 0.01)
            """,
            note="WGAN weight clipping without the underscore",
        ),
        Invalid(
            """
            import torch

            def clip_grads(model):
                for name, p in model.named_parameters():
                    p.grad.mul(0.5)
            """,
            fix_title="in-place",
            fixed="""
            import torch

            def clip_grads(model):
                for name, p in model.named_parameters():
                    p.grad.mul_(0.5)
            """,
        ),
        Invalid(
            """
            import torch
            from torch import Tensor

            def prep(x: Tensor) -> Tensor:
                x.unsqueeze(0)
                return x
            """,
            fix_title="Assign",
            fixed="""
            import torch
            from torch import Tensor

            def prep(x: Tensor) -> Tensor:
                x = x.unsqueeze(0)
                return x
            """,
        ),
        Invalid(
            """
            import torch

            def prep(x: torch.Tensor):
                x.float().clamp(min=0)
                return x
            """,
            message_contains="`.clamp()` returns a new tensor",
            note="a chain: flagged without a fix",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            criterion = nn.CrossEntropyLoss()

            def step(out, y):
                loss = criterion(out, y)
                loss.detach()
                return loss
            """,
            fix_title="Assign",
            fixed="""
            import torch
            import torch.nn as nn

            criterion = nn.CrossEntropyLoss()

            def step(out, y):
                loss = criterion(out, y)
                loss = loss.detach()
                return loss
            """,
        ),
        Invalid(
            """
            import torch

            def one_hot(target, n):
                target_ = torch.zeros(target.size(0), n).cuda()
                target_.scatter(1, target.view(-1, 1).long(), 1.)
                return target_
            """,
            fix_title="in-place",
            fixed="""
            import torch

            def one_hot(target, n):
                target_ = torch.zeros(target.size(0), n).cuda()
                target_.scatter_(1, target.view(-1, 1).long(), 1.)
                return target_
            """,
        ),
        Invalid(
            """
            import torch

            vals = torch.rand(5)
            vals.sort(descending=True)
            print(vals)
            """,
            fix_title="Assign",
            fixed="""
            import torch

            vals = torch.rand(5)
            vals = vals.sort(descending=True).values
            print(vals)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = torch.ones(3)
                    self.register_buffer("b", torch.zeros(3))

                def shrink(self):
                    self.w.mul(0.5)
                    self.b.masked_fill(self.b > 1, 1)
            """,
            line=12,
            fix_title="Assign",
            fixed="""
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = torch.ones(3)
                    self.register_buffer("b", torch.zeros(3))

                def shrink(self):
                    self.w = self.w.mul(0.5)
                    self.b.masked_fill(self.b > 1, 1)
            """,
        ),
        Invalid(
            """
            import torch

            def mask(scores, pad):
                scores.masked_fill(pad, float("-inf"))
            """,
            fix_title="Assign",
            fixed="""
            import torch

            def mask(scores, pad):
                scores.masked_fill_(pad, float("-inf"))
            """,
            note="not read afterwards: only the in-place twin is offered",
        ),
    )


def _expects_error(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.lower().endswith(_EXPECTS_ERROR) or name.lower().startswith(_EXPECTS_ERROR)


def _root_is_name(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _inside(node: ast.AST, scope: ast.AST) -> bool:
    return any(anc is scope for anc in ancestors(node))
