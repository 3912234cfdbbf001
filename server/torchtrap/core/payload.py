"""What a DataLoader's workers receive: the worker payload query.

Every object copied into each worker (by fork) or pickled into it (spawn,
forkserver), with the path that reaches it from the DataLoader: the
dataset, sampler, batch sampler, ``collate_fn`` and ``worker_init_fn``,
then their fields, container elements, a bound method's owner, a
``partial``'s arguments and a library object's constructor arguments
(``Compose([...])``, ``TensorDataset(x)``).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
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
    Obj,
    OriginConst,
    PartialObj,
    Site,
)
from torchtrap.core.program import absolute
from torchtrap.core.solver import ALL_LOADERS, CONFIG_READERS, KEYWORD_LOADERS, PARSE_METHODS
from torchtrap.facts.generators import (
    CONSTRUCTORS,
    INSPECT_METHODS,
    NOT_GLOBAL_DRAWS,
    RESEED_METHODS,
    SELF_RETURNING,
)
from torchtrap.facts.modules import STATELESS_LAYERS, holds_only_buffers
from torchtrap.facts.workers import says_fork

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, ...)
ROOTS = {"dataset": 0, "sampler": 3, "batch_sampler": 4, "collate_fn": 6, "worker_init_fn": 10}
WORKERS_POSITION = 5
MAX_PAYLOAD = 2_000  # objects visited per loader
CUDA_METHODS = frozenset({"cuda", "to"})
# Models reported per loader and context: the first the file's rules do
# not see is the one said (the rules pick it)
CULPRITS_PER_LOADER = 8
HOST_METHODS = frozenset({"cpu", "numpy", "item", "tolist"})


@dataclass(frozen=True)
class Workers:
    """The worker count: ``kind`` is "zero", "some" or "unknown"; ``values``
    the counts known, ``positive`` a count only known to be > 0
    (``os.cpu_count()``); ``expr`` the argument as written, ``origin``
    where its value comes from ("default at train.py:40", "cfg.yaml:3")."""

    kind: str
    values: tuple[int, ...] = ()
    positive: bool = False
    expr: str = ""
    origin: str = ""


@dataclass(frozen=True)
class Hop:
    obj: Obj
    via: str  # "dataset", ".aug", "[...]", "bound method's owner", "argument of Compose"
    parent: Hop | None

    def chain(self) -> list[Hop]:
        hops: list[Hop] = []
        hop: Hop | None = self
        while hop is not None:
            hops.append(hop)
            hop = hop.parent
        return hops[::-1]


@dataclass(frozen=True)
class Loader:
    obj: ExtCallObj
    workers: Workers


def loaders(analysis: Analysis, module: str | None = None) -> list[Loader]:
    """The DataLoaders the program builds (in ``module`` only, when given):
    one per call site and per context of a copied helper."""
    every = analysis.memo.get("loaders")
    if every is None:
        every = analysis.memo["loaders"] = [
            obj
            for obj in analysis.solver.objects.values()
            if isinstance(obj, ExtCallObj) and obj.type_name in ALL_LOADERS
        ]
    found = [
        Loader(obj, worker_count(analysis, obj))
        for obj in every
        if module is None or obj.site.module == module
    ]
    found.sort(
        key=lambda loader: (loader.obj.site.line, loader.obj.site.col, len(loader.obj.site.ctx))
    )
    return found


def _argument(loader: ExtCallObj, name: str, position: int) -> int | None:
    if name in loader.kwargs:
        return loader.kwargs[name]
    if position > 2 and loader.type_name in KEYWORD_LOADERS:
        return None
    if position < len(loader.args):
        return loader.args[position]
    return None


def worker_count(analysis: Analysis, loader: ExtCallObj) -> Workers:
    node = _argument(loader, "num_workers", WORKERS_POSITION)
    if node is None:
        return Workers("zero", (0,))
    expr = _argument_text(analysis, loader)
    count = _count(analysis, node, 0)
    if count is None:
        return Workers("unknown", expr=expr)
    values, positive, origins = count
    # os.cpu_count() written in the argument: the expression says it already
    origin = "; ".join(o for o in dict.fromkeys(origins) if o.split(" at ")[0] not in expr)
    if not values and not positive:
        return Workers("unknown", expr=expr)
    if values == {0} and not positive:
        return Workers("zero", (0,), expr=expr, origin=origin)
    return Workers("some", tuple(sorted(values)), positive, expr, origin)


# A count is (the values known, whether some unknown value > 0 is possible,
# where they come from); None when nothing is known.
Count = tuple[set[int], bool, list[str]]
CPU_COUNTS = frozenset(
    {"os.cpu_count", "multiprocessing.cpu_count", "torch.multiprocessing.cpu_count"}
)
MAX_COUNT_DEPTH = 4


def _count(analysis: Analysis, node: int, depth: int) -> Count | None:
    solver = analysis.solver
    objs = solver.pts[node]
    if node in solver.saturated or not objs or depth > MAX_COUNT_DEPTH:
        return None
    values: set[int] = set()
    positive = False
    origins: list[str] = []
    command_line = False
    for obj in objs:
        if _from_command_line(obj):
            command_line = True  # the parser's default, when there is one, is also here
            continue
        one = _count_one(analysis, obj, depth)
        if one is None:
            return None
        values |= one[0]
        positive = positive or one[1]
        origins += one[2]
    if command_line and not values and not positive:
        return None
    return values, positive, origins


def _count_one(analysis: Analysis, obj: Obj, depth: int) -> Count | None:
    if isinstance(obj, ConstObj):
        if isinstance(obj.value, bool) or not isinstance(obj.value, int):
            return None
        return {obj.value}, False, [obj.origin] if isinstance(obj, OriginConst) else []
    if not isinstance(obj, ExtCallObj):
        return None
    name = obj.type_name
    where = analysis.solver.where(obj.site)
    if name in CPU_COUNTS:
        return set(), True, [f"{name}() at {where}"]
    if name == "<builtin>.int" and len(obj.args) == 1:
        return _count(analysis, obj.args[0], depth + 1)
    if name in ("<builtin>.min", "<builtin>.max") and len(obj.args) > 1 and not obj.kwargs:
        parts = [_count(analysis, n, depth + 1) for n in obj.args]
        known = [p for p in parts if p is not None]
        if len(known) < len(parts):
            if name == "<builtin>.max" and any(p[0] and 0 not in p[0] for p in known):
                return set(), True, [o for p in known for o in p[2]]  # max(2, anything) >= 2
            return None
        origins = [o for p in known for o in p[2]]
        if any(p[1] for p in known):
            return _bounded(name == "<builtin>.min", known, origins)
        pick = min if name == "<builtin>.min" else max
        combos = known[0][0]
        for part in known[1:]:
            combos = {pick(a, b) for a in combos for b in part[0]}
        return combos, False, origins
    return None


def _bounded(smallest: bool, parts: list[Count], origins: list[str]) -> Count:
    """``min``/``max`` with an unknown positive part (``os.cpu_count()``)."""
    if smallest:
        if any(part[0] == {0} and not part[1] for part in parts):
            return {0}, False, origins
        zero = any(0 in part[0] for part in parts)
        return ({0} if zero else set()), True, origins
    return set(), True, origins  # max(..., cpu_count()) > 0


def _from_command_line(obj: Obj) -> bool:
    """``args.workers``, ``cfg["data"]["workers"]``: what the command line
    or a config file says at run time; the parser's default, or the file's
    value the model read, arrives apart."""
    while isinstance(obj, ExtAttrObj):
        obj = obj.base
        if isinstance(obj, ExtCallObj):
            callee = obj.callee
            if obj.type_name in CONFIG_READERS:
                return True
            return isinstance(callee, ExtAttrObj) and callee.attr in PARSE_METHODS
    return False


def _argument_text(analysis: Analysis, loader: ExtCallObj) -> str:
    """``args.workers``: the ``num_workers`` argument as written."""
    site = loader.site
    index = analysis.memo.setdefault("calls-at", {})
    calls: dict[tuple[int, int], list[ast.Call]] | None = index.get(site.module)
    if calls is None:
        module = analysis.solver.program.modules.get(site.module)
        found: dict[tuple[int, int], list[ast.Call]] = {}
        for node in ast.walk(module.tree) if module is not None else ():
            if isinstance(node, ast.Call):
                found.setdefault((node.lineno, node.col_offset), []).append(node)
        calls = index[site.module] = found
    # `super().__init__(...)` and `super()` start at one place: the call
    # with the loader's arguments
    here = calls.get((site.line, site.col), [])
    call = next(
        (
            c
            for c in here
            if len(c.args) == len(loader.args)
            and {k.arg for k in c.keywords if k.arg} == set(loader.kwargs)
        ),
        here[-1] if here else None,
    )
    if call is None:
        return ""
    written = any(k.arg == "num_workers" for k in call.keywords)
    if "num_workers" in loader.kwargs and not written and len(call.args) <= WORKERS_POSITION:
        return "dataloader_num_workers"  # a Trainer's loader: its TrainingArguments say
    for keyword in call.keywords:
        if keyword.arg == "num_workers":
            return ast.unparse(keyword.value)
    if len(call.args) > WORKERS_POSITION:
        return ast.unparse(call.args[WORKERS_POSITION])
    return ""


def payload(analysis: Analysis, loader: ExtCallObj) -> Iterator[Hop]:
    """Every object the loader's workers receive, breadth first, each once
    with its shortest path (walked once per loader: every worker rule asks)."""
    memo = analysis.memo.setdefault("payload", {})
    hops = memo.get(loader)
    if hops is None:
        hops = memo[loader] = list(_walk(analysis, loader))
    return iter(hops)


def _walk(analysis: Analysis, loader: ExtCallObj) -> Iterator[Hop]:
    solver = analysis.solver
    queue: deque[Hop] = deque()
    seen: set[Obj] = set()
    for name, position in ROOTS.items():
        node = _argument(loader, name, position)
        if node is not None:
            for obj in sorted(solver.pts[node], key=_order):
                queue.append(Hop(obj, name, None))
    while queue and len(seen) < MAX_PAYLOAD:
        hop = queue.popleft()
        if hop.obj in seen:
            continue
        seen.add(hop.obj)
        yield hop
        for via, node in _parts(analysis, hop.obj):
            for obj in sorted(solver.pts[node], key=_order):
                if obj not in seen:
                    queue.append(Hop(obj, via, hop))


def _parts(analysis: Analysis, obj: Obj) -> Iterator[tuple[str, int]]:
    solver = analysis.solver
    if isinstance(obj, InstObj):
        for attr in solver.field_keys.get(obj, ()):
            yield f".{attr}", solver.field(obj, attr)
    elif isinstance(obj, ContainerObj):
        node = solver.keyed.get(("e", obj, "*"))
        if node is not None:
            yield "[...]", node
    elif isinstance(obj, BoundObj):
        yield "the bound method's owner", solver.holding(obj.self_obj)
    elif isinstance(obj, PartialObj):
        yield "functools.partial's function", obj.func
        for node in obj.args:
            yield "functools.partial's argument", node
        for node in obj.kwargs.values():
            yield "functools.partial's argument", node
    elif isinstance(obj, ExtCallObj) and isinstance(obj.callee, ExternalObj):
        short = obj.callee.name.rsplit(".", 1)[-1]
        if short[:1].isupper():  # a library object keeps what it is built from
            for node in obj.args:
                yield f"argument of {short}", node
            for node in obj.kwargs.values():
                yield f"argument of {short}", node
        for attr in solver.field_keys.get(obj, ()):
            yield f".{attr}", solver.field(obj, attr)


def cuda_device(analysis: Analysis, node: int) -> str | None:
    """ "certain" when every value is a CUDA device, "maybe" when some is,
    None when none is or nothing is known."""
    solver = analysis.solver
    verdicts = {_device_verdict(analysis, obj) for obj in solver.pts[node]}
    if not verdicts or verdicts == {None}:
        return None
    if verdicts == {"cuda"}:
        return "certain"
    # ``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` is "maybe"
    return "maybe" if verdicts & {"cuda", "maybe"} else None


def _device_verdict(analysis: Analysis, obj: Obj) -> str | None:
    if isinstance(obj, ConstObj) and isinstance(obj.value, str):
        return "cuda" if obj.value.startswith("cuda") else "other"
    if isinstance(obj, ConstObj) and isinstance(obj.value, int) and not isinstance(obj.value, bool):
        return "cuda"  # .to(0): device index 0 is cuda:0
    if isinstance(obj, ExtCallObj) and obj.type_name == "torch.device" and obj.args:
        return {"certain": "cuda", "maybe": "maybe"}.get(
            cuda_device(analysis, obj.args[0]) or "", "other"
        )
    return None


def is_cuda_value(analysis: Analysis, obj: Obj) -> str | None:
    """Whether a value lives on the GPU: the result of ``x.cuda()``,
    ``x.to(<cuda device>)``, ``torch.xxx(..., device=<cuda>)``, a
    ``torch.cuda.*Tensor``. "certain", "maybe" or None."""
    if not isinstance(obj, ExtCallObj):
        return None
    callee = obj.callee
    if isinstance(callee, ExtAttrObj) and callee.attr in CUDA_METHODS:
        if callee.attr == "cuda":
            return "certain"
        device = obj.kwargs.get("device", obj.args[0] if obj.args else None)
        return cuda_device(analysis, device) if device is not None else None
    name = obj.type_name or ""
    if name.startswith("torch.cuda.") and name.endswith("Tensor"):
        return "certain"
    if name.startswith("torch.") and "device" in obj.kwargs:
        return cuda_device(analysis, obj.kwargs["device"])
    return None


def moved_to_cuda(analysis: Analysis) -> dict[Obj, tuple[str, Site]]:
    """Objects moved to the GPU in place (``model.cuda()``, ``model.to(dev)``
    on a module), with how sure and where."""
    memo = analysis.memo.get("moved")
    if memo is not None:
        return memo
    moved: dict[Obj, tuple[str, Site]] = {}
    analysis.memo["moved"] = moved
    for obj in list(analysis.solver.objects.values()):
        if not isinstance(obj, ExtCallObj) or not isinstance(obj.callee, ExtAttrObj):
            continue
        base = obj.callee.base
        if isinstance(base, InstObj) and analysis.solver.is_module_like(base.cls):
            sure = is_cuda_value(analysis, obj)
            if sure and (base not in moved or sure == "certain"):
                moved[base] = (sure, obj.site)
    return moved


def describe(obj: Obj) -> str:
    if isinstance(obj, InstObj):
        return obj.cls.qname.rsplit(".", 1)[-1]
    if isinstance(obj, ExtCallObj):
        callee = obj.callee
        if isinstance(callee, ExtAttrObj):
            return f"`.{callee.attr}()`"
        return obj.type_name.rsplit(".", 1)[-1] if obj.type_name else "a library value"
    if isinstance(obj, ClassObj):
        return obj.qname.rsplit(".", 1)[-1]
    return obj.describe()


def _order(obj: Obj) -> tuple[str, int, int, str]:
    """Where ``obj`` is made, then what it is: a total order as far as the
    model tells objects apart. Objects hash by identity, so a tie left to
    a set's order named one model or another from run to run (SciCo's two
    bound ``collate_fn`` methods: which model the message names changed
    with the hash seed and with any change to what the process allocates)."""
    site = getattr(obj, "site", None)
    if isinstance(site, Site):
        return (site.module, site.line, site.col, _tie(obj))
    if isinstance(obj, BoundObj):
        owner = _order(obj.self_obj)
        return (owner[0], owner[1], owner[2], f"{owner[3]} {obj.func.qname}")
    return (type(obj).__name__, 0, 0, _tie(obj))


def _tie(obj: Obj) -> str:
    site = getattr(obj, "site", None)
    ctx = (
        " ".join(f"{s.module}:{s.line}:{s.col}" for s in site.ctx) if isinstance(site, Site) else ""
    )
    if isinstance(obj, InstObj):
        return f"{type(obj).__name__} {obj.cls.qname} {ctx}"
    if isinstance(obj, FuncObj):
        return f"{type(obj).__name__} {obj.qname} {obj.depth}"
    if isinstance(obj, (ClassObj, ExtAttrObj)):
        return f"{type(obj).__name__} {obj.qname}"
    if isinstance(obj, ExternalObj):
        return f"{type(obj).__name__} {obj.name}"
    return f"{type(obj).__name__} {ctx}"


MODULE_BASES = ("torch.nn.Module", "pytorch_lightning.", "lightning.", "lightning.pytorch.")
# Lightning classes that are no nn.Module: a LightningDataModule holds data, not weights
NOT_MODULES = ("DataModule", "Callback", "Trainer")


@dataclass(frozen=True)
class Culprit:
    """A CUDA tensor ("tensor") or model ("module") a loader's workers get."""

    loader: Loader
    hop: Hop
    sure: str  # "certain" or "maybe"
    kind: str
    made: Site  # where it is made (or moved to the GPU)


