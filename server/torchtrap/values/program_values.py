"""Questions about one expression that the whole-program model answers
when the module-level value layer cannot: what a module's ``forward``
returns through calls in other functions and files, a method such as
``self.pi(s)``, a factory's ``Sequential``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchtrap.core.analysis import Analysis
from torchtrap.core.objects import (
    BoundObj,
    ClassObj,
    ConstObj,
    ContainerObj,
    ExtAttrObj,
    ExtCallObj,
    ExternalObj,
    FuncObj,
    InstObj,
    ModuleObj,
    Obj,
    Site,
)
from torchtrap.core.payload import holds_parameters, is_module, loaders
from torchtrap.core.solver import MODULE_SELF_METHODS, NORMALISED, SEQUENTIALS, Solver
from torchtrap.facts.index import enclosing_function
from torchtrap.facts.modules import (
    TORCHVISION_TRAIN_MODE_PREFIXES,
    TRAIN_MODE_LAYERS,
    inert_layer,
)
from torchtrap.facts.remote import same_file
from torchtrap.findings import RelatedLocation
from torchtrap.project.summary import Span
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


def value_path(
    model: Model, made: Site, note: str, here: str, at: ast.AST
) -> list[RelatedLocation]:
    """The path a value took to the finding at ``at`` (a node of the linted
    file ``here``), as related rows: each call it came out of (outermost
    first: ``net.pi(s)`` in train.py), then where it is made
    (``F.softmax(...)`` in nets.py) with ``note``. The calls that led into
    the finding's own function (``ratio(...)`` at the bottom of the file)
    are its caller's context, not the value's path: left out."""
    calls = model.calls_to(made)
    function = enclosing_function(at)
    if function is not None:
        first, last = function.lineno, function.end_lineno or function.lineno
        inside = [
            i
            for i, (path, rng, _f) in enumerate(calls)
            if same_file(path, here) and first <= rng.start.line <= last
        ]
        calls = calls[inside[0] :] if inside else calls
    rows = [
        RelatedLocation(rng, f"made inside {func}, called here", path=other_path(path, here))
        for path, rng, func in calls
    ]
    where = model.where(made.module, made.line, made.col)
    if where is not None:
        rows.append(RelatedLocation(where[1], note, path=other_path(where[0], here)))
    return rows


def other_path(path: str, here: str) -> str | None:
    """A related row's path: None for the linted file ``here`` itself."""
    return None if same_file(path, here) else path


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
    solver = model.analysis.solver
    found = [_probability(solver, obj, MAX_KEEP_STEPS) for obj in chained or values]
    if any(f is None for f in found):
        return None  # a value that is not a probability on some path
    kinds = {f.kind for f in found if f is not None}
    first = found[0]
    return first if len(kinds) == 1 else None


def _sequential_call(obj: Obj) -> bool:
    callee = obj.callee if isinstance(obj, ExtCallObj) else None
    return isinstance(callee, ExtCallObj) and callee.type_name in SEQUENTIALS and bool(callee.args)


def _probability(solver: Solver, obj: Obj, steps: int) -> ProgramProbability | None:
    if isinstance(obj, ExtAttrObj) and obj.attr == "[]" and steps > 0:
        return _probability(solver, obj.base, steps - 1)  # p[..., 0] is still p
    if not isinstance(obj, ExtCallObj) or steps <= 0:
        return None
    name = obj.type_name
    if name == NORMALISED:
        return ProgramProbability("normalised", obj.site) if _normalises(solver, obj) else None
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
            return _probability(solver, callee.base, steps - 1)
    return None


def _normalises(solver: Solver, obj: ExtCallObj) -> bool:
    """A division the walker took for a normalisation is one: the function
    form's callee is ``torch.sum``, and dimensions spelled differently
    (``torch.sum(y, dim).unsqueeze(1)``) hold the same constant on every
    path (``dim`` a parameter every caller passes 1)."""
    called = obj.kwargs.get("sum")
    if called is not None:
        names = {o.name if isinstance(o, ExternalObj) else None for o in solver.pts[called]}
        if names != {"torch.sum"}:
            return False
    if not obj.args:
        return True  # spelled the same
    held = [solver.pts[arg] for arg in obj.args]
    values = [{o.value if isinstance(o, ConstObj) else None for o in h} for h in held]
    return len(values[0]) == 1 and values[0] == values[1] and None not in values[0]


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


