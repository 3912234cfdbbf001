"""nn.Module facts: which models behave differently in training mode, which
class a model value was built from, and who calls a function.

Two questions are single functions on purpose, so that a project-wide index
can answer them across files later: :meth:`ModelFacts.model_constructor`
(which constructor built this model value) and :meth:`ModelFacts.callers_of`
(which calls reach this function). Both answer within the one module now.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.index import enclosing_function, parent, walk
from torchtrap.facts.tensors import MODULE_SELF_METHODS, TensorFacts, words

# torch.nn layers whose forward depends on `module.training`.
TRAIN_MODE_LAYERS = words(
    """
    Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout
    BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LazyBatchNorm1d LazyBatchNorm2d
    LazyBatchNorm3d
    """
)
# torchvision model builders whose networks hold BatchNorm or Dropout.
TORCHVISION_TRAIN_MODE_PREFIXES = (
    "resnet",
    "resnext",
    "wide_resnet",
    "vgg",
    "alexnet",
    "densenet",
    "mobilenet",
    "efficientnet",
    "inception",
    "googlenet",
    "squeezenet",
    "mnasnet",
    "shufflenet",
    "regnet",
)
_FUNCTIONAL_DROPOUT = frozenset(
    {
        "torch.nn.functional.dropout",
        "torch.nn.functional.dropout2d",
        "torch.nn.functional.dropout1d",
    }
)
# Methods that switch a module's mode (or return it switched).
MODE_METHODS = frozenset({"eval", "train"})
_MAX_DEPTH = 4


@dataclass(frozen=True)
class ModelOrigin:
    """Where a model value comes from: the constructor call, and whether the
    chain that built it already switched it to eval mode (``Net().eval()``)."""

    call: ast.Call
    eval_mode: bool = False


@dataclass(frozen=True)
class CallSite:
    """A call of a function: ``call`` runs inside ``caller`` (None at module level)."""

    call: ast.Call
    caller: ast.FunctionDef | ast.AsyncFunctionDef | None


class ModelFacts:
    """Per-module cache; rules create one in ``check()``."""

    def __init__(self, tensors: TensorFacts) -> None:
        self.tensors = tensors
        self.facts = tensors.facts
        self.imports = tensors.imports
        self.classes = tensors.classes
        self._layers: dict[str, list[ast.AST]] = {}
        self._calls_by_name: dict[str, list[ast.Call]] | None = None
        self._relative: set[str] | None = None

    @property
    def relative_imports(self) -> set[str]:
        """Names bound by ``from .x import y`` (the import table keeps only
        absolute imports); the project index resolves them."""
        if self._relative is None:
            self._relative = {
                alias.asname or alias.name
                for node in self.facts.index.of(ast.ImportFrom)
                if node.level
                for alias in node.names
                if alias.name != "*"
            }
        return self._relative

    # -- train-mode layers ------------------------------------------------------
    def train_mode_layers(self, info: ClassInfo) -> list[ast.AST]:
        """The Dropout/BatchNorm layers (or ``F.dropout(..., training=self.training)``
        calls) a local module class holds, also through local submodule
        classes and local bases; empty when none is evident."""
        if info.name in self._layers:
            return self._layers[info.name]
        self._layers[info.name] = []  # cycle guard
        found: list[ast.AST] = []
        for node in walk(info.node):
            if isinstance(node, ast.Call) and node is not info.node:
                found.extend(self._layers_of_call(node))
            if found:
                break
        if not found:
            for base in info.bases:
                local = self.classes.get(base.id) if isinstance(base, ast.Name) else None
                if local is not None and local is not info:
                    found.extend(self.train_mode_layers(local))
        self._layers[info.name] = found
        return found

    def layers_of_constructor(self, call: ast.Call) -> list[ast.AST]:
        """Train-mode layers of the model a constructor call builds."""
        qualname = self.imports.qualname(call.func)
        if qualname is not None:
            if qualname == "torch.nn.Sequential":
                return [n for arg in call.args for n in self._layers_in(arg)]
            return self._layers_of_call(call)
        local = self.classes.class_of_call(call)
        if local is not None and self.classes.is_module(local):
            return self.train_mode_layers(local)
        return []

    def _layers_in(self, expr: ast.expr) -> list[ast.AST]:
        return self.layers_of_constructor(expr) if isinstance(expr, ast.Call) else []

    def _layers_of_call(self, call: ast.Call) -> list[ast.AST]:
        qualname = self.imports.qualname(call.func)
        if qualname is None:
            local = self.classes.class_of_call(call)
            if local is not None and self.classes.is_module(local):
                return self.train_mode_layers(local)
            return []
        head, _, last = qualname.rpartition(".")
        if head == "torch.nn" and last in TRAIN_MODE_LAYERS:
            return [] if inert_layer(last, call) else [call]
        if qualname in _FUNCTIONAL_DROPOUT:
            # Only `training=self.training` follows the mode; the default
            # (training=True) drops in both modes.
            training = _argument(call, "training", 2)
            if isinstance(training, ast.Attribute) and training.attr == "training":
                return [call]
            return []
        if head.startswith("torchvision.models") and last.startswith(
            TORCHVISION_TRAIN_MODE_PREFIXES
        ):
            return [call]
        return []

    # -- model values -----------------------------------------------------------
    def model_constructor(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> ModelOrigin | None:
        """The constructor call that built the model ``expr`` at ``at``: a
        local name or ``self.attr`` bound to ``Net(...)`` (through
        ``.to()``/``.cuda()``/... chains), in this module. None when unknown.

        A class imported from another file (also relatively) gives its
        constructor call: the project index knows its layers (TT207 asks).
        Not followed: a factory function, a model passed in from another file.
        """
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            return self._origin_of_value(expr, depth)
        values = self.tensors.values_of(expr, at)
        if values is None or len(values) != 1:
            return None
        value, _ = values[0]
        return self._origin_of_value(value, depth)

    def _origin_of_value(self, value: ast.expr, depth: int) -> ModelOrigin | None:
        eval_mode = False
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in MODULE_SELF_METHODS
        ):
            if value.func.attr in MODE_METHODS:
                eval_mode = eval_mode or is_eval_call(value)
            value = value.func.value
        if not isinstance(value, ast.Call):
            return None
        if (
            isinstance(value.func, ast.Name)
            and self.classes.get(value.func.id) is None
            and self.imports.qualname(value.func) is None
            and value.func.id not in self.relative_imports
        ):
            return None  # a local factory function: not followed (yet)
        return ModelOrigin(value, eval_mode)

    # -- calls ------------------------------------------------------------------
    def callers_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[CallSite]:
        """Calls of a module-level function by its name in this module, or of
        a method through ``self.name(...)`` in its own class.

        Extension point for a project index: calls from other files.
        """
        if self._calls_by_name is None:
            by_name: dict[str, list[ast.Call]] = {}
            for call in self.facts.index.of(ast.Call):
                func = call.func
                if isinstance(func, ast.Name):
                    by_name.setdefault(func.id, []).append(call)
                elif (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "self"
                ):
                    by_name.setdefault("self." + func.attr, []).append(call)
            self._calls_by_name = by_name
        owner = enclosing_function(function)
        scope_parent = _parent_class(function)
        if scope_parent is not None:
            key = "self." + function.name
            calls = [
                c for c in self._calls_by_name.get(key, ()) if _parent_class_of(c) is scope_parent
            ]
        elif owner is None:
            calls = list(self._calls_by_name.get(function.name, ()))
        else:
            calls = [
                c
                for c in self._calls_by_name.get(function.name, ())
                if enclosing_function(c) is owner
            ]
        return [CallSite(c, enclosing_function(c)) for c in calls if c is not function]


def may_be_module(info: ClassInfo, classes: ClassTable) -> bool:
    """An nn.Module, or a class with a base this file cannot resolve
    (``class Model(BaseFairseqModel)``): it may be one."""
    if classes.is_module(info):
        return True
    return any(
        not (isinstance(b, ast.Name) and (b.id == "object" or classes.get(b.id)))
        for b in info.bases
    )


def is_eval_call(call: ast.Call) -> bool:
    """``m.eval()``, ``m.train(False)``, ``m.train(mode=False)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "eval" and not call.args:
        return True
    if func.attr == "train":
        mode = _argument(call, "mode", 0)
        return isinstance(mode, ast.Constant) and mode.value is False
    return False