def is_module(analysis: Analysis, obj: Obj) -> bool:
    """An ``nn.Module``: a project class deriving from one, or a layer."""
    if isinstance(obj, InstObj):
        return any(
            isinstance(c, ExternalObj)
            and c.name.startswith(MODULE_BASES)
            and not c.name.rsplit(".", 1)[-1].endswith(NOT_MODULES)
            for c in analysis.solver.mro(obj.cls)
        )
    if isinstance(obj, ExtCallObj) and obj.type_name:
        name = obj.type_name
        return name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper()
    return False


def cuda_culprits(analysis: Analysis, module: str) -> list[Culprit]:
    """For each DataLoader call site in ``module`` that may start workers,
    the CUDA values its workers receive (one per object, shortest path)."""
    moved = moved_to_cuda(analysis)
    by_site: dict[tuple[int, int], list[Loader]] = {}
    for loader in loaders(analysis, module):
        by_site.setdefault((loader.obj.site.line, loader.obj.site.col), []).append(loader)
    found: list[Culprit] = []
    for group in by_site.values():
        if any(lo.obj.site.ctx for lo in group):
            group = [lo for lo in group if lo.obj.site.ctx]  # called: the copies know more
        seen: set[Obj] = set()
        for loader in group:
            if loader.workers.kind == "zero":
                continue
            for hop in payload(analysis, loader.obj):
                if hop.obj in seen:
                    continue
                culprit = _culprit(analysis, loader, hop, moved)
                if culprit is not None and _set_after_workers_start(analysis, loader.obj, hop):
                    continue
                if culprit is not None and connected(analysis, loader.obj, hop):
                    seen.add(hop.obj)
                    found.append(culprit)
    return found