def program_may_define(model: Model, node: ast.expr, method: str) -> bool:
    """``node`` may hold an instance of a project class whose own method
    ``method`` runs for ``node.method(...)`` (a ``Range.clamp`` that works in
    place, defined in another file), as the model sees it."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    solver = model.analysis.solver
    for obj in values or ():
        if isinstance(obj, InstObj) and any(
            isinstance(c, ClassObj) and method in c.defines for c in solver.mro(obj.cls)
        ):
            return True
    return False


PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def program_holds_stateful_modules(model: Model, node: ast.expr) -> bool:
    """Every object ``node`` holds is an ``nn.Module`` with state: a layer
    that is not stateless, or a project module with a field that holds a
    parameter or such a module (a parameter-free helper module such as a
    ``Clone()`` loses nothing when it is not registered)."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    if not values:
        return False
    return all(_stateful(model.analysis, obj, 2) for obj in values)


def _stateful(analysis: Analysis, obj: Obj, depth: int) -> bool:
    if not holds_parameters(analysis, obj):
        return False
    if not isinstance(obj, InstObj):
        return True
    solver = analysis.solver
    for attr in solver.field_keys.get(obj, ()):
        for inner in solver.pts[solver.field(obj, attr)]:
            if isinstance(inner, ExtCallObj) and inner.type_name in PARAMETERS:
                return True
            if depth > 0 and _stateful(analysis, inner, depth - 1):
                return True
    return False


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
        if _moved_copy(obj, values):
            continue  # `nn.CrossEntropyLoss().cuda()`: the module is in `values` too
        if isinstance(obj, ExtAttrObj) and obj.attr == "forward":
            obj = obj.base  # `criterion.forward(out, y)` is the module's call
        name = obj.type_name if isinstance(obj, ExtCallObj) else None
        if not name or not name.rsplit(".", 1)[-1][:1].isupper():
            return None
        names.add(name)
    return frozenset(names)


def _moved_copy(obj: Obj, values: frozenset[Obj]) -> bool:
    """``module.cuda()``'s own value beside the module it returns."""
    callee = obj.callee if isinstance(obj, ExtCallObj) else None
    return (
        isinstance(callee, ExtAttrObj)
        and callee.attr in MODULE_SELF_METHODS
        and callee.base in values
    )


def program_worker_count(model: Model, call: ast.Call) -> str | None:
    """What the model says the ``num_workers`` of the DataLoader ``call``
    (a node of the linted file) is on every path: "zero" (plain constants
    only: a command-line default or a config file's value may be overridden
    at run time) or "some" (> 0 on some path: ``build_loader(0)`` here,
    ``build_loader(4)`` there); None when unknown."""
    here = [
        loader
        for loader in loaders(model.analysis, model.module)
        if (loader.obj.site.line, loader.obj.site.col) == (call.lineno, call.col_offset)
    ]
    # A helper analysed once per call site: its copies say what each call
    # passes; the shared definition then sees only the parameter's default.
    copies = [loader for loader in here if loader.obj.site.ctx]
    found = {
        loader.workers.kind if loader.workers.kind != "zero" or not loader.workers.origin else ""
        for loader in copies or here
    }
    if "some" in found:
        return "some"  # one call with workers makes the bug real there
    return "zero" if found == {"zero"} else None


