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
    InstObj,
    Obj,
    PartialObj,
    Site,
)
from torchtrap.core.solver import LOADERS
from torchtrap.facts.modules import STATELESS_LAYERS, holds_only_buffers

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, ...)
ROOTS = {"dataset": 0, "sampler": 3, "batch_sampler": 4, "collate_fn": 6, "worker_init_fn": 10}
WORKERS_POSITION = 5
MAX_PAYLOAD = 2_000  # objects visited per loader
CUDA_METHODS = frozenset({"cuda", "to"})


@dataclass(frozen=True)
class Workers:
    """The worker count: ``kind`` is "zero", "some" or "unknown"."""

    kind: str
    values: tuple[int, ...] = ()


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
            if isinstance(obj, ExtCallObj) and obj.type_name in LOADERS
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
    if position < len(loader.args):
        return loader.args[position]
    return None


def worker_count(analysis: Analysis, loader: ExtCallObj) -> Workers:
    node = _argument(loader, "num_workers", WORKERS_POSITION)
    if node is None:
        return Workers("zero", (0,))
    solver = analysis.solver
    objs = solver.pts[node]
    if node in solver.saturated or not objs:
        return Workers("unknown")
    counts = []
    for obj in objs:
        if not (isinstance(obj, ConstObj) and isinstance(obj.value, int)):
            return Workers("unknown")
        counts.append(int(obj.value))
    if all(c == 0 for c in counts):
        return Workers("zero", tuple(sorted(set(counts))))
    return Workers("some", tuple(sorted(set(counts))))


def payload(analysis: Analysis, loader: ExtCallObj) -> Iterator[Hop]:
    """Every object the loader's workers receive, breadth first, each once
    with its shortest path."""
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
    return "maybe" if "cuda" in verdicts else None


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


def _order(obj: Obj) -> tuple[str, int, int]:
    site = getattr(obj, "site", None)
    if isinstance(site, Site):
        return (site.module, site.line, site.col)
    return (type(obj).__name__, 0, 0)


MODULE_BASES = ("torch.nn.Module", "pytorch_lightning.", "lightning.", "lightning.pytorch.")


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
            isinstance(c, ExternalObj) and c.name.startswith(MODULE_BASES)
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
                if culprit is not None:
                    seen.add(hop.obj)
                    found.append(culprit)
    return found


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


def workers_text(workers: Workers) -> str:
    if workers.kind == "some":
        return f"num_workers={'/'.join(str(v) for v in workers.values if v)}"
    return "num_workers that may be > 0"


def _forks(analysis: Analysis, loader: ExtCallObj) -> bool:
    """``multiprocessing_context="fork"``: nothing is pickled."""
    node = loader.kwargs.get("multiprocessing_context")
    objs = analysis.solver.pts[node] if node is not None else set()
    return bool(objs) and all(isinstance(o, ConstObj) and o.value == "fork" for o in objs)


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
    (and may pickle: not fork-only), the first model its workers receive
    at least ``min_hops`` objects away (the file's own rules see nearer)."""
    found: list[Culprit] = []
    done: set[tuple[int, int]] = set()
    for loader in loaders(analysis, module):
        place = (loader.obj.site.line, loader.obj.site.col)
        if place in done or loader.workers.kind == "zero" or _forks(analysis, loader.obj):
            continue
        for hop in payload(analysis, loader.obj):
            if len(hop.chain()) >= min_hops and holds_parameters(analysis, hop.obj):
                site = getattr(hop.obj, "site", None) or loader.obj.site
                found.append(Culprit(loader, hop, "certain", "model", site))
                done.add(place)
                break
    return found