def _set_after_workers_start(analysis: Analysis, loader: ExtCallObj, hop: Hop) -> bool:
    """The field that holds the value is set (to anything but ``None``)
    only by methods of an object the DataLoader's own function makes and
    calls inside its loop over that DataLoader: the workers start at the
    loop, with what the field held before it (CenterTrack's
    ``detector.run()`` keeps ``self.pre_images`` for the next frame,
    ``None`` until then). The core reads fields flow-insensitively; this
    is the one order that decides what the workers get. The object must
    not leave the function other than as the receiver of its methods (a
    bound method handed out counts as called before the loop), and a
    setter reached from ``__init__`` or from a call before the loop keeps
    the value."""
    parent = hop.parent
    if parent is None or not hop.via.startswith(".") or not isinstance(parent.obj, InstObj):
        return False
    solver = analysis.solver
    owner = parent.obj
    cls = owner.cls
    maker = solver.made_in.get(loader)
    func = next((f for f in solver.functions if f.qname == maker), None)
    if func is None or isinstance(func.node, ast.Lambda):
        return False
    methods = {
        f"{cls.qname}.{fn.name}": fn
        for fn in cls.node.body
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    storing = {name for name, fn in methods.items() if _stores_value(fn, hop.via[1:])}
    names = _names_of(func.node, owner.site) if owner.site is not None else set()
    if not storing or not names:
        return False
    inside: set[str] = set()  # its methods called in a loop over the loader
    before: set[str] = {f"{cls.qname}.__init__"}
    called: set[int] = set()
    for call, in_loop in _calls_in(func.node, _names_of(func.node, loader.site)):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name) and receiver.id in names:
            called.add(id(call.func))
            assert isinstance(call.func, ast.Attribute)
            (inside if in_loop else before).add(f"{cls.qname}.{call.func.attr}")
    for node in ast.walk(func.node):
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Name)
                and child.id in names
                and isinstance(child.ctx, ast.Load)
            ):
                if not isinstance(node, ast.Attribute):
                    return False  # the object itself is passed on
                if id(node) not in called:
                    before.add(f"{cls.qname}.{node.attr}")  # a bound method handed out

    def reach(roots: set[str]) -> set[str]:
        seen, todo = set(roots), list(roots)
        while todo:
            for callee in solver.calls.get(todo.pop(), ()):
                if callee in methods and callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    return not storing & reach(before) and storing <= reach(inside)


