"""Questions about one expression that the whole-program model answers
when the module-level value layer cannot: what a module's ``forward``
returns through calls in other functions and files, a method such as
``self.pi(s)``, a factory's ``Sequential``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchtrap.core.objects import (
    BoundObj,
    ClassObj,
    ContainerObj,
    ExtAttrObj,
    ExtCallObj,
    FuncObj,
    InstObj,
    ModuleObj,
    Obj,
    Site,
)
from torchtrap.core.payload import is_module
from torchtrap.core.solver import SEQUENTIALS
from torchtrap.facts.modules import TORCHVISION_TRAIN_MODE_PREFIXES, TRAIN_MODE_LAYERS
from torchtrap.values.program import Model
from torchtrap.values.tensor_ops import (
    KEEP_METHODS,
    SIGMOID_FUNCTIONS,
    SIGMOID_MODULES,
    SOFTMAX_FUNCTIONS,
    SOFTMAX_MODULES,
)

SOFTMAX_METHODS = frozenset({"softmax"})
SIGMOID_METHODS = frozenset({"sigmoid"})
MAX_KEEP_STEPS = 8


@dataclass(frozen=True)
class ProgramProbability:
    kind: str  # "softmax" or "sigmoid"
    made: Site  # where the probability is computed


def program_probability(model: Model, node: ast.expr) -> ProgramProbability | None:
    """A softmax or sigmoid output on every path, as the model sees it."""
    twin = model.twin(node)
    if twin is None:
        return None
    values = model.analysis.values(twin)
    if not values:
        return None
    # Calling a library `Sequential` gives its chain's output and an opaque
    # value for the call itself: the chain says what comes out.
    chained = [o for o in values if not _sequential_call(o)]
    found = [_probability(obj, MAX_KEEP_STEPS) for obj in chained or values]
    if any(f is None for f in found):
        return None  # a value that is not a probability on some path
    kinds = {f.kind for f in found if f is not None}
    first = found[0]
    return first if len(kinds) == 1 else None


def _sequential_call(obj: Obj) -> bool:
    callee = obj.callee if isinstance(obj, ExtCallObj) else None
    return isinstance(callee, ExtCallObj) and callee.type_name in SEQUENTIALS and bool(callee.args)


def _probability(obj: Obj, steps: int) -> ProgramProbability | None:
    if isinstance(obj, ExtAttrObj) and obj.attr == "[]" and steps > 0:
        return _probability(obj.base, steps - 1)  # p[..., 0] is still p
    if not isinstance(obj, ExtCallObj) or steps <= 0:
        return None
    name = obj.type_name
    if name in SOFTMAX_FUNCTIONS:
        return ProgramProbability("softmax", obj.site)
    if name in SIGMOID_FUNCTIONS:
        return ProgramProbability("sigmoid", obj.site)
    callee = obj.callee
    if isinstance(callee, ExtCallObj):  # calling a module object: nn.Softmax(dim=1)(x)
        if callee.type_name in SOFTMAX_MODULES:
            return ProgramProbability("softmax", obj.site)
        if callee.type_name in SIGMOID_MODULES:
            return ProgramProbability("sigmoid", obj.site)
        return None
    if isinstance(callee, ExtAttrObj):
        if callee.attr in SOFTMAX_METHODS:
            return ProgramProbability("softmax", obj.site)
        if callee.attr in SIGMOID_METHODS:
            return ProgramProbability("sigmoid", obj.site)
        if callee.attr in KEEP_METHODS:  # p.gather(...), p.view(...): still p
            return _probability(callee.base, steps - 1)
    return None


def program_holds_only(model: Model, node: ast.expr, kind: str) -> bool:
    """Every object the model says ``node`` holds is a ``kind``: "module"
    (an ``nn.Module``: a project subclass or a layer), "optimizer" or
    "scheduler"; False when it holds nothing known."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    if not values:
        return False
    if kind == "module":
        return all(is_module(model.analysis, obj) for obj in values)
    return all(_optim_kind(obj) == kind for obj in values)


def _optim_kind(obj: Obj) -> str | None:
    name = obj.type_name if isinstance(obj, ExtCallObj) else None
    if not name or not name.startswith("torch.optim."):
        return None
    if name.startswith("torch.optim.lr_scheduler."):
        return "scheduler"
    last = name.rsplit(".", 1)[-1]
    return "optimizer" if last[:1].isupper() else None


