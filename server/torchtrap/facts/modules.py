"""nn.Module facts: which layers behave differently in training mode, what
may be a module class, what switches a model's mode.

Which constructor built a model value, and who calls a function, are value
questions: :mod:`torchtrap.values.models` (``ctx.values.models``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchtrap.facts.classes import ClassInfo, ClassTable
from torchtrap.facts.index import enclosing_function, parent
from torchtrap.facts.tensors import words

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
FUNCTIONAL_DROPOUT = frozenset(
    {
        "torch.nn.functional.dropout",
        "torch.nn.functional.dropout2d",
        "torch.nn.functional.dropout1d",
    }
)
# torch.nn layers that hold no parameters or buffers.
STATELESS_LAYERS = words(
    """
    Identity ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax
    Softplus Hardtanh Hardswish Hardsigmoid Dropout Dropout1d Dropout2d Dropout3d Flatten
    Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
    AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d Upsample
    PixelShuffle PixelUnshuffle ZeroPad2d ConstantPad2d ReflectionPad2d ReplicationPad2d
    """
)
_CONTAINER_MODULES = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})
# Wrappers whose train/eval mode and layers are those of the module they wrap (first argument).
MODULE_WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
_TRANSFORMS = ("torchvision.transforms.", "torchvision.transforms.v2.")


def holds_no_state(value: ast.expr, qualname: Callable[[ast.AST], str | None]) -> bool:
    """A module built so that it has no parameters or buffers: torchvision
    transforms (``T.Compose``/``nn.Sequential`` of ``T.RandomCrop(...)``,
    ...), activations, pooling, ``nn.Dropout`` and containers of only them.
    Pickling it into workers copies no tensor."""
    if not isinstance(value, ast.Call):
        return False
    name = qualname(value.func) or ""
    if name.startswith(_TRANSFORMS) and not name.endswith(("Lambda", "LinearTransformation")):
        parts = [*value.args, *(k.value for k in value.keywords)]
        return all(holds_no_state(p, qualname) for p in parts if isinstance(p, ast.Call)) and all(
            holds_no_state(e, qualname)
            for p in parts
            if isinstance(p, (ast.List, ast.Tuple))
            for e in p.elts
        )
    head, _, last = name.rpartition(".")
    if head == "torch.nn" and last in STATELESS_LAYERS:
        return True
    if name in _CONTAINER_MODULES:
        items: list[ast.expr] = []
        for arg in value.args:
            items.extend(arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg])
        return (
            bool(items) and not value.keywords and all(holds_no_state(i, qualname) for i in items)
        )
    return False


_REGISTERS_STATE = frozenset({"register_parameter", "add_module", "register_module"})
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "str", "bool"})


def holds_only_buffers(cls: ast.ClassDef, qualname: Callable[[ast.AST], str | None]) -> bool:
    """A class deriving directly from ``nn.Module`` that registers no layer
    and no Parameter: every ``self.x = ...`` of its methods is a number, a
    string or a tensor from a library function, and its state is buffers
    (``register_buffer``): a feature extractor (a window, a mel filterbank).
    Pickled into a worker it copies constants, no weights. Anything this
    cannot read (a project function's result, an argument) counts as state."""
    if not cls.bases or any(qualname(b) != "torch.nn.Module" for b in cls.bases):
        return False
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        plain = _scalar_parameters(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in _REGISTERS_STATE:
                    return False
                if isinstance(func, ast.Name) and func.id == "setattr":
                    return False
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_self_attribute(t) for t in targets) and not _constant_state(
                    node.value, plain, qualname
                ):
                    return False
    return True


def _self_attribute(node: ast.expr) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_self_attribute(e) for e in node.elts)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _scalar_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters known to be plain values: a constant default or a scalar annotation."""
    args = [*fn.args.posonlyargs, *fn.args.args]
    defaulted = [a.arg for a in args][len(args) - len(fn.args.defaults) :]
    defaults = dict(zip(defaulted, fn.args.defaults, strict=True))
    found = set()
    for arg in [*args, *fn.args.kwonlyargs]:
        default = defaults.get(arg.arg)
        annotation = arg.annotation
        if isinstance(default, ast.Constant) or (
            isinstance(annotation, ast.Name) and annotation.id in _SCALAR_ANNOTATIONS
        ):
            found.add(arg.arg)
    for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if isinstance(default, ast.Constant):
            found.add(arg.arg)
    return found


def _constant_state(
    value: ast.expr, plain: set[str], qualname: Callable[[ast.AST], str | None]
) -> bool:
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        return value.id in plain
    if isinstance(value, ast.BinOp):
        return _constant_state(value.left, plain, qualname) and _constant_state(
            value.right, plain, qualname
        )
    if isinstance(value, ast.UnaryOp):
        return _constant_state(value.operand, plain, qualname)
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_constant_state(e, plain, qualname) for e in value.elts)
    if isinstance(value, ast.Call):
        name = qualname(value.func) or ""
        last = name.rsplit(".", 1)[-1]
        # A library function (torch.hann_window, numpy.linspace), not a class.
        return (
            "." in name
            and not name.startswith("torch.nn.")
            and last[:1].islower()
            and all(
                _constant_state(a, plain, qualname)
                for a in [*value.args, *(k.value for k in value.keywords)]
            )
        )
    return False


# Methods that switch a module's mode (or return it switched).
MODE_METHODS = frozenset({"eval", "train"})


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
        mode = call_argument(call, "mode", 0)
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


def call_argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def inert_layer(name: str, call: ast.Call) -> bool:
    """``nn.Dropout(0.0)`` / ``nn.BatchNorm2d(c, track_running_stats=False)``
    act the same in both modes."""
    if "Dropout" in name:
        p = call_argument(call, "p", 0)
        return isinstance(p, ast.Constant) and p.value in (0, 0.0)
    stats = call_argument(call, "track_running_stats", 4)
    return isinstance(stats, ast.Constant) and stats.value is False


def parent_class(function: ast.AST) -> ast.ClassDef | None:
    owner = parent(function)
    return owner if isinstance(owner, ast.ClassDef) else None


def parent_class_of(node: ast.AST) -> ast.ClassDef | None:
    function = enclosing_function(node)
    while function is not None:
        cls = parent_class(function)
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
        cls = parent_class(function)
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