def _names_of(fn: ast.AST, site: Site) -> set[str]:
    """The local names the call at ``site`` is assigned to in ``fn``."""
    found: set[str] = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and (node.value.lineno, node.value.col_offset) == (site.line, site.col)
        ):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def _stores_value(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> bool:
    """``self.<attr> = <anything but None>`` in ``fn``."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            targets = node.targets
            value = node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == attr
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and not (isinstance(value, ast.Constant) and value.value is None)
            ):
                return True
    return False


def _calls_in(fn: ast.AST, loaders: set[str]) -> Iterator[tuple[ast.Call, bool]]:
    """Every call in ``fn``, and whether it is in the body of a loop over
    one of ``loaders`` (``for x in loader``, ``enumerate(loader)``,
    ``tqdm(loader)``)."""

    def over_loader(expr: ast.expr) -> bool:
        while isinstance(expr, ast.Call) and expr.args:
            expr = expr.args[0]
        return isinstance(expr, ast.Name) and expr.id in loaders

    def visit(node: ast.AST, in_loop: bool) -> Iterator[tuple[ast.Call, bool]]:
        if isinstance(node, ast.Call):
            yield node, in_loop
        if isinstance(node, (ast.For, ast.AsyncFor)) and over_loader(node.iter):
            yield from visit(node.iter, in_loop)
            for stmt in node.body:
                yield from visit(stmt, True)
            for stmt in node.orelse:
                yield from visit(stmt, in_loop)
            return
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from visit(child, in_loop)

    yield from visit(fn, False)


def _culprit(
    analysis: Analysis, loader: Loader, hop: Hop, moved: dict[Obj, tuple[str, Site]]
) -> Culprit | None:
    obj = hop.obj
    if obj in moved and is_module(analysis, obj):
        how, site = moved[obj]
        return Culprit(loader, hop, how, "module", site)
    sure = is_cuda_value(analysis, obj)
    if sure is None or not isinstance(obj, ExtCallObj):
        return None
    callee = obj.callee
    base = callee.base if isinstance(callee, ExtAttrObj) else None
    kind = "module" if base is not None and is_module(analysis, base) else "tensor"
    return Culprit(loader, hop, sure, kind, obj.site)


def chain_text(hop: Hop) -> str:
    """``dataset `Rays` → `.aug` (Jitter) → `.table```: the path in words."""
    parts = []
    for step in hop.chain():
        what = describe(step.obj) if isinstance(step.obj, (InstObj, ClassObj)) else ""
        if step.parent is None:
            parts.append(f"{step.via} `{what}`" if what else step.via)
        elif step.via.startswith("."):
            parts.append(f"`{step.via}`")
        else:
            parts.append(step.via)
    return " → ".join(parts)


def workers_text(workers: Workers, short: bool = False) -> str:
    """``num_workers=4``, ``num_workers=8 (args.workers, default at
    train.py:40)``, ``num_workers > 0 (os.cpu_count())``,
    ``num_workers=args.workers (unknown here, may be > 0)``."""
    if workers.kind != "some":
        if workers.expr and not short:
            return f"num_workers={workers.expr} (unknown here, may be > 0)"
        return "num_workers that may be > 0"
    counts = "/".join(str(v) for v in workers.values if v)
    if workers.positive:
        head = f"num_workers={counts} or > 0" if counts else "num_workers > 0"
    else:
        head = f"num_workers={counts}"
    if short:
        return head
    detail = [part for part in (workers.expr, workers.origin) if part and part != counts]
    return f"{head} ({', '.join(detail)})" if detail else head


def _forks(analysis: Analysis, loader: ExtCallObj) -> bool:
    """``multiprocessing_context="fork"``, or the loader's module calls
    ``set_start_method("fork")``: nothing is pickled."""
    node = loader.kwargs.get("multiprocessing_context")
    objs = analysis.solver.pts[node] if node is not None else set()
    if objs and all(isinstance(o, ConstObj) and o.value == "fork" for o in objs):
        return True
    return _pins_fork(analysis, loader.site.module)


def _pins_fork(analysis: Analysis, module: str) -> bool:
    key = ("pins fork", module)
    found = analysis.memo.get(key)
    if found is None:
        tree = analysis.solver.program.modules.get(module)
        found = analysis.memo[key] = tree is not None and any(
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "set_start_method"
            and bool(node.args)
            and says_fork(node.args[0])
            for node in ast.walk(tree.tree)
        )
    return bool(found)


def holds_parameters(analysis: Analysis, obj: Obj) -> bool:
    """A module with state: a project ``nn.Module`` subclass, or a layer
    that is not one of the stateless ones (activations, pooling, dropout)."""
    if not is_module(analysis, obj):
        return False
    if isinstance(obj, ExtCallObj) and obj.type_name:
        return obj.type_name.rsplit(".", 1)[-1] not in STATELESS_LAYERS
    if isinstance(obj, InstObj):
        # A feature extractor whose own methods register only buffers.
        return not holds_only_buffers(obj.cls.node, lambda node: _external_name(analysis, node))
    return True


def _external_name(analysis: Analysis, node: ast.AST) -> str | None:
    """The library name an expression holds (``nn.Module``: ``torch.nn.Module``)."""
    objs = analysis.values(node) if isinstance(node, ast.expr) else None
    if not objs or len(objs) != 1:
        return None
    obj = next(iter(objs))
    return obj.name if isinstance(obj, ExternalObj) else None


def model_culprits(analysis: Analysis, module: str, min_hops: int = 3) -> list[Culprit]:
    """For each DataLoader call site in ``module`` that may start workers
    (and may pickle: not fork-only), the models its workers receive at
    least ``min_hops`` objects away (the file's own rules see nearer), in
    the order of their paths, at most ``CULPRITS_PER_LOADER`` per context."""
    found: list[Culprit] = []
    done: set[tuple[tuple[int, int], Obj]] = set()
    for loader in loaders(analysis, module):
        place = (loader.obj.site.line, loader.obj.site.col)
        if loader.workers.kind == "zero" or _forks(analysis, loader.obj):
            continue
        count = 0
        for hop in payload(analysis, loader.obj):
            hops = len(hop.chain())
            if hops == 2 and hops < min_hops and _made_elsewhere(hop.obj, module):
                hops = min_hops  # a model made in another file or a helper: no file rule sees it
            if (
                hops >= min_hops
                and _has_weights(analysis, hop.obj)
                and connected(analysis, loader.obj, hop)
            ):
                if (place, hop.obj) in done:
                    continue
                site = getattr(hop.obj, "site", None) or loader.obj.site
                found.append(Culprit(loader, hop, "certain", "model", site))
                done.add((place, hop.obj))
                count += 1
                if count == CULPRITS_PER_LOADER:
                    break
    return found


def _has_weights(analysis: Analysis, obj: Obj, depth: int = 3) -> bool:
    """A module the model shows holding weights: a layer that has them
    (``nn.Embedding``), an ``nn.Parameter``, or a project module with such
    a field (a ``Camera(nn.Module)`` of images and poses holds none)."""
    if isinstance(obj, ExtCallObj):
        name = obj.type_name or ""
        if name in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            return True
        return is_module(analysis, obj) and holds_parameters(analysis, obj)
    if not isinstance(obj, InstObj) or depth == 0 or not is_module(analysis, obj):
        return False
    solver = analysis.solver
    return any(
        _has_weights(analysis, value, depth - 1)
        for attr in solver.field_keys.get(obj, ())
        for value in solver.pts[solver.field(obj, attr)]
    )


def _made_elsewhere(obj: Obj, module: str) -> bool:
    """Made outside ``module``'s own code: in another file, or in a copy of
    a helper called from somewhere."""
    site = getattr(obj, "site", None)
    return isinstance(site, Site) and (site.module != module or bool(site.ctx))


def rng_kind(obj: Obj) -> str | None:
    """The constructor of a random generator object, or None."""
    if not isinstance(obj, ExtCallObj):
        return None
    if obj.type_name in CONSTRUCTORS:
        return CONSTRUCTORS[obj.type_name]
    callee = obj.callee
    if isinstance(callee, ExtAttrObj) and callee.attr in SELF_RETURNING:
        return rng_kind(callee.base)  # torch.Generator().manual_seed(0) is the generator
    return None


def _generator_uses(analysis: Analysis) -> dict[Obj, list[tuple[str, str]]]:
    """Each generator-like object's uses: (method or "generator=", the
    function that makes the call), from every library call of the program."""
    memo = analysis.memo.get("generator-uses")
    if memo is not None:
        return memo
    solver = analysis.solver
    uses: dict[Obj, list[tuple[str, str]]] = {}
    for obj in list(solver.objects.values()):
        if not isinstance(obj, ExtCallObj):
            continue
        caller = solver.made_in.get(obj)
        if caller is None:
            continue
        callee = obj.callee
        if isinstance(callee, ExtAttrObj) and isinstance(callee.base, ExtCallObj):
            uses.setdefault(callee.base, []).append((callee.attr, caller))
        node = obj.kwargs.get("generator")
        if node is not None:
            for gen in solver.pts[node]:
                uses.setdefault(gen, []).append(("generator=", caller))
    analysis.memo["generator-uses"] = uses
    return uses


WORKER_METHODS = ("__getitem__", "__getitems__", "__iter__")


def worker_code(analysis: Analysis, loader: ExtCallObj) -> set[str]:
    """The functions (by qualified name) that run in the loader's workers:
    the dataset's ``__getitem__``/``__iter__`` (through wrappers such as
    ``Subset`` or ``ConcatDataset``), ``collate_fn``, ``worker_init_fn``,
    and everything they call."""
    memo = analysis.memo.setdefault("worker-code", {})
    found = memo.get(loader)
    if found is None:
        found = memo[loader] = _worker_code(analysis, loader)
    return found


def worker_entries(analysis: Analysis, loader: ExtCallObj) -> set[str]:
    """The functions the DataLoader machinery itself calls in the workers
    (``__getitem__``, ``collate_fn``...), as ``worker_code`` starts from."""
    worker_code(analysis, loader)
    found: set[str] = analysis.memo["worker-entries"][loader]
    return found


def only_in_workers(analysis: Analysis, loader: ExtCallObj, func: str) -> bool:
    """Whether ``func`` runs only in the loader's workers: an entry, or a
    function every caller of which is worker code. A method the main
    process also calls (``signal.to(device)`` on a batch) is analysed
    once for every caller, so what it makes there says nothing about what
    it makes in the workers."""
    if func in worker_entries(analysis, loader):
        return True
    callers = analysis.memo.get("callers")
    if callers is None:
        callers = analysis.memo["callers"] = {}
        for caller, callees in analysis.solver.calls.items():
            for callee in callees:
                callers.setdefault(callee, set()).add(caller)
    reach = worker_code(analysis, loader)
    return callers.get(func, set()) <= reach


def _worker_code(analysis: Analysis, loader: ExtCallObj) -> set[str]:
    solver = analysis.solver
    entries: set[str] = set()
    analysis.memo.setdefault("worker-entries", {})[loader] = entries
    for hop in payload(analysis, loader):
        steps = hop.chain()
        if steps[0].via in ("collate_fn", "worker_init_fn") and len(steps) <= 2:
            func = hop.obj
            if isinstance(func, BoundObj):
                func = func.func
            if isinstance(func, FuncObj):
                entries.add(func.qname)
            continue
        if steps[0].via != "dataset" or any(
            not (s.via.startswith("argument of") or s.via == "[...]") for s in steps[1:]
        ):
            continue
        if isinstance(hop.obj, InstObj):
            for method in WORKER_METHODS:
                node = solver.keyed.get(("ca", hop.obj.cls, method, None))
                for value in solver.pts[node] if node is not None else ():
                    if isinstance(value, FuncObj):
                        entries.add(value.qname)
    reach = set(entries)
    todo = list(entries)
    while todo:
        for callee in solver.calls.get(todo.pop(), ()):
            if callee not in reach:
                reach.add(callee)
                todo.append(callee)
    return reach


def _remade_in(analysis: Analysis, hop: Hop, reach: set[str]) -> bool:
    """The generator, or another stored in the same field, is made by the
    workers' own code: each worker has its own."""
    solver = analysis.solver
    held = {hop.obj}
    if hop.parent is not None and hop.via.startswith("."):
        node = solver.keyed.get(("f", hop.parent.obj, hop.via[1:]))
        held |= solver.pts[node] if node is not None else set()
    return any(rng_kind(obj) and solver.made_in.get(obj) in reach for obj in held)