def argument_for(
    call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> ast.expr | None:
    """The expression a call passes for ``function``'s parameter ``name``."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if name not in positional:
        return None
    index = positional.index(name)
    if isinstance(call.func, ast.Attribute) and positional[:1] == ["self"]:
        index -= 1  # `self.method(x)` binds `self` itself
    if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return None
    return call.args[index] if 0 <= index < len(call.args) else None


def _argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def inert_layer(name: str, call: ast.Call) -> bool:
    """``nn.Dropout(0.0)`` / ``nn.BatchNorm2d(c, track_running_stats=False)``
    act the same in both modes."""
    if "Dropout" in name:
        p = _argument(call, "p", 0)
        return isinstance(p, ast.Constant) and p.value in (0, 0.0)
    stats = _argument(call, "track_running_stats", 4)
    return isinstance(stats, ast.Constant) and stats.value is False


def _parent_class(function: ast.AST) -> ast.ClassDef | None:
    owner = parent(function)
    return owner if isinstance(owner, ast.ClassDef) else None


def _parent_class_of(node: ast.AST) -> ast.ClassDef | None:
    function = enclosing_function(node)
    while function is not None:
        cls = _parent_class(function)
        if cls is not None:
            return cls
        function = enclosing_function(function)
    return None


def enclosing_method(
    node: ast.AST,
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef] | None:
    """The method (a function defined directly in a class) that ``node`` is
    in, also through functions nested in it, with its class; None outside
    a class."""
    function = enclosing_function(node)
    while function is not None:
        cls = _parent_class(function)
        if cls is not None:
            return function, cls
        function = enclosing_function(function)
    return None


def self_name(method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of an instance method's first parameter; None for static
    and class methods and methods without parameters."""
    for decorator in method.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod"):
            return None
    params = [*method.args.posonlyargs, *method.args.args]
    return params[0].arg if params else None


# torch.nn layers that hold no parameters and no buffers: losing them from
# `parameters()`/`state_dict()` loses nothing (Dropout still follows the mode).
STATELESS_LAYERS = words(
    """
    ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax Softmax2d LogSoftmax
    Softmin Softplus Softsign Softshrink Hardshrink Hardtanh Hardswish Hardsigmoid Tanhshrink
    Threshold GLU LogSigmoid Identity Flatten Unflatten Upsample UpsamplingNearest2d
    UpsamplingBilinear2d PixelShuffle PixelUnshuffle ChannelShuffle CosineSimilarity
    PairwiseDistance MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d
    AdaptiveMaxPool3d LPPool1d LPPool2d LPPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d
    ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d
    ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d
    CircularPad1d CircularPad2d CircularPad3d Fold Unfold
    Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout
    """
)