def program_train_mode_classes(model: Model, node: ast.expr) -> list[str] | None:
    """The project module classes (qualified names) whose instances ``node``
    holds on every path, when no call anywhere in the model may switch one
    of them out of training mode (``m.eval()``, ``m.train(False)`` on a
    value that holds one, or on a value the model cannot name); None
    otherwise. A model built in another file and imported as a global."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    if not values:
        return None
    insts = [obj for obj in values if isinstance(obj, InstObj)]
    if len(insts) != len(values) or not all(is_module(model.analysis, o) for o in insts):
        return None
    receivers, passed = _mode_receivers(model)
    if any(_may_switch(recv, values) for recv in receivers):
        return None
    if any(values & arg for arg in passed):
        return None  # handed to a library or unknown function, which may switch it
    return sorted({obj.cls.qname for obj in insts})


def _may_switch(receiver: frozenset[Obj] | None, objs: frozenset[Obj]) -> bool:
    if receiver is None:
        return True  # a receiver the model cannot name may be one of them
    return any(obj in objs or not isinstance(obj, InstObj) for obj in receiver)


# Builtins that cannot switch a module's mode.
_INERT_BUILTINS = frozenset(
    {"super", "isinstance", "type", "id", "print", "len", "hasattr", "repr", "str"}
)


def _mode_receivers(
    model: Model,
) -> tuple[list[frozenset[Obj] | None], list[frozenset[Obj]]]:
    """What the receiver of every ``x.eval()`` / ``x.train(<arg>)`` call of
    the model's modules holds, and what every argument of a call the model
    cannot resolve to project code holds; found once per model."""
    key = "mode receivers"
    found = model.analysis.memo.get(key)
    if found is not None:
        return found
    receivers: list[frozenset[Obj] | None] = []
    passed: list[frozenset[Obj]] = []
    analysis = model.analysis
    for module in analysis.solver.program.modules.values():
        for call in ast.walk(module.tree):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            if isinstance(func, ast.Attribute):
                attr = func.attr
                switches = (attr == "eval" and not call.args) or (
                    attr == "train" and bool(call.args or call.keywords)
                )
                if switches:
                    receivers.append(analysis.values(func.value))
                    continue
            if isinstance(func, ast.Name) and func.id in _INERT_BUILTINS:
                continue  # `super(Net, self)`, `isinstance(m, nn.Module)`
            callees = analysis.values(func)
            if callees and all(isinstance(c, (FuncObj, BoundObj, ClassObj)) for c in callees):
                continue  # project code: its own calls are walked here too
            for arg in (*call.args, *(k.value for k in call.keywords)):
                held = analysis.values(arg.value if isinstance(arg, ast.Starred) else arg)
                if held:
                    passed.append(held)
    analysis.memo[key] = (receivers, passed)
    return receivers, passed


# Library modules known to have no train-mode behaviour of their own, and
# containers whose behaviour is their members'.
_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
# torch.nn modules with a dropout inside (on by default, or when given one).
_DROPOUT_INSIDE = ("Transformer", "MultiheadAttention")
_RNNS = frozenset({"RNN", "LSTM", "GRU"})
_ORDERED_DICTS = frozenset({"collections.OrderedDict", "typing.OrderedDict"})
# Libraries whose calls make values, not modules.
_PLAIN_LIBRARIES = ("torch.", "numpy.", "math.", "<builtin>.", "builtins.")
MAX_LAYER_OBJECTS = 400


@dataclass(frozen=True)
class TrainModeParts:
    """The train-mode layers of the models an expression may hold."""

    layers: list[tuple[str, Site]]  # (the layer's class name, where it is made), one per model
    classes: list[str]  # the project classes (qualified) of the models that have them
    every: bool  # every model the expression may hold has one (else some only)


def program_train_mode_parts(model: Model, node: ast.expr) -> TrainModeParts | None:
    """Which of the models ``node`` (a node of the linted file) may hold
    behave differently in train mode, model by model (a factory that picks
    one of many classes: some with Dropout, some without), as
    :func:`program_train_mode_layers` judges each; None when none is known
    to, or a value is no module."""
    twin = model.twin(node)
    found = model.analysis.values(twin) if twin is not None else None
    values = [o for o in found or () if not isinstance(o, ModuleObj)]
    if not values or not all(is_module(model.analysis, obj) for obj in values):
        return None
    layers: list[tuple[str, Site]] = []
    classes: list[str] = []
    every = True
    for obj in sorted(values, key=lambda o: repr(getattr(o, "site", None))):
        part = _train_mode_part(model, obj)
        if part is None:
            every = False
            continue
        layers.append(part)
        if isinstance(obj, InstObj):
            classes.append(obj.cls.qname)
    if not layers:
        return None
    return TrainModeParts(layers, sorted(set(classes)), every)


def program_callers_known(model: Model, name: str) -> bool:
    """Every call in the model that passes arguments to a function or
    method named ``name`` has a callee the model can name (``trainer.train(
    loader, opt)`` on a parameter of unknown class has none): what the
    model says such a function's parameters hold then comes from every
    caller there is, not only the ones it resolved."""
    key = ("callers known", name)
    found = model.analysis.memo.get(key)
    if found is None:
        found = True
        analysis = model.analysis
        for module in analysis.solver.program.modules.values():
            for call in ast.walk(module.tree):
                if not isinstance(call, ast.Call) or not (call.args or call.keywords):
                    continue
                func = call.func
                spelled = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if spelled == name and not analysis.values(func):
                    found = False
                    break
            if not found:
                break
        model.analysis.memo[key] = found
    return bool(found)


def _train_mode_part(model: Model, root: Obj) -> tuple[str, Site] | None:
    """The first train-mode part of one model: (its class name, its site)."""
    solver = model.analysis.solver
    queue: list[Obj] = [root]
    seen: set[Obj] = set()
    spelled: tuple[str, Site] | None = None  # a class calling a functional dropout
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
            if head.startswith("torchvision.models") and last.startswith(
                TORCHVISION_TRAIN_MODE_PREFIXES
            ):
                return last, obj.site
            if head != "torch.nn":
                continue
            dropout = last in _RNNS and "dropout" in obj.kwargs
            if last in TRAIN_MODE_LAYERS or last.startswith(_DROPOUT_INSIDE) or dropout:
                return last, obj.site
            if name in _CONTAINERS:
                for arg in [*obj.args, *obj.kwargs.values()]:
                    queue.extend(solver.pts[arg])
        elif isinstance(obj, InstObj) and is_module(model.analysis, obj):
            for klass in solver.mro(obj.cls):
                functional = isinstance(klass, ClassObj) and _calls_functional_dropout(klass.node)
                if spelled is None and functional and isinstance(klass, ClassObj):
                    node = klass.node
                    spelled = "dropout", Site(klass.module.name, node.lineno, node.col_offset)
            for attr in solver.field_keys.get(obj, ()):
                queue.extend(solver.pts[solver.field(obj, attr)])
        elif isinstance(obj, ContainerObj):
            element = solver.keyed.get(("e", obj, "*"))
            if element is not None:
                queue.extend(solver.pts[element])
    return spelled  # the layers themselves first: they say where


def program_train_mode_layers(model: Model, node: ast.expr) -> bool | None:
    """Does the module ``node`` holds behave differently in train mode, as the
    model sees it: True when one of its parts (transitively) is a
    Dropout/BatchNorm layer, a torchvision network that has them, or its
    classes call a functional dropout; False when every part is known and none
    is; None when a value or a part is not known (a library model, an
    attribute the model has no value for)."""
    return _train_mode(model, node, None)


def program_train_mode_sites(model: Model, node: ast.expr) -> list[Site]:
    """Where the Dropout/BatchNorm layers (and torchvision networks with
    them) of the module ``node`` holds are built, however deep: in a
    submodule class of another file (``self.conv1 = conv_block(...)``), a
    ``Sequential`` a helper function returns, a container. Empty when none
    is known (parts the model cannot see may still have some)."""
    sites: list[Site] = []
    _train_mode(model, node, sites)
    return sites


def program_train_mode_places(model: Model, node: ast.expr) -> list[tuple[str, str, Span]]:
    """:func:`program_train_mode_sites` as the project index gives layers:
    (path, library class, span) of each construction, in source order."""
    out: list[tuple[str, str, Span]] = []
    for site in program_train_mode_sites(model, node):
        where = model.where(site.module, site.line, site.col)
        starting = model.expressions(site.module).get((site.line, site.col), ())
        calls = [n for n in starting if isinstance(n, ast.Call)]
        if where is None or not calls:
            continue
        call = min(calls, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
        rng = where[1]
        span = Span(
            call.lineno,
            call.col_offset,
            call.end_lineno or call.lineno,
            call.end_col_offset if call.end_col_offset is not None else call.col_offset,
        )
        name = ast.unparse(call.func).rsplit(".", 1)[-1]
        if inert_layer(name, call):
            continue  # `Dropout(0.0)`, `BatchNorm1d(c, track_running_stats=False)`
        if rng.start.line == span.line:
            out.append((where[0], f"torch.nn.{name}", span))
    return sorted(set(out), key=lambda p: (p[0], p[2].line, p[2].col))


def _train_mode(model: Model, node: ast.expr, sites: list[Site] | None) -> bool | None:
    """The walk of :func:`program_train_mode_layers`; with ``sites``, every
    train-mode layer's construction is collected there instead of stopping
    at the first."""
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
    layers = unknown = False
    while queue:
        obj = queue.pop()
        if obj in seen:
            continue
        seen.add(obj)
        if len(seen) > MAX_LAYER_OBJECTS:
            unknown = True
            break
        if isinstance(obj, ExtCallObj):
            name = obj.type_name or ""
            head, _, last = name.rpartition(".")
            train_mode = False
            if head.startswith("torchvision.models"):
                if not last.startswith(TORCHVISION_TRAIN_MODE_PREFIXES):
                    unknown = True
                    continue
                train_mode = True
            elif name in _ORDERED_DICTS:
                for arg in obj.args:  # `Sequential(OrderedDict([("bn", nn.BatchNorm2d(c))]))`
                    queue.extend(solver.pts[arg])
                continue
            elif head != "torch.nn":
                if not name.startswith(_PLAIN_LIBRARIES):
                    unknown = True  # another library's object: maybe a model
                continue  # else a tensor, a device, a number: not a module
            else:
                train_mode = (
                    last in TRAIN_MODE_LAYERS
                    or last.startswith(_DROPOUT_INSIDE)
                    or (last in _RNNS and "dropout" in obj.kwargs)
                )
            if train_mode and _inert(model, obj.site, last):
                continue  # `Dropout(0.0)`, `InstanceNorm2d(c)` without running stats
            if train_mode:
                layers = True
                if sites is None:
                    return True
                sites.append(obj.site)
            elif name in _CONTAINERS:
                for arg in [*obj.args, *obj.kwargs.values()]:
                    queue.extend(solver.pts[arg])
        elif isinstance(obj, InstObj) and is_module(model.analysis, obj):
            for klass in solver.mro(obj.cls):
                if isinstance(klass, ClassObj) and _calls_functional_dropout(klass.node):
                    layers = True
                    if sites is None:
                        return True
            assigned = {
                a for c in solver.mro(obj.cls) if isinstance(c, ClassObj) for a in c.instance_attrs
            }
            for attr in solver.field_keys.get(obj, ()):
                held = solver.pts[solver.field(obj, attr)]
                if not held and attr in assigned:
                    unknown = True  # an attribute the model has no value for
                queue.extend(held)
        elif isinstance(obj, ContainerObj):
            for key in solver.box_keys.get(obj, ()):
                element = solver.keyed.get(("e", obj, key))
                if element is not None:
                    queue.extend(solver.pts[element])
    if layers:
        return True
    return None if unknown else False


def _inert(model: Model, site: Site, name: str) -> bool:
    """The layer built at ``site`` behaves the same in both modes."""
    starting = model.expressions(site.module).get((site.line, site.col), ())
    calls = [n for n in starting if isinstance(n, ast.Call)]
    if not calls:
        return False
    call = min(calls, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
    return inert_layer(name, call)


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


def program_allocations(model: Model, node: ast.expr) -> list[tuple[int, int]] | None:
    """Where every object ``node`` (a node of the linted file) may hold is
    made, as (line, column) of its construction in the linted file: a
    library call (``DataLoader(...)``) or a project class's instance, made
    in a helper that returned it, alone or in a tuple or dict, or passed to
    a constructor and kept on ``self``. None when some object is anything
    else or is made in another file (its node is not this file's)."""
    twin = model.twin(node)
    values = model.analysis.values(twin) if twin is not None else None
    if not values:
        return None
    found: set[tuple[int, int]] = set()
    for obj in values:
        site = obj.site if isinstance(obj, (ExtCallObj, InstObj)) else None
        if site is None or site.module != model.module:
            return None
        found.add((site.line, site.col))
    return sorted(found)
