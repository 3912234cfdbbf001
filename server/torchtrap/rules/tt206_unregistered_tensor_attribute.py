"""TT206: an nn.Module stores a plain tensor on `self` in `__init__`."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from torchtrap.facts.autograd import PARAMETER_CLASSES
from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.index import enclosing_function, parent, walk, walk_scope
from torchtrap.facts.shapes import shape
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind
from torchtrap.values.classes import is_module_class, remote_base_methods

# Attributes frameworks read as plain tensors on purpose.
_FRAMEWORK_ATTRIBUTES = frozenset({"example_input_array"})
# A class that overrides these moves or saves its tensors itself.
# (A lone `to()`/`cuda()` override moves what it names, if anything, and
# saves nothing: it proves no management.)
_HANDLES_ITS_TENSORS = frozenset({"_apply", "_save_to_state_dict", "state_dict"})
_CONTAINERS = (ast.List, ast.Tuple)
_CANDIDATE_VALUES = (ast.Call, ast.List, ast.Tuple, ast.Dict, ast.ListComp)
# Factories whose positional arguments are the size alone.
_SHAPE_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
_LITERAL_ARRAYS = (ast.List, ast.Tuple)
# Tensors built from data: scalars unless the data is a literal list. (The
# legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)` never
# give a 0-dim tensor: a number is a size, a float raises.)
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
# `self.x.to(device)` where it is used: the class re-casts it by hand, per call.
_MOVES = frozenset({"to", "cuda", "type_as", "to_device"})
# Methods that give a data-built tensor a shape: `torch.tensor(m).view(-1, 1, 1)`.
_RESHAPES = frozenset(
    {"view", "reshape", "expand", "repeat", "unsqueeze", "view_as", "expand_as", "tile"}
)
# A reduction over the whole tensor gives a 0-dim tensor: `torch.prod(torch.tensor(shape))`.
_REDUCTIONS = frozenset({"prod", "sum", "mean", "max", "min", "norm", "amax", "amin", "numel"})
# Elementwise functions keep a scalar a scalar: `torch.sqrt(torch.tensor(d))`.
_SCALAR_KEEPING = frozenset({"sqrt", "exp", "log", "rsqrt", "abs", "log2", "log10", "reciprocal"})


class UnregisteredTensorAttribute(Rule):
    """Flags a plain tensor stored on `self` in an `nn.Module`'s `__init__`.

    ## What it does
    Flags `self.name = <tensor>` in the `__init__` of an `nn.Module`
    subclass, where the value is evidently a tensor (`torch.zeros(...)`,
    `torch.tensor(...)`, `torch.arange(...)`, a tensor method of one) or a
    list, tuple or dict of such tensors.

    A tensor the class re-casts where it uses it (`self.bins.to(x.device)`,
    `self.mean = self.mean.type_as(x)`) is reported as **info**: the
    per-call re-cast works, but the tensor is still missing from
    `state_dict` (a random constant is drawn anew on reload).

    Silent for scalars (`torch.tensor(0.5)`, `torch.tensor(cfg.WEIGHT)`,
    whole-tensor reductions like `torch.prod(torch.tensor(shape))`: a
    0-dim CPU tensor mixes with CUDA tensors; `torch.tensor(m).view(-1, 1, 1)`
    is no scalar), attributes the class reassigns from a fresh value
    outside `__init__` (a cache or running state; a reset to the value
    `__init__` makes is still the module's state), `register_buffer(...)`,
    `nn.Parameter(...)`, `nn.ParameterList`, a name registered as a buffer
    or parameter anywhere in the class (assigning a tensor to it updates
    the buffer), values turned into Python values at once (`.tolist()`,
    `.item()`; an attribute is judged by its last assignment in `__init__`),
    classes that are not `nn.Module`s, classes that override
    `_apply`/`state_dict` (a lone `to()`/`cuda()` override proves nothing),
    Lightning's `example_input_array`, and tensors only ever used as an
    index (`lprobs[:, self.suppress]`: CPU indices work on any device).

    ## Why is this bad?
    `nn.Module` tracks parameters, buffers and submodules; a tensor
    assigned as a plain attribute is none of these. Measured with torch
    2.13: it is missing from `state_dict()` (a checkpoint does not save it,
    so a reload gets whatever `__init__` computes again), and
    `.to(device)`, `.cuda()`, `.half()` and `.double()` do not convert it:
    after `model.double()` the module's weights are float64 and the plain
    tensor is still float32; after `model.cuda()` it stays on the CPU and
    the first forward fails with a device mismatch.

    Fixes: `self.register_buffer("name", value, persistent=False)` (safe:
    the `state_dict` keys stay the same, the tensor now follows the
    module), or `register_buffer("name", value)` (unsafe: the key joins
    `state_dict`, and loading an old checkpoint with `strict=True` fails on
    the missing key). A list or tuple of tensors needs a buffer per item or
    one stacked buffer where the shapes allow: for `torch.zeros/ones/empty/
    rand/randn` calls with the same size arguments,
    `self.register_buffer("name", torch.stack([...]), persistent=False)`
    (unsafe: a tensor instead of a list, so `append` and the like fail).

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.scale = torch.tensor([0.5, 2.0, 1.0, 1.0])
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("scale", torch.tensor([0.5, 2.0, 1.0, 1.0]), persistent=False)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
    - https://discuss.pytorch.org/t/what-is-the-difference-between-register-buffer-and-register-parameter-of-nn-module/32723
    """

    code = "TT206"
    name = "unregistered-tensor-attribute"
    summary = "an `nn.Module` stores a plain tensor on `self` (not in `state_dict`, not moved)"
    requires_text = ("torch",)

    def check(self) -> Iterable[Finding]:
        classes = self.ctx.facts.classes
        handled: dict[str, set[str]] = {}  # per class, computed only for a candidate
        for stmt, target, value in self._self_assignments():
            init = enclosing_function(stmt)
            if init is None or init.name != "__init__":
                continue
            owner = parent(init)
            info = classes.get(owner.name) if isinstance(owner, ast.ClassDef) else None
            if info is None or info.node is not owner or not self._module_class(info):
                continue
            if any(m in info.methods for m in _HANDLES_ITS_TENSORS):
                continue
            name = target.attr
            if name in _FRAMEWORK_ATTRIBUTES:
                continue
            if self._plain_tensor(value, stmt):
                container = False
            elif self._tensor_container(value, stmt):
                container = True
            else:
                continue
            if _reassigned_later(init, stmt, name):
                continue  # judged by its last assignment in `__init__`
            if info.name not in handled:
                handled[info.name] = _registered_names(info) | _running_names(info, init)
            if name in handled[info.name] or _index_only(info, name):
                continue
            recast = name in _recast_names(info)
            yield self._finding(init, stmt, target, value, container=container, recast=recast)

    def _module_class(self, info: ClassInfo) -> bool:
        """An nn.Module, also through a base another file of the project
        defines (``class XDer(ContinualModel)``), whose bases there do not
        handle their tensors themselves (``_apply``, ``state_dict``)."""
        classes = self.ctx.facts.classes
        if classes.is_module(info):
            return True
        ctx = self.ctx
        if not is_module_class(info, classes, ctx.project, ctx.path):
            return False
        methods = remote_base_methods(info, classes, ctx.project, ctx.path)
        return methods is not None and not methods & _HANDLES_ITS_TENSORS

    def _self_assignments(
        self,
    ) -> Iterator[tuple[ast.Assign | ast.AnnAssign, ast.Attribute, ast.expr]]:
        """``self.x = <a call, list, tuple or dict>`` anywhere, from the shared index."""
        index = self.ctx.facts.index
        for node in index.of(ast.Assign):
            if isinstance(node.value, _CANDIDATE_VALUES):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and _is_self_attribute(target):
                        yield node, target, node.value
        for ann in index.of(ast.AnnAssign):
            target = ann.target
            if (
                isinstance(ann.value, _CANDIDATE_VALUES)
                and isinstance(target, ast.Attribute)
                and _is_self_attribute(target)
            ):
                yield ann, target, ann.value

    # -- detection ------------------------------------------------------------
    def _plain_tensor(self, value: ast.expr, at: ast.AST) -> bool:
        """A fresh tensor: built by torch (not a Parameter, not a reference to
        another module's weight)."""
        node = value
        shaped = False
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if self.ctx.facts.imports.qualname(node.func) is not None:
                break
            shaped = shaped or node.func.attr in _RESHAPES
            node = node.func.value  # `torch.zeros(3).float()` → `torch.zeros(3)`
        if not isinstance(node, ast.Call):
            return False
        qualname = self.ctx.facts.imports.qualname(node.func)
        if qualname is None or qualname in PARAMETER_CLASSES or not qualname.startswith("torch."):
            return False
        if not shaped and self._zero_dim(node, qualname):
            return False
        if (
            qualname in _FROM_DATA
            and not shaped
            and not (node.args and isinstance(node.args[0], _LITERAL_ARRAYS) and node.args[0].elts)
        ):
            # A scalar (`torch.tensor(0.5)`, a config value): a 0-dim CPU tensor
            # mixes with CUDA tensors, and its shape is unknown otherwise.
            return False
        return self.ctx.values.of(value, at).holds(Kind.TENSOR)

    def _zero_dim(self, call: ast.Call, qualname: str) -> bool:
        """``torch.prod(torch.tensor(shape))`` (a whole-tensor reduction),
        ``torch.sqrt(torch.tensor(d))`` (elementwise on a scalar): 0-dim."""
        last = qualname.rpartition(".")[2]
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
            return False
        if qualname == f"torch.{last}" and last in _REDUCTIONS:
            return True
        inner = call.args[0]
        if qualname == f"torch.{last}" and last in _SCALAR_KEEPING and isinstance(inner, ast.Call):
            inner_name = self.ctx.facts.imports.qualname(inner.func) or ""
            if inner_name in _FROM_DATA:
                return not (inner.args and isinstance(inner.args[0], _LITERAL_ARRAYS))
            return self._zero_dim(inner, inner_name)
        return False

    def _tensor_container(self, value: ast.expr, at: ast.AST) -> bool:
        if isinstance(value, ast.ListComp):
            # `[torch.randn(d, n) for _ in range(k)]`: a list of tensors
            return self._plain_tensor(value.elt, value.elt)
        if isinstance(value, _CONTAINERS):
            items = list(value.elts)
        elif isinstance(value, ast.Dict):
            items = [v for k, v in zip(value.keys, value.values, strict=True) if k is not None]
            if len(items) != len(value.values):
                return False
        else:
            return False
        return bool(items) and all(self._plain_tensor(item, at) for item in items)

    # -- finding ------------------------------------------------------------------
    def _finding(
        self,
        init: ast.FunctionDef | ast.AsyncFunctionDef,
        stmt: ast.Assign | ast.AnnAssign,
        target: ast.Attribute,
        value: ast.expr,
        *,
        container: bool,
        recast: bool = False,
    ) -> Finding:
        name = target.attr
        what = "holds plain tensors" if container else "is a plain tensor"
        message = (
            f"`self.{name}` {what}: not in `state_dict`, not moved by `.to()`/`.double()`; "
            "register a buffer"
        )
        severity = None
        if recast:
            # Re-cast where it is used: it works per call, and is still missing
            # from `state_dict` (a random constant is redrawn on reload).
            severity = Severity.INFO
            message = (
                f"`self.{name}` {what}, re-cast on every use and missing from `state_dict`; "
                "register a buffer"
            )
        fixes: list[Fix] = []
        if _after_super_init(init, stmt) and _single_target(stmt):
            if not container:
                fixes = [
                    self._buffer_fix(stmt, name, value, persistent=False),
                    self._buffer_fix(stmt, name, value, persistent=True),
                ]
            elif self._same_shapes(value):
                fixes = [self._stacked_fix(stmt, name, value)]
        return self.finding(target, message, fixes=fixes, severity=severity)

    def _same_shapes(self, value: ast.expr) -> bool:
        """A list or tuple of ``torch.zeros(4)``-like calls with the same
        size arguments: ``torch.stack`` can hold them."""
        if not isinstance(value, _CONTAINERS) or len(value.elts) < 2:
            return False
        shapes = set()
        for item in value.elts:
            if not isinstance(item, ast.Call):
                return False
            qualname = self.ctx.facts.imports.qualname(item.func) or ""
            head, _, last = qualname.rpartition(".")
            if head != "torch" or last not in _SHAPE_FACTORIES:
                return False
            if any(isinstance(a, ast.Starred) for a in item.args) or any(
                kw.arg is None for kw in item.keywords
            ):
                return False
            shapes.add(shape(ast.Tuple(elts=item.args, ctx=ast.Load())))
        return len(shapes) == 1

    def _stacked_fix(self, stmt: ast.Assign | ast.AnnAssign, name: str, value: ast.expr) -> Fix:
        source = self.ctx.source
        items = source.segment(source.node_range(value))
        if isinstance(value, ast.Tuple):
            items = "[" + items.strip("()") + "]"
        torch_name = next(iter(self.ctx.facts.imports.local_names_for("torch")), "torch")
        call = f'self.register_buffer("{name}", {torch_name}.stack({items}), persistent=False)'
        return Fix(
            f"Register `{name}` as one stacked buffer (unsafe: a tensor instead of a "
            f"{'list' if isinstance(value, ast.List) else 'tuple'}, so `append` and the like fail)",
            Applicability.UNSAFE,
            build=lambda: [Edit(source.node_range(stmt), call)],
        )

    def _buffer_fix(
        self, stmt: ast.Assign | ast.AnnAssign, name: str, value: ast.expr, *, persistent: bool
    ) -> Fix:
        source = self.ctx.source
        value_text = source.segment(source.node_range(value))
        call = f'self.register_buffer("{name}", {value_text}'
        call += ")" if persistent else ", persistent=False)"

        def build() -> list[Edit]:
            return [Edit(source.node_range(stmt), call)]

        if persistent:
            return Fix(
                f"Register `{name}` as a saved buffer (unsafe: old checkpoints lack the key "
                "under strict loading)",
                Applicability.UNSAFE,
                build=build,
            )
        return Fix(f"Register `{name}` as a buffer (`persistent=False`)", Applicability.SAFE, build)

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("scale", torch.ones(4))
                    self.weight = nn.Parameter(torch.zeros(4))
                    self.extra = nn.ParameterList([nn.Parameter(torch.zeros(2))])
            """,
            note="registered buffers and parameters",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("mask", None)
                    self.mask = torch.ones(4, dtype=torch.bool)
            """,
            note="assigning a tensor to a registered buffer's name updates the buffer",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sizes = torch.tensor([1, 2, 3]).tolist()
                    self.total = torch.ones(3).sum().item()
            """,
            note="converted to Python values at once",
        ),
        Valid(
            """
            import torch

            class Stats:
                def __init__(self):
                    self.mean = torch.zeros(3)
            """,
            note="not an nn.Module",
        ),
        Valid(
            """
            import torch
            import lightning as L

            class Model(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.example_input_array = torch.zeros(1, 3, 32, 32)
            """,
            note="Lightning's `example_input_array` is meant to be a plain tensor",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self, fc):
                    super().__init__()
                    self.fc = fc
                    self.w = fc.weight
                    self.cache = None
            """,
            note="a reference to another module's parameter, or a value of unknown kind",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.anchors = torch.zeros(4)

                def _apply(self, fn, recurse=True):
                    self.anchors = fn(self.anchors)
                    return super()._apply(fn, recurse)
            """,
            note="the class moves its tensors itself",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Rotary(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.cos_cached = torch.empty(0, dim)

                def forward(self, x):
                    if x.shape[0] > self.cos_cached.shape[0]:
                        self.cos_cached = torch.ones(x.shape[0], x.shape[1], device=x.device)
                    return self.cos_cached
            """,
            note="a cache the class recomputes at run time (fairseq's rotary embedding)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Loss(nn.Module):
                def __init__(self, cfg):
                    super().__init__()
                    self.pos_weight = torch.tensor(cfg.POSITIVE_WEIGHT, dtype=torch.float32)
                    self.eps = torch.tensor(1e-6)
            """,
            note="scalars (detectron2's TensorMask): a 0-dim CPU tensor mixes with CUDA tensors",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class FreqEncoder(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.freq_bands = 2.0 ** torch.linspace(0.0, n - 1, n)
                    self.bins = torch.linspace(0.0, 1.0, n)
                    self.bins = self.bins.tolist()
            """,
            note="judged by the last assignment in `__init__`: a Python list",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Attention(nn.Module):
                def __init__(self, shape, d):
                    super().__init__()
                    self.numel = torch.prod(torch.tensor(shape))
                    self.scale = torch.sqrt(torch.tensor(d, dtype=torch.float32))
            """,
            note="0-dim values made by reductions and elementwise functions of a scalar",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Memory(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.keys = torch.zeros(n, 8)

                def forward(self, x):
                    self.keys = torch.cat([self.keys[1:], x.detach()])
                    return self.keys
            """,
            note="running state: reassigned from a fresh value outside `__init__`",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Memory(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.n = n
                    self.keys = torch.zeros(self.n, 8)

                def forward(self, x):
                    self.keys = torch.cat([self.keys[1:], x.detach()])
                    return self.keys

                def reset(self):
                    self.keys = torch.zeros(self.n, 8)
            """,
            note="running state with a reset: the reset alone would not exempt it",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Generator(nn.Module):
                def __init__(self, suppressed):
                    super().__init__()
                    self.suppress = None
                    if suppressed:
                        self.suppress = torch.Tensor(suppressed).long()

                def forward(self, lprobs):
                    if self.suppress is not None:
                        lprobs[:, self.suppress] = -1e9
                    return lprobs
            """,
            note="only ever an index (fairseq's SequenceGenerator): CPU indices work on any device",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Replay(nn.Module):
                def __init__(self, size):
                    super().__init__()
                    self.size = size
                    self.counter = torch.zeros(self.size)

                def observe(self, idx, x):
                    self.counter[idx] += 1
                    return torch.rand_like(x) * self.counter[idx] < 1

                def end_task(self):
                    self.counter = torch.zeros(self.size)
            """,
            line=9,
            note="reset to what `__init__` makes (mammoth's X-DER): state still, made on the CPU",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Generator(nn.Module):
                def __init__(self, suppressed):
                    super().__init__()
                    self.suppress = torch.Tensor(suppressed).long()

                def forward(self, lprobs):
                    lprobs[:, self.suppress] = -1e9
                    return lprobs + self.suppress.sum()
            """,
            line=8,
            note="an index that is also used in arithmetic: a device mismatch after `.cuda()`",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Variance(nn.Module):
                def __init__(self, lo, hi, steps):
                    super().__init__()
                    self.bins = torch.linspace(lo, hi, steps)
                    self.mean = torch.randn(steps)

                def forward(self, x):
                    self.mean = self.mean.type_as(x)
                    return torch.bucketize(x, self.bins.to(x.device)) + self.mean
            """,
            line=8,
            severity=Severity.INFO,
            message_contains="re-cast on every use",
            note="re-cast where used (fairseq's FastSpeech2): works per call, still not saved",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Policy(nn.Module):
                def __init__(self, scale, mean, std, d, k):
                    super().__init__()
                    self.action_scale = torch.FloatTensor(scale)
                    self.mean = torch.tensor(mean).view(-1, 1, 1)
                    self.proj = [torch.randn(d, 32) for _ in range(k)]

                def to(self, device):
                    self.action_scale = self.action_scale.to(device)
                    return super().to(device)
            """,
            line=8,
            note="a lone `to()` override proves nothing; `.view(...)` makes a shaped tensor; "
            "a list comprehension of tensors",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.scale = torch.tensor([0.5, 2.0])
            """,
            line=9,
            message_contains="`self.scale` is a plain tensor",
            fix_title="persistent=False",
            fixed="""
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.register_buffer("scale", torch.tensor([0.5, 2.0]), persistent=False)
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def __init__(self, n):
                    super(Head, self).__init__()
                    self.index = torch.arange(n).long()
            """,
            line=8,
            fix_title="saved buffer",
            fixed="""
            import torch
            from torch import nn

            class Head(nn.Module):
                def __init__(self, n):
                    super(Head, self).__init__()
                    self.register_buffer("index", torch.arange(n).long())
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = [torch.ones(4), torch.rand(4)]
            """,
            line=8,
            message_contains="holds plain tensors",
            note="same-shape factories: the stacked-buffer fix (unsafe)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.masks = [torch.ones(n), torch.zeros(2 * n)]
            """,
            line=8,
            note="different shapes: no stacked fix",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    self.offset = torch.zeros(3)
                    super().__init__()
            """,
            line=7,
            note="before `super().__init__()`: register_buffer would raise there, so no fix",
        ),
    )


def _is_self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _registered_names(info: ClassInfo) -> set[str]:
    """Names the class registers as buffers/parameters/modules anywhere."""
    names: set[str] = set()
    for node in walk(info.node):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter", "add_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def _running_names(info: ClassInfo, init: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Attributes the class reassigns outside ``__init__`` from a fresh value
    (a cache, a running state). ``self.x = self.x.type_as(h)`` is a re-cast,
    not running state (:func:`_recast_names`), nor is a reset to the value
    ``__init__`` makes (``self.counter = torch.zeros(n)`` again at the end of
    a task): the state still lives on the module, made anew on the CPU."""
    made: dict[str, set[str]] = {}
    for node in walk_scope(init):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_self_attribute(t):
                    made.setdefault(t.attr, set()).add(shape(node.value))  # type: ignore[attr-defined]
    names: set[str] = set()
    for method in info.methods.values():
        if method is init:
            continue
        for node in walk_scope(method):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if not _is_self_attribute(t) or _recasts(node.value, t.attr):  # type: ignore[attr-defined]
                        continue
                    value = node.value if isinstance(node, ast.Assign) else None
                    if value is not None and shape(value) in made.get(t.attr, ()):  # type: ignore[attr-defined]
                        continue  # a reset to what `__init__` makes
                    names.add(t.attr)  # type: ignore[attr-defined]
    return names


def _recast_names(info: ClassInfo) -> set[str]:
    """Attributes moved where they are used: ``self.bins.to(x.device)``,
    ``self.mean = self.mean.type_as(x)``."""
    names: set[str] = set()
    for method in info.methods.values():
        for node in walk_scope(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MOVES
                and _is_self_attribute(node.func.value)
            ):
                names.add(node.func.value.attr)  # type: ignore[attr-defined]
    return names


def _index_only(info: ClassInfo, name: str) -> bool:
    """Every read of ``self.<name>`` is an index (``lprobs[:, self.name]``) or a
    None test: CPU indices work on a tensor of any device, and indices built
    from the configuration need no checkpoint."""
    reads = 0
    for method in info.methods.values():
        for node in walk_scope(method):
            if not (
                isinstance(node, ast.Attribute)
                and node.attr == name
                and _is_self_attribute(node)
                and isinstance(node.ctx, ast.Load)
            ):
                continue
            reads += 1
            up = parent(node)
            if isinstance(up, ast.Tuple):
                up = parent(up)
            if isinstance(up, ast.Subscript) and up.value is not node:
                continue  # the index of a subscript
            if (
                isinstance(up, ast.Compare)
                and len(up.ops) == 1
                and isinstance(up.ops[0], (ast.Is, ast.IsNot))
            ):
                continue
            return False
    return reads > 0


def _recasts(value: ast.expr | None, name: str) -> bool:
    """``self.<name>.to(...)`` / ``.type_as(...)`` / ``.cuda()`` (chained), or
    ``[v.cuda() for v in self.<name>]``."""
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)) and len(value.generators) == 1:
        loop = value.generators[0]
        source = loop.iter
        if (
            isinstance(loop.target, ast.Name) and _is_self_attribute(source) and source.attr == name  # type: ignore[attr-defined]
        ):
            elt = value.elt
            while isinstance(elt, ast.Call) and isinstance(elt.func, ast.Attribute):
                if elt.func.attr not in _MOVES and elt.func.attr not in ("float", "half", "double"):
                    return False
                elt = elt.func.value
            return isinstance(elt, ast.Name) and elt.id == loop.target.id and elt is not value.elt
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr not in _MOVES and value.func.attr not in ("float", "half", "double"):
            return False
        value = value.func.value
        if _is_self_attribute(value) and value.attr == name:  # type: ignore[attr-defined]
            return True
    return False


def _reassigned_later(
    init: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt, name: str
) -> bool:
    """A later ``self.<name> = ...`` in ``__init__`` (``self.bins = self.bins.tolist()``)."""
    for node in walk_scope(init):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno > stmt.lineno:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_self_attribute(t) and t.attr == name for t in targets):  # type: ignore[attr-defined]
                return True
    return False


def _after_super_init(init: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt) -> bool:
    """Is there a ``super().__init__(...)`` (or ``Base.__init__(self, ...)``)
    call before ``stmt``? ``register_buffer`` raises before it."""
    for node in walk_scope(init):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
            and (node.lineno, node.col_offset) < (stmt.lineno, stmt.col_offset)
        ):
            return True
    return False


def _single_target(stmt: ast.Assign | ast.AnnAssign) -> bool:
    return isinstance(stmt, ast.AnnAssign) or len(stmt.targets) == 1