def rng_culprits(analysis: Analysis, module: str) -> list[Culprit]:
    """For each DataLoader call site in ``module`` with workers and no
    ``worker_init_fn`` (which might re-create it), the generator objects
    its workers get a copy of and draw from in the code they run (never
    re-seeded there), shortest path first: every worker replays the same
    numbers."""
    found: list[Culprit] = []
    done: set[tuple[tuple[int, int], Obj]] = set()
    uses = _generator_uses(analysis)
    for loader in loaders(analysis, module):
        place = (loader.obj.site.line, loader.obj.site.col)
        if loader.workers.kind == "zero":
            continue
        if _argument(loader.obj, "worker_init_fn", ROOTS["worker_init_fn"]) is not None:
            continue
        reach: set[str] | None = None
        for hop in payload(analysis, loader.obj):
            if len(hop.chain()) < 2 or rng_kind(hop.obj) is None:
                continue
            if reach is None:
                reach = worker_code(analysis, loader.obj)
            if _remade_in(analysis, hop, reach):
                continue  # made again in the worker's own code (lazily, per worker or per item)
            methods = {attr for attr, caller in uses.get(hop.obj, ()) if caller in reach}
            if methods & RESEED_METHODS or not methods - INSPECT_METHODS:
                continue
            assert isinstance(hop.obj, ExtCallObj)
            if (place, hop.obj) in done or not connected(analysis, loader.obj, hop):
                continue
            found.append(Culprit(loader, hop, "certain", "rng", hop.obj.site))
            done.add((place, hop.obj))
    return found


