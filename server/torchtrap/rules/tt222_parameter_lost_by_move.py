"""TT222: `self.w = nn.Parameter(t).cuda()`: the attribute is a plain tensor, not a parameter."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.autograd import PARAMETER_CLASSES
from torchtrap.facts.modules import enclosing_method, may_be_module, self_name
from torchtrap.facts.shapes import shape
from torchtrap.facts.tensors import words
from torchtrap.findings import Applicability, Edit, Finding, Fix, Range, Severity
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind

# Tensor methods that return a converted copy (a non-leaf, plain tensor)
# when they change the device or dtype, the tensor itself when they do not.
MOVES = frozenset({"cuda", "to", "double", "half", "bfloat16", "float", "type"})
# `.float()` changes nothing on float32 data (the default): a copy only for
# other dtypes, so the finding is a warning.
_MAY_BE_NO_OP = frozenset({"float"})
# torch factories whose result is a new CPU tensor of the default dtype.
_FRESH_FACTORIES = frozenset(
    f"torch.{name}" for name in words("randn rand zeros ones empty full Tensor FloatTensor")
)
# Arguments that need no parentheses before a method call.
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple, ast.Dict)


class ParameterLostByMove(Rule):
    """Flags `self.w = nn.Parameter(t).cuda()` (also `.to(...)`, `.double()`, `.half()`).

    ## What it does
    Flags an assignment of `nn.Parameter(...)` (`torch.nn.Parameter`,
    `Parameter` imported from `torch.nn` or `torch.nn.parameter`) followed
    by a device or dtype conversion, `.cuda()`, `.to(...)`, `.double()`,
    `.half()`, `.bfloat16()`, `.type(...)` or `.float()`, to an attribute of
    `self` in a method of a class that may be an `nn.Module`, or to an
    attribute of a module value. `.float()` is a warning: on float32 data
    (the default dtype) it returns the parameter itself. A warning also when
    the data is not a new CPU tensor of a `torch` factory (`torch.randn(n)`,
    `torch.Tensor(n, m)`): it may already be on that device. A hint for a frozen
    parameter (`requires_grad=False`): nothing is left untrained, only
    `state_dict()` and `model.to()` miss it.

    Silent for the conversion inside the parameter
    (`nn.Parameter(t.cuda())`), an outer conversion to where the data already
    is (`nn.Parameter(t.to(dev)).to(dev)`, `nn.Parameter(torch.randn(n,
    device=dev)).to(dev)`: it returns the parameter itself),
    `register_parameter` (which raises on a plain tensor), and other
    classes' attributes.

    ## Why is this bad?
    The converted copy of a parameter is a plain tensor computed from it,
    so the module does not register it: the optimizer never trains it and
    checkpoints lose it. A conversion that changes the device or dtype
    returns such a copy (not a leaf, not an `nn.Parameter`): it is missing
    from `parameters()` and `state_dict()`, and `model.to()` does not move it.
    Measured with torch 2.13 on CPU: with
    `self.w = nn.Parameter(torch.randn(3)).double()` in `__init__`,
    `named_parameters()` and `state_dict()` have no `w`, and `self.w` has a
    `grad_fn` (`ToCopyBackward0`); with `nn.Parameter(torch.randn(3).double())`
    both have it.

    Fix: move the conversion inside `nn.Parameter(...)` (safe).

    ## Example
    ```python
    class Scale(nn.Module):
        def __init__(self, n, device):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(n)).to(device)
    ```

    ## Use instead
    ```python
    class Scale(nn.Module):
        def __init__(self, n, device):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(n).to(device))
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.to.html
    - https://github.com/pytorch/pytorch/issues/7733
    """

    code = "TT222"
    name = "parameter-lost-by-move"
    summary = "`self.w = nn.Parameter(t).cuda()`: a plain tensor, not registered, never trained"
    fact = (
        "Measured with torch 2.13: `self.w = nn.Parameter(torch.randn(3)).double()` leaves "
        "`w` out of `parameters()` and `state_dict()`."
    )
    default_severity = Severity.ERROR
    requires_text = ("Parameter",)

    def check(self) -> Iterable[Finding]:
        for stmt in self.ctx.facts.index.of_types(ast.Assign, ast.AnnAssign):
            assert isinstance(stmt, (ast.Assign, ast.AnnAssign))
            if stmt.value is None or not isinstance(stmt.value, ast.Call):
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Attribute):
                continue
            chain = self._moves_of_parameter(stmt.value)
            if chain is None or not self._module_attribute(targets[0], stmt):
                continue
            if self._already_converted(stmt.value, chain[0]):
                continue
            yield self._finding(targets[0], stmt.value, *chain)

    def _moves_of_parameter(self, call: ast.Call) -> tuple[ast.Call, list[str]] | None:
        """``nn.Parameter(...)`` under one or more conversions, and their names
        (outermost last); None when ``call`` is not such a chain."""
        moves: list[str] = []
        node: ast.expr = call
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MOVES
        ):
            if node.func.attr == "type" and not (node.args or node.keywords):
                return None  # `.type()` is a query
            moves.insert(0, node.func.attr)
            node = node.func.value
        if not moves or not isinstance(node, ast.Call):
            return None
        if self.ctx.facts.imports.qualname(node.func) not in PARAMETER_CLASSES:
            return None
        return node, moves

    def _already_converted(self, outer: ast.Call, parameter: ast.Call) -> bool:
        """``Parameter(t.to(dev)).to(dev)``, ``Parameter(torch.randn(n, device=dev)).to(dev)``:
        the data is already there, so the conversion returns the parameter itself."""
        data = parameter.args[0] if parameter.args else None
        if data is None:
            return False
        source = self.ctx.source
        moved = source.segment(
            Range(source.node_range(parameter).end, source.node_range(outer).end)
        )
        if (
            source.segment(source.node_range(data))
            .replace(" ", "")
            .endswith(moved.replace(" ", ""))
        ):
            return True
        func = outer.func
        if (
            isinstance(func, ast.Attribute)
            and func.value is parameter
            and func.attr == "to"
            and len(outer.args) == 1
            and not outer.keywords
            and isinstance(data, ast.Call)
        ):
            target = shape(outer.args[0])
            return any(k.arg == "device" and shape(k.value) == target for k in data.keywords)
        return False

    def _fresh_on_cpu(self, parameter: ast.Call) -> bool:
        """The data is a new CPU float32 tensor (``torch.randn(n)``, ``torch.Tensor(n, m)``,
        arithmetic on one): any device or dtype conversion copies it."""
        data: ast.expr | None = parameter.args[0] if parameter.args else None
        while isinstance(data, ast.BinOp):
            data = data.left
        if not isinstance(data, ast.Call) or any(
            k.arg in ("device", "dtype") or k.arg is None for k in data.keywords
        ):
            return False
        qualname = self.ctx.facts.imports.qualname(data.func) or ""
        return qualname in _FRESH_FACTORIES

    def _module_attribute(self, target: ast.Attribute, stmt: ast.stmt) -> bool:
        """``self.x`` in a method of a class that may be an nn.Module, or
        ``m.x`` with ``m`` a module."""
        owner = target.value
        if isinstance(owner, ast.Name):
            method = enclosing_method(stmt)
            if method is not None and self_name(method[0]) == owner.id:
                classes = self.ctx.facts.classes
                info = classes.get(method[1].name)
                return info is not None and info.node is method[1] and may_be_module(info, classes)
        return self.ctx.values.of(owner, stmt).holds(Kind.MODULE)

    def _finding(
        self, target: ast.Attribute, outer: ast.Call, parameter: ast.Call, moves: list[str]
    ) -> Finding:
        source = self.ctx.source
        shown = source.segment(source.node_range(target))
        if len(shown) > 24 or "\n" in shown:
            shown = f".{target.attr}"
        first = moves[0]
        message = (
            f"`.{first}()` on an `nn.Parameter` returns a plain tensor: `{shown}` is not "
            "registered, not trained, not in `state_dict`"
        )
        severity = None
        if not self._fresh_on_cpu(parameter):
            # The data may already be where the conversion sends it (then
            # the parameter itself comes back): a warning, not an error.
            severity = Severity.WARNING
            message = (
                f"`.{first}()` returns a plain tensor if it moves the `nn.Parameter`: "
                f"`{shown}` is then not registered"
            )
        if all(m in _MAY_BE_NO_OP for m in moves):
            severity = Severity.WARNING
            message = (
                f"`.{first}()` on an `nn.Parameter` of non-float32 data returns a plain tensor: "
                f"`{shown}` is then not registered"
            )
        if _frozen(parameter):
            # A constant: only `state_dict()` and `model.to()` miss it (a hint).
            severity = Severity.HINT
            message = (
                f"`.{first}()` on a frozen `nn.Parameter` returns a plain tensor: `{shown}` is "
                "not in `state_dict`, not moved by `.to()`"
            )
        return self.finding(outer, message, severity=severity, fixes=self._fixes(outer, parameter))

    def _fixes(self, outer: ast.Call, parameter: ast.Call) -> list[Fix]:
        data: ast.expr | None = parameter.args[0] if parameter.args else None
        if data is None:
            data = next((k.value for k in parameter.keywords if k.arg == "data"), None)
        if data is None or isinstance(data, ast.Starred):
            return []
        source = self.ctx.source
        param_end = source.node_range(parameter).end
        outer_end = source.node_range(outer).end
        moved = source.segment(Range(param_end, outer_end))
        if "#" in moved:
            return []  # a comment moved inside the call would hide its `)`
        data_range = source.node_range(data)
        wrap = not isinstance(data, _ATOMIC)

        def build() -> list[Edit]:
            out = [Edit(Range(param_end, outer_end), "")]
            if wrap:
                out.append(edits.insert_at(data_range.start, "("))
                out.append(edits.insert_at(data_range.end, ")" + moved))
            else:
                out.append(edits.insert_at(data_range.end, moved))
            return out

        titled = moved if "\n" not in moved else moved.split("(", 1)[0] + "(...)"
        return [Fix(f"Move `{titled}` inside `Parameter(...)`", Applicability.SAFE, build=build)]

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self, device):
                    super().__init__()
                    self.w = nn.Parameter(torch.randn(3).to(device))
                    self.b = nn.Parameter(torch.zeros(3, device=device, dtype=torch.float64))
                    self.register_parameter("s", nn.Parameter(torch.ones(1)))
                    self.v = nn.Parameter(torch.randn(3).to(device), requires_grad=True).to(device)
                    self.u = nn.Parameter(torch.randn(3, device=device)).to(device)
                    self.to(device)
            """,
            note="conversions inside the parameter; an outer `.to` to where the data already is",
        ),
        Valid(
            """
            import torch
            from torch.nn import Parameter

            class Holder:
                def __init__(self):
                    self.w = Parameter(torch.randn(3)).cuda()

            def move(model, device):
                w = Parameter(torch.randn(3)).to(device)
                return w
            """,
            note="a plain class's attribute; a local name (not registered anyway)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = nn.Parameter(torch.randn(3))
                    self.kind = nn.Parameter(torch.randn(3)).type()
                    self.y = torch.randn(3).cuda()
                    self.z = nn.Parameter(torch.randn(3)).requires_grad_(False)
            """,
            note="`.type()` is a query; no parameter; an in-place method returns the parameter",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self, n, device):
                    super().__init__()
                    self.scale = nn.Parameter(torch.ones(n)).to(device)
            """,
            line=8,
            severity=Severity.ERROR,
            message_contains="`self.scale` is not registered, not trained, not in `state_dict`",
            fixed="""
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self, n, device):
                    super().__init__()
                    self.scale = nn.Parameter(torch.ones(n).to(device))
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn import Module, Parameter

            class Net(Module):
                def __init__(self):
                    super().__init__()
                    self.w = Parameter(torch.randn(3, 3) * 0.1, requires_grad=True).cuda().half()
            """,
            line=8,
            fixed="""
            import torch
            from torch.nn import Module, Parameter

            class Net(Module):
                def __init__(self):
                    super().__init__()
                    self.w = Parameter((torch.randn(3, 3) * 0.1).cuda().half(), requires_grad=True)
            """,
            note="`Parameter` imported, an expression as data, two conversions",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Linear(nn.Module):
                def __init__(self, n, device):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(n, 1)).to(
                        device)
            """,
            line=8,
            fixed="""
            import torch
            import torch.nn as nn

            class Linear(nn.Module):
                def __init__(self, n, device):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(n, 1).to(
                        device))
            """,
            note="DeepCTR-Torch before issue 87: the call over two lines",
        ),
        Invalid(
            """
            import numpy as np
            import torch

            class Embed(torch.nn.Module):
                def __init__(self, table):
                    super().__init__()
                    self.table = torch.nn.Parameter(torch.from_numpy(np.load(table))).float()
            """,
            line=8,
            severity=Severity.WARNING,
            message_contains="of non-float32 data",
            note="`.float()`: a copy only when the data is not float32 (numpy's default float64)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Loss(nn.Module):
                def __init__(self, table, device):
                    super().__init__()
                    self.table = nn.Parameter(torch.tensor(table), requires_grad=False).to(device)
            """,
            line=8,
            severity=Severity.HINT,
            message_contains="frozen",
            note="a frozen constant: nothing to train, only `state_dict` and `.to()` miss it",
        ),
        Invalid(
            """
            import torch.nn as nn

            class Embed(nn.Module):
                def __init__(self, pretrained, device):
                    super().__init__()
                    self.table = nn.Parameter(pretrained).to(device)
            """,
            line=7,
            severity=Severity.WARNING,
            message_contains="returns a plain tensor if it moves the `nn.Parameter`",
            fixed="""
            import torch.nn as nn

            class Embed(nn.Module):
                def __init__(self, pretrained, device):
                    super().__init__()
                    self.table = nn.Parameter(pretrained.to(device))
            """,
            note="data from elsewhere may already be on `device`: a warning",
        ),
    )


def _frozen(parameter: ast.Call) -> bool:
    """``nn.Parameter(t, requires_grad=False)`` (also positional)."""
    flag = next((k.value for k in parameter.keywords if k.arg == "requires_grad"), None)
    if flag is None and len(parameter.args) > 1:
        flag = parameter.args[1]
    return isinstance(flag, ast.Constant) and flag.value is False