def program_callee(model: Model, call: ast.Call, own: bool = True) -> FuncObj | None:
    """The one project function (or method) ``call`` runs on every path, as
    the model sees it: an imported helper, a method of another object, a
    nested function. ``own``: ``call`` is a node of the linted file (else a
    node of the model's own trees). None for a class, a classmethod, a
    lambda, several candidates or none."""
    node = model.twin(call.func) if own else call.func
    values = model.analysis.values(node) if node is not None else None
    if not values:
        return None
    found: set[FuncObj] = set()
    for obj in values:
        if isinstance(obj, BoundObj):
            obj = obj.func
        if not isinstance(obj, FuncObj):
            return None
        found.add(obj.origin)
    if len(found) != 1:
        return None
    func = found.pop()
    if func.kind not in ("function", "staticmethod") or isinstance(func.node, ast.Lambda):
        return None
    return func


def program_module_types(model: Model, node: ast.expr) -> frozenset[str] | None:
    """The library classes of the module objects ``node`` holds on every
    path (``torch.nn.CrossEntropyLoss`` for a criterion built by a factory,
    a dict of constructors, another file); None when some value is not a
    library module's instance or nothing is known."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    if not values:
        return None
    names: set[str] = set()
    for obj in values:
        name = obj.type_name if isinstance(obj, ExtCallObj) else None
        if not name or not name.rsplit(".", 1)[-1][:1].isupper():
            return None
        names.add(name)
    return frozenset(names)


# Library modules known to have no train-mode behaviour of their own, and
# containers whose behaviour is their members'.
_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
# torch.nn modules with a dropout inside (on by default, or when given one).
_DROPOUT_INSIDE = ("Transformer", "MultiheadAttention")
_RNNS = frozenset({"RNN", "LSTM", "GRU"})
# Libraries whose calls make values, not modules.
_PLAIN_LIBRARIES = ("torch.", "numpy.", "math.", "<builtin>.", "builtins.")
MAX_LAYER_OBJECTS = 400


def program_train_mode_layers(model: Model, node: ast.expr) -> bool | None:
    """Does the module ``node`` holds behave differently in train mode, as the
    model sees it: True when one of its parts (transitively) is a
    Dropout/BatchNorm layer, a torchvision network that has them, or its
    classes call a functional dropout; False when every part is known and none
    is; None when a value or a part is not known (a library model, an
    attribute the model has no value for)."""
    twin = model.twin(node)
    found = model.analysis.values(twin) if twin is not None else None
    # A module object is no model (`model = model.Net()` rebinds the
    # imported module's name): what `.eval()` is called on is the rest.
    values = [o for o in found or () if not isinstance(o, ModuleObj)]
    if not values or not all(is_module(model.analysis, obj) for obj in values):
        return None
    solver = model.analysis.solver
    queue: list[Obj] = sorted(values, key=lambda o: repr(type(o)))
    seen: set[Obj] = set()
    while queue:
        obj = queue.pop()
        if obj in seen:
            continue
        seen.add(obj)
        if len(seen) > MAX_LAYER_OBJECTS:
            return None
        if isinstance(obj, ExtCallObj):
            name = obj.type_name or ""
            head, _, last = name.rpartition(".")
            if head.startswith("torchvision.models"):
                if last.startswith(TORCHVISION_TRAIN_MODE_PREFIXES):
                    return True
                return None
            if head != "torch.nn":
                if name.startswith(_PLAIN_LIBRARIES):
                    continue  # a tensor, a device, a number: not a module
                return None  # another library's object: maybe a model
            if last in TRAIN_MODE_LAYERS or last.startswith(_DROPOUT_INSIDE):
                return True
            if last in _RNNS and "dropout" in obj.kwargs:
                return True
            if name in _CONTAINERS:
                for arg in [*obj.args, *obj.kwargs.values()]:
                    queue.extend(solver.pts[arg])
        elif isinstance(obj, InstObj) and is_module(model.analysis, obj):
            for klass in solver.mro(obj.cls):
                if isinstance(klass, ClassObj) and _calls_functional_dropout(klass.node):
                    return True
            assigned = {
                a for c in solver.mro(obj.cls) if isinstance(c, ClassObj) for a in c.instance_attrs
            }
            for attr in solver.field_keys.get(obj, ()):
                held = solver.pts[solver.field(obj, attr)]
                if not held and attr in assigned:
                    return None  # an attribute the model has no value for
                queue.extend(held)
        elif isinstance(obj, ContainerObj):
            element = solver.keyed.get(("e", obj, "*"))
            if element is not None:
                queue.extend(solver.pts[element])
    return False


def _calls_functional_dropout(cls: ast.ClassDef) -> bool:
    """A call in the class spelled like a functional dropout or batch norm
    (``F.dropout(x, self.p, self.training)``): the class may behave by mode."""
    for sub in ast.walk(cls):
        if isinstance(sub, ast.Call):
            func = sub.func
            spelled = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if "dropout" in spelled.lower() or "batch_norm" in spelled.lower():
                return True
    return False