def every_rng_culprit(analysis: Analysis) -> list[Culprit]:
    """``rng_culprits`` for the DataLoaders of every module."""
    memo = analysis.memo.get("rng-culprits")
    if memo is None:
        modules = sorted({lo.obj.site.module for lo in loaders(analysis)})
        memo = analysis.memo["rng-culprits"] = [
            c for m in modules for c in rng_culprits(analysis, m)
        ]
    return memo


NUMPY_RESEEDS = frozenset({"numpy.random.seed", "numpy.random.set_state"})


@dataclass(frozen=True)
class GlobalDraw:
    """A draw from numpy's global generator in the code a loader's workers run."""

    loader: Loader
    draw: ExtCallObj  # the ``np.random.xxx(...)`` call
    caller: str  # the function that makes it


def _numpy_draws(analysis: Analysis) -> list[tuple[ExtCallObj, str]]:
    memo = analysis.memo.get("numpy-draws")
    if memo is None:
        memo = analysis.memo["numpy-draws"] = []
        solver = analysis.solver
        for obj in list(solver.objects.values()):
            if not isinstance(obj, ExtCallObj) or obj not in solver.made_in:
                continue
            parts = (obj.type_name or "").split(".")
            global_draw = parts[:2] == ["numpy", "random"] and len(parts) == 3
            if global_draw and parts[2] not in NOT_GLOBAL_DRAWS:
                memo.append((obj, solver.made_in[obj]))
        memo.sort(key=lambda item: _order(item[0]))
    return memo


def global_numpy_draws(analysis: Analysis, module: str) -> list[GlobalDraw]:
    """For each DataLoader call site in ``module`` with workers and no
    ``worker_init_fn``, the first draw from numpy's global generator in the
    code its workers run, outside the dataset classes' own modules (the
    file's rule sees those), when nothing there re-seeds numpy."""
    found: list[GlobalDraw] = []
    done: set[tuple[int, int]] = set()
    draws = _numpy_draws(analysis)
    if not draws:
        return found
    for loader in loaders(analysis, module):
        place = (loader.obj.site.line, loader.obj.site.col)
        if place in done or loader.workers.kind == "zero":
            continue
        if _argument(loader.obj, "worker_init_fn", ROOTS["worker_init_fn"]) is not None:
            continue
        reach = worker_code(analysis, loader.obj)
        if reach & NUMPY_RESEEDS:
            continue
        own = {
            hop.obj.cls.module.name
            for hop in payload(analysis, loader.obj)
            if isinstance(hop.obj, InstObj) and hop.parent is None
        }
        for draw, caller in draws:
            if caller in reach and draw.site.module not in own:
                found.append(GlobalDraw(loader, draw, caller))
                done.add(place)
                break
    return found


@dataclass(frozen=True)
class WorkerCuda:
    """A CUDA value the code a loader's workers run makes itself
    (``x.to(self.device)`` in ``__getitem__`` with a CUDA device from the
    program, a transform's ``torch.tensor(..., device=device)``)."""

    loader: Loader
    obj: ExtCallObj
    sure: str  # "certain" or "maybe"
    caller: str  # the function that makes it


def cuda_made_by_workers(analysis: Analysis) -> list[WorkerCuda]:
    """For every DataLoader of the program that may start workers, the CUDA
    values made by the code its workers run; each value once, with the
    first loader (in source order) that runs it."""
    memo = analysis.memo.get("worker-cuda")
    if memo is not None:
        return memo
    solver = analysis.solver
    made: list[tuple[ExtCallObj, str, str]] = []
    back: set[Obj] = set()  # ``x.cuda().cpu()``: brought back to the host
    for obj in list(solver.objects.values()):
        if isinstance(obj, ExtCallObj) and obj in solver.made_in:
            callee = obj.callee
            if isinstance(callee, ExtAttrObj) and callee.attr in HOST_METHODS:
                back.add(callee.base)
            sure = is_cuda_value(analysis, obj)
            if sure is not None:
                made.append((obj, sure, solver.made_in[obj]))
    made = [item for item in made if item[0] not in back]
    made.sort(key=lambda item: _order(item[0]))
    found: list[WorkerCuda] = []
    memo = analysis.memo["worker-cuda"] = found
    if not made:
        return found
    seen: set[Obj] = set()
    for loader in loaders(analysis):
        if loader.workers.kind == "zero":
            continue
        reach = worker_code(analysis, loader.obj)
        for obj, sure, caller in made:
            if caller not in reach or obj in seen:
                continue
            if only_in_workers(analysis, loader.obj, caller):
                seen.add(obj)
                found.append(WorkerCuda(loader, obj, sure, caller))
    return found


def every_cuda_culprit(analysis: Analysis) -> list[Culprit]:
    """``cuda_culprits`` for the DataLoaders of every module."""
    memo = analysis.memo.get("cuda-culprits")
    if memo is None:
        modules = sorted({lo.obj.site.module for lo in loaders(analysis)})
        memo = analysis.memo["cuda-culprits"] = [
            c for m in modules for c in cuda_culprits(analysis, m)
        ]
    return memo


def _imports_of(analysis: Analysis, module: str) -> set[str]:
    """The program modules ``module`` imports (any statement, any depth of
    its body), once per model."""
    memo: dict[str, set[str]] = analysis.memo.setdefault("imports-of", {})
    found = memo.get(module)
    if found is None:
        found = memo[module] = set()
        program = analysis.solver.program
        mod = program.modules.get(module)
        if mod is None:
            return found
        for node in ast.walk(mod.tree):
            names: list[str | None] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = absolute(mod.obj, node.level, node.module)
                names = [base] + [f"{base}.{a.name}" for a in node.names if base]
            for name in names:
                target = program.find(name, mod.obj) if name else None
                if target is not None:
                    found.add(target.obj.name)
    return found


def connected(analysis: Analysis, loader: ExtCallObj, hop: Hop) -> bool:
    """Whether each object of the chain is made where the loader's program
    can have made it: in a module of the loader's call chain or of an
    earlier object's (their sites and call contexts), or one they import.
    A field is read flow- and context-insensitively: ``self.transform =
    transform`` in ``SliceDataset.__init__`` holds every transform any
    script passes, so a dataset made in one script would get a transform
    only another script makes (fastMRI's inference scripts and its
    adaptive-varnet demo)."""
    near: set[str] = set()

    def add(obj: Obj) -> None:
        site = getattr(obj, "site", None)
        if isinstance(site, Site):
            near.add(site.module)
            near.update(s.module for s in site.ctx)
        if isinstance(obj, InstObj):  # its class's methods make its fields
            near.update(
                c.module.name for c in analysis.solver.mro(obj.cls) if isinstance(c, ClassObj)
            )

    add(loader)
    for step in hop.chain():
        site = getattr(step.obj, "site", None)
        if isinstance(site, Site) and step.parent is not None:
            modules = {site.module, *(s.module for s in site.ctx)}
            if not modules & near:
                reach = set(near)
                for module in near:
                    reach |= _imports_of(analysis, module)
                if not modules & reach:
                    return False
        add(step.obj)
    return True
