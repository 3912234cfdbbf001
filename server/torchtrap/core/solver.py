"""The points-to solver: nodes, sets of objects and the rules that grow them.

An Andersen-style inclusion analysis with on-the-fly call resolution. A
node is a variable of the abstract program (a local version, a global, an
object's field or elements, a function's parameters, return and yields);
its set holds the objects it may point to. Copy edges carry objects from
node to node (optionally through a transform, e.g. binding a method to its
instance); handlers react to each object that reaches a node (an attribute
load, a call). Every object reaches every node at most once, so the work is
bounded by edges times objects, and every lookup is memoised: a package of
twelve missing star imports costs what one costs.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from torchtrap.core import configs
from torchtrap.core.objects import (
    BoundObj,
    ClassObj,
    ConstObj,
    ContainerObj,
    ExtAttrObj,
    ExtCallObj,
    ExternalObj,
    FuncObj,
    GenObj,
    InstObj,
    MethodObj,
    ModuleObj,
    Obj,
    OriginConst,
    PartialObj,
    Site,
    SuperObj,
)
from torchtrap.core.program import Program
from torchtrap.core.scopes import count_statements, generator_of, lambdas_of, scope_of

# nn.Module methods that return the module itself (`model = Net().to(device)`).
MODULE_SELF_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "train", "eval"}
    | {"requires_grad_", "share_memory", "to_empty", "apply", "xpu"}
)

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Subclasses with torch's keywords but other positions after ``shuffle``
# (``follow_batch``): only their first three arguments are read by position.
KEYWORD_LOADERS = frozenset(
    {
        "torch_geometric.loader.DataLoader",
        "torch_geometric.loader.dataloader.DataLoader",
        "torch_geometric.data.DataLoader",
    }
)
ALL_LOADERS = LOADERS | KEYWORD_LOADERS
NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
SEQUENTIALS = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})
# The callee name of a normalisation's object (``y / y.sum(d, keepdim=True)``):
# no library function, so no name a program can spell.
NORMALISED = "<normalised>"
# Wrappers whose call runs the wrapped module's `forward` with the same arguments.
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
# A list of transforms applied in turn to what the object is called with.
COMPOSES = frozenset(
    {
        "torchvision.transforms.Compose",
        "torchvision.transforms.transforms.Compose",
        "torchvision.transforms.v2.Compose",
        "torch_geometric.transforms.Compose",
        "monai.transforms.Compose",
    }
)
PARSE_METHODS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
# Readers of a config file (a handle, or a path for the last ones): the model reads the file.
CONFIG_READERS = frozenset(
    {
        "yaml.safe_load",
        "yaml.load",
        "yaml.full_load",
        "yaml.unsafe_load",
        "json.load",
        "tomllib.load",
        "tomli.load",
        "toml.load",
        "omegaconf.OmegaConf.load",
        "omegaconf.omegaconf.OmegaConf.load",
    }
)
HYDRA_MAIN = frozenset({"hydra.main"})
# Hugging Face trainers build a DataLoader per dataset, with
# ``num_workers=args.dataloader_num_workers`` (default 0) and ``collate_fn=data_collator``.
HF_TRAINERS = frozenset(
    {
        "transformers.Trainer",
        "transformers.Seq2SeqTrainer",
        "transformers.trainer.Trainer",
        "transformers.trainer_seq2seq.Seq2SeqTrainer",
        "trl.SFTTrainer",
        "trl.DPOTrainer",
    }
)
HF_TRAINER_DATASETS = (("train_dataset", 3), ("eval_dataset", 4))
COPIES = frozenset({"copy.deepcopy", "copy.copy"})
MAX_OBJECTS = 48  # past this a node is "anything": its set is no evidence
MAX_OPAQUE = 16  # of those, library values and constants
MAX_DOTS = 8  # a.b.c... chains of library attributes
MAX_DEPTH = 2  # call sites of context kept for copies of small functions
MAX_COPY_STATEMENTS = 30  # a function this small is copied per call site
ALL = "*"  # the element key that holds every element
KEYS = "<keys>"
BUILTIN_NAMES = frozenset(dir(builtins))
CONTAINER_METHODS = frozenset(
    {
        "append",
        "add",
        "insert",
        "extend",
        "update",
        "setdefault",
        "get",
        "pop",
        "items",
        "values",
        "keys",
        "copy",
        "__getitem__",
        "popitem",
        "remove",
        "clear",
        "index",
    }
)

Transform = Callable[[Obj], Iterable[Obj]]


@dataclass
class Signature:
    positional: list[str] = field(default_factory=list)
    vararg: str | None = None
    kwonly: list[str] = field(default_factory=list)
    kwarg: str | None = None


@dataclass
class CallSite:
    caller: Obj  # the FuncObj or ModuleObj whose code makes the call
    site: Site
    args: list[tuple[int, bool]]  # (node, is *starred)
    kwargs: list[tuple[str | None, int]]  # (name or None for **, node)
    dst: int


class Solver:
    def __init__(self, program: Program, budget: int = 0, max_nodes: int = 0) -> None:
        self.program = program
        self.pts: list[set[Obj]] = []
        self.pending: list[set[Obj]] = []
        self.succ: list[list[tuple[int, Transform | None]]] = []
        self.handlers: list[list[Callable[[Obj], None]]] = []
        self.labels: list[object] = []
        self.keyed: dict[tuple[object, ...], int] = {}
        self.objects: dict[tuple[object, ...], Obj] = {}
        self.edges: set[tuple[int, int, object]] = set()
        self.saturated: set[int] = set()
        self.queue: deque[int] = deque()
        self.deferred: deque[tuple[Callable[[Obj], None], list[Obj]]] = deque()
        self.queued: set[int] = set()
        self.calls: dict[str, set[str]] = {}
        self.signatures: dict[FuncObj, Signature] = {}
        self.functions: list[FuncObj] = []
        self.classes: list[ClassObj] = []
        self.bases: dict[ClassObj, list[int]] = {}
        self.subclasses: dict[ClassObj, set[ClassObj]] = {}
        self.mro_memo: dict[ClassObj, list[Obj]] = {}
        self.watched: dict[ClassObj, set[tuple[str, ClassObj | None]]] = {}
        self.module_names: dict[str, set[str]] = {}  # names bound at module level
        self.stars: dict[str, list[str]] = {}  # module -> modules it star-imports
        self.box_keys: dict[Obj, list[object]] = {}
        self.field_keys: dict[Obj, list[str]] = {}
        self.dirty: set[ClassObj] = set()
        self.ext_loads: dict[tuple[Obj, str], list[int]] = {}
        self.opaque: dict[int, int] = {}
        self.definitions: dict[FuncObj, tuple[object, dict[str, int]]] = {}
        self.ctx_nodes: dict[int, list[int]] = {}  # id(expression) -> its nodes in copies
        self.sizes: dict[FuncObj, int] = {}
        self.copies: dict[tuple[FuncObj, Site], FuncObj] = {}
        self.made_in: dict[Obj, str] = {}  # a library call's result -> the function that calls
        self.cloner: Callable[[FuncObj, tuple[Site, ...]], FuncObj] | None = None
        self.max_copies = 0
        self.expr_nodes: dict[int, int] = {}  # id(ast expression) -> its node
        self.budget = budget or 2_000_000
        self.max_nodes = max_nodes or 2_000_000
        self.partial_calls: set[tuple[Obj, int]] = set()
        self.wrapper_calls: set[tuple[int, int]] = set()
        self.steps = 0
        self.complete = True

    def release(self) -> None:
        """Drop the model's tables: the handlers' closures and partials
        refer back to the solver, so a dropped model would otherwise wait
        for a garbage collection (which an editor pays between keystrokes)."""
        for table in (
            self.pts,
            self.pending,
            self.succ,
            self.handlers,
            self.labels,
            self.functions,
            self.classes,
        ):
            table.clear()
        for mapping in (
            self.keyed,
            self.objects,
            self.calls,
            self.signatures,
            self.bases,
            self.subclasses,
            self.mro_memo,
            self.watched,
            self.copies,
            self.made_in,
            self.definitions,
            self.ext_loads,
            self.box_keys,
            self.field_keys,
            self.expr_nodes,
            self.ctx_nodes,
        ):
            mapping.clear()
        self.edges.clear()
        self.deferred.clear()
        self.cloner = None

    # -- nodes ---------------------------------------------------------------------------

    def node(self, label: object = None) -> int:
        self.pts.append(set())
        self.pending.append(set())
        self.succ.append([])
        self.handlers.append([])
        self.labels.append(label)
        return len(self.pts) - 1

    def key(self, *key: object) -> int:
        found = self.keyed.get(key)
        if found is None:
            found = self.keyed[key] = self.node(key)
            if key[0] == "g":
                self._link_global(found, str(key[1]), str(key[2]))
        return found

    def obj(self, key: tuple[object, ...], make: Callable[[], Obj]) -> Obj:
        found = self.objects.get(key)
        if found is None:
            found = self.objects[key] = make()
        return found

    def holding(self, obj: Obj) -> int:
        """A node that holds just ``obj``."""
        node = self.key("o", obj)
        self.add(node, (obj,))
        return node

    def field(self, obj: Obj, attr: str) -> int:
        node = self.keyed.get(("f", obj, attr))
        if node is None:
            node = self.key("f", obj, attr)
            self.field_keys.setdefault(obj, []).append(attr)
        return node

    def elem(self, obj: Obj, key: object) -> int:
        node = self.keyed.get(("e", obj, key))
        if node is None:
            node = self.key("e", obj, key)
            self.box_keys.setdefault(obj, []).append(key)
        return node

    def ret(self, func: FuncObj) -> int:
        return self.key("r", func)

    def yields(self, func: FuncObj) -> int:
        return self.key("y", func)

    def param(self, func: FuncObj, name: str) -> int:
        return self.key("p", func, name)

    def add(self, node: int, objs: Iterable[Obj]) -> None:
        pts = self.pts[node]
        for obj in objs:
            if obj in pts:
                continue
            if len(pts) >= MAX_OBJECTS:
                self.saturated.add(node)
                return
            if obj.opaque:
                # Library values and constants: a few say what a variable
                # holds; dozens (a config dict's every entry) say nothing and
                # would crowd out the project's own objects.
                count = self.opaque.get(node, 0)
                if count >= MAX_OPAQUE:
                    self.saturated.add(node)
                    continue
                self.opaque[node] = count + 1
            pts.add(obj)
            self.pending[node].add(obj)
            if node not in self.queued:
                self.queued.add(node)
                self.queue.append(node)

    def edge(
        self, src: int, dst: int, transform: Transform | None = None, tag: object = None
    ) -> None:
        if src == dst and transform is None:
            return
        mark = (src, dst, tag if transform is not None else None)
        if mark in self.edges:
            return
        self.edges.add(mark)
        self.succ[src].append((dst, transform))
        if src in self.saturated:
            self.saturated.add(dst)
        if self.pts[src]:
            self.add(dst, self._through(transform, self.pts[src]))

    def on(self, node: int, handler: Callable[[Obj], None]) -> None:
        """Run ``handler`` on every object that reaches ``node``. Objects
        already there are handled from the solver's loop, not here: a chain
        of handlers registering handlers would otherwise recurse as deep as
        the program's data flow (MONAI's and timm's did)."""
        self.handlers[node].append(handler)
        if self.pts[node]:
            self.deferred.append((handler, list(self.pts[node])))

    @staticmethod
    def _through(transform: Transform | None, objs: Iterable[Obj]) -> Iterable[Obj]:
        if transform is None:
            return list(objs)
        out: list[Obj] = []
        for obj in objs:
            out.extend(transform(obj))
        return out

    def _stop(self) -> None:
        """Past the budget: what is known stays, the model is incomplete."""
        self.complete = False
        self.queue.clear()
        self.queued.clear()
        self.deferred.clear()

    def solve(self) -> None:
        while self.queue or self.dirty or self.deferred:
            if self.deferred:
                handler, objs = self.deferred.popleft()
                self.steps += len(objs)
                for obj in objs:
                    handler(obj)
                if self.steps > self.budget or len(self.pts) > self.max_nodes:
                    self._stop()
                    return
                continue
            if not self.queue:
                self._refresh()
                continue
            node = self.queue.popleft()
            self.queued.discard(node)
            delta = self.pending[node]
            if not delta:
                continue
            self.pending[node] = set()
            self.steps += len(delta) * (1 + len(self.succ[node]) + len(self.handlers[node]))
            if self.steps > self.budget or len(self.pts) > self.max_nodes:
                self._stop()
                return
            for dst, transform in list(self.succ[node]):
                if node in self.saturated:
                    self.saturated.add(dst)
                self.add(dst, self._through(transform, delta))
            for handler in list(self.handlers[node]):
                for obj in list(delta):
                    handler(obj)

    def lambdas(self, node: ast.AST) -> dict[int, int]:
        """``<lambdaN>`` numbers of a function's own lambdas (every copy of
        the function asks again)."""
        return lambdas_of(node)

    def generator(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
        return generator_of(node)

    def scope_names(self, node: ast.AST) -> tuple[set[str], set[str], set[str]]:
        return scope_of(node)

    def context(self, func: FuncObj, cs: CallSite) -> FuncObj:
        """The copy of a small function analysed for this call site alone,
        so two calls of one factory keep their own arguments and results
        (call-site sensitivity, two calls deep); else the shared definition."""
        origin = func.origin
        if self.cloner is None or len(cs.site.ctx) >= MAX_DEPTH:
            return func
        if isinstance(cs.caller, FuncObj) and cs.caller.origin is origin:
            return func  # recursion
        key = (origin, cs.site)
        found = self.copies.get(key)
        if found is not None:
            return found
        if len(self.copies) >= self.max_copies or self._size(origin) > MAX_COPY_STATEMENTS:
            return func
        found = self.copies[key] = self.cloner(origin, (*cs.site.ctx, cs.site))
        return found

    def _size(self, func: FuncObj) -> int:
        size = self.sizes.get(func)
        if size is None:
            size = self.sizes[func] = count_statements(func.node)
        return size

    # -- globals and star imports --------------------------------------------------------

    def _link_global(self, node: int, module: str, name: str) -> None:
        """A module global also receives what the module's star imports
        export under that name; a name bound nowhere may be a built-in."""
        if name in self.module_names.get(module, ()):
            return
        sources = self._star_sources(module, name, set())
        for target in sources:
            self.edge(self.key("g", target, name), node)
        if not sources and name in BUILTIN_NAMES and not self.stars.get(module):
            self.add(node, (self.external(f"<builtin>.{name}"),))

    def _star_sources(self, module: str, name: str, seen: set[str]) -> list[str]:
        memo = self.keyed.get(("star", module, name))
        if memo is not None:
            return list(self.labels[memo])  # type: ignore[call-overload]
        seen.add(module)
        found: list[str] = []
        for target in self.stars.get(module, ()):
            if target in seen or target not in self.program.modules:
                continue
            if name in self.module_names.get(target, ()):
                found.append(target)
            else:
                found.extend(self._star_sources(target, name, seen))
        self.keyed[("star", module, name)] = self.node(tuple(found))
        return found

    # -- objects -------------------------------------------------------------------------

    def external(self, name: str) -> ExternalObj:
        return self.obj(("ext", name), lambda: ExternalObj(name))  # type: ignore[return-value]

    def const(self, value: object) -> int:
        obj = self.obj(("const", type(value), value), lambda: ConstObj(value))
        return self.holding(obj)

    def module_obj(self, name: str) -> ModuleObj | None:
        module = self.program.modules.get(name)
        return module.obj if module else None

    def bound(self, func: FuncObj, self_obj: Obj) -> BoundObj:
        return self.obj(("bound", func, self_obj), lambda: BoundObj(func, self_obj))  # type: ignore[return-value]

    def ext_attr(self, base: Obj, attr: str, qname: str | None) -> ExtAttrObj:
        key = ("xattr", base, attr)
        found = self.objects.get(key)
        if found is None:
            if qname is not None and qname.count(".") > MAX_DOTS:
                qname = None
            found = self.objects[key] = ExtAttrObj(base, attr, qname)
        return found  # type: ignore[return-value]

    def ext_field(self, obj: Obj, attr: str, dst: int) -> None:
        """Load a field of a library object: most are never stored to, so
        the field node is made only when a store reaches it."""
        node = self.keyed.get(("f", obj, attr))
        if node is not None:
            self.edge(node, dst)
        else:
            self.ext_loads.setdefault((obj, attr), []).append(dst)

    def _stored_field(self, obj: Obj, attr: str) -> int:
        node = self.keyed.get(("f", obj, attr))
        if node is None:
            node = self.field(obj, attr)
            for dst in self.ext_loads.pop((obj, attr), ()):
                self.edge(node, dst)
        return node

    # -- classes -------------------------------------------------------------------------

    def set_bases(self, cls: ClassObj, nodes: list[int]) -> None:
        self.bases[cls] = nodes
        for node in nodes:
            self.on(node, functools.partial(self._base_arrived, cls))

    def _base_arrived(self, cls: ClassObj, base: Obj) -> None:
        if isinstance(base, ClassObj):
            self.subclasses.setdefault(base, set()).add(cls)
        self.dirty.add(cls)  # recomputed once the queue drains: bases arrive in bursts

    def _refresh(self) -> None:
        """Recompute the MROs that changed and follow them with every
        attribute looked up through them."""
        affected: set[ClassObj] = set()
        stack = list(self.dirty)
        self.dirty.clear()
        while stack:
            cls = stack.pop()
            if cls in affected:
                continue
            affected.add(cls)
            stack.extend(self.subclasses.get(cls, ()))
        for cls in affected:
            self.mro_memo.pop(cls, None)
        for cls in affected:
            for attr, after in list(self.watched.get(cls, ())):
                self._connect(cls, attr, after)

    def mro(self, cls: ClassObj) -> list[Obj]:
        memo = self.mro_memo.get(cls)
        if memo is None:
            self.mro_memo[cls] = [cls]  # a cycle of bases ends here
            memo = self.mro_memo[cls] = self._c3(cls)
        return memo

    def _c3(self, cls: ClassObj) -> list[Obj]:
        heads: list[list[Obj]] = []
        direct: list[Obj] = []
        for node in self.bases.get(cls, []):
            for base in sorted(self.pts[node], key=_order):
                if isinstance(base, ClassObj) and base is not cls:
                    heads.append(list(self.mro(base)))
                    direct.append(base)
                elif isinstance(base, ExternalObj) and base.name != "<builtin>.object":
                    heads.append([base])
                    direct.append(base)
        heads.append(direct)
        out: list[Obj] = [cls]
        while True:
            heads = [seq for seq in heads if seq]
            if not heads:
                return out
            tails: set[Obj] = set()
            for seq in heads:
                tails.update(seq[1:])
            head = next((seq[0] for seq in heads if seq[0] not in tails), heads[0][0])
            if head not in out:
                out.append(head)
            heads = [[c for c in seq if c is not head] for seq in heads]

    def class_attr(self, cls: ClassObj, attr: str, after: ClassObj | None = None) -> int:
        """The node of ``attr`` looked up through ``cls``'s MRO (after
        ``after`` for ``super()``); it follows the MRO as bases resolve."""
        node = self.keyed.get(("ca", cls, attr, after))
        if node is None:
            node = self.key("ca", cls, attr, after)
            self.watched.setdefault(cls, set()).add((attr, after))
            self._connect(cls, attr, after)
        return node

    def _connect(self, cls: ClassObj, attr: str, after: ClassObj | None) -> None:
        node = self.keyed[("ca", cls, attr, after)]
        order = self.mro(cls)
        if after is not None:
            order = order[order.index(after) + 1 :] if after in order else []
        projects = [c for c in order if isinstance(c, ClassObj)]
        for klass in projects:
            if attr in klass.defines:
                self.edge(self.field(klass, attr), node)
                return
        for klass in projects:  # set from outside the class body (``A.x = f``)
            self.edge(self.field(klass, attr), node)
        if any(attr in klass.instance_attrs for klass in projects):
            return  # an instance attribute, not the library base's
        for ext in order:
            if isinstance(ext, ExternalObj):
                self.add(node, (self.external(f"{ext.name}.{attr}"),))
                return

    def is_module_like(self, cls: ClassObj) -> bool:
        """A class whose calls go to ``forward``: no ``__call__`` of its own
        and a base from a library (``nn.Module`` or one derived from it)."""
        order = self.mro(cls)
        if any(isinstance(c, ClassObj) and "__call__" in c.defines for c in order):
            return False
        return any(isinstance(c, ExternalObj) for c in order)

    def binder(self, inst: Obj, via_class: bool = False) -> Transform:
        """What an attribute found on the class is, read through ``inst``."""

        def bind(value: Obj) -> Iterable[Obj]:
            if isinstance(value, FuncObj):
                if value.kind == "property":
                    return ()
                if value.kind == "staticmethod":
                    return (value,)
                if value.kind == "classmethod":
                    owner = inst.cls if isinstance(inst, InstObj) else inst
                    return (self.bound(value, owner),)
                if via_class:
                    return (value,)
                return (self.bound(value, inst),)
            if isinstance(value, ExternalObj) and not via_class:
                attr = value.name.rsplit(".", 1)[-1]
                if (
                    attr == "__call__"
                    and isinstance(inst, InstObj)
                    and self.is_module_like(inst.cls)
                ):
                    return (inst,)  # `self.__call__(x)` runs `forward`, as `self(x)` does
                return (self.ext_attr(inst, attr, value.name),)
            return (value,)

        return bind

    # -- loads and stores ----------------------------------------------------------------

    def load(self, base: int, attr: str, dst: int) -> None:
        self.on(base, lambda obj: self._load_one(obj, attr, dst))

    def _load_one(self, obj: Obj, attr: str, dst: int) -> None:
        if isinstance(obj, ModuleObj):
            sub = self.module_obj(f"{obj.name}.{attr}")
            if sub is not None:
                self.add(dst, (sub,))
            self.edge(self.key("g", obj.name, attr), dst)
        elif isinstance(obj, InstObj):
            self.edge(self.field(obj, attr), dst)
            found = self.class_attr(obj.cls, attr)
            self.edge(found, dst, self.binder(obj), ("bind", obj))
            self.on(found, lambda value: self._property(value, obj, dst))
        elif isinstance(obj, ClassObj):
            self.edge(
                self.class_attr(obj, attr), dst, self.binder(obj, via_class=True), ("cbind", obj)
            )
        elif isinstance(obj, SuperObj):
            owner = obj.self_obj.cls if isinstance(obj.self_obj, InstObj) else obj.self_obj
            if isinstance(owner, ClassObj):
                self.edge(
                    self.class_attr(owner, attr, obj.cls),
                    dst,
                    self.binder(
                        obj.self_obj, isinstance(obj.self_obj, ClassObj) and attr != "__init__"
                    ),
                    ("sbind", obj.self_obj),
                )
        elif isinstance(obj, ExternalObj):
            if obj.name.count(".") <= MAX_DOTS:
                self.add(dst, (self.external(f"{obj.name}.{attr}"),))
        elif isinstance(obj, (ExtCallObj, ExtAttrObj)):
            self.ext_field(obj, attr, dst)
            callee = obj.callee if isinstance(obj, ExtCallObj) else None
            if isinstance(callee, ExtAttrObj) and callee.attr in PARSE_METHODS:
                self.edge(self.field(callee.base, f"<arg>{attr}"), dst)
            kind = obj.type_name if isinstance(obj, ExtCallObj) else None
            self.add(dst, (self.ext_attr(obj, attr, f"{kind}.{attr}" if kind else None),))
        elif isinstance(obj, ContainerObj):
            if obj.kind == "config":
                self.edge(self.elem(obj, attr), dst)  # OmegaConf: cfg.data.num_workers
            if attr in CONTAINER_METHODS:
                self.add(dst, (self.obj(("meth", obj, attr), lambda: MethodObj(obj, attr)),))
        elif isinstance(obj, (FuncObj, BoundObj, GenObj, PartialObj)):
            self.edge(self.field(obj, attr), dst)

    def _property(self, value: Obj, inst: Obj, dst: int) -> None:
        """Reading a property runs its getter with the instance."""
        if isinstance(value, FuncObj) and value.kind == "property":
            params = self.signatures[value].positional
            if params:
                self.add(self.param(value, params[0]), (inst,))
            self.edge(self.ret(value), dst)

    def store(self, base: int, attr: str, value: int) -> None:
        def one(obj: Obj) -> None:
            if isinstance(obj, ModuleObj):
                self.edge(value, self.key("g", obj.name, attr))
            elif isinstance(obj, (ExtCallObj, ExtAttrObj, ExternalObj)):
                self.edge(value, self._stored_field(obj, attr))
            elif not isinstance(obj, (ConstObj, SuperObj)):
                self.edge(value, self.field(obj, attr))

        self.on(base, one)

    def load_elem(self, base: int, key: object, dst: int, cs: CallSite | None = None) -> None:
        def one(obj: Obj) -> None:
            if isinstance(obj, ContainerObj):
                if key is ALL or obj.kind == "set":
                    self.edge(self.elem(obj, ALL), dst)
                else:
                    self.edge(self.elem(obj, key), dst)
                    self.edge(self.elem(obj, "?"), dst)  # stored under an unknown key
            elif isinstance(obj, InstObj) and cs is not None:
                self.call_method(obj, "__getitem__", cs)
            elif isinstance(obj, (ExtCallObj, ExtAttrObj)):
                self.ext_field(obj, "[]", dst)
                self.add(dst, (self.ext_attr(obj, "[]", None),))

        self.on(base, one)

    def load_key(self, base: int, key: int, dst: int, cs: CallSite) -> None:
        """``box[k]`` with ``k`` a variable: what ``k`` holds picks the
        entries (a factory's ``REGISTRY[name]`` called with "a" reads entry
        "a"); a key that is not a constant reads them all."""

        def one(obj: Obj) -> None:
            if isinstance(obj, ContainerObj) and obj.kind != "set":
                self.on(key, functools.partial(self._keyed_load, obj, dst))
            else:
                self.load_elem(self.holding(obj), ALL, dst, cs)

        self.on(base, one)

    def _keyed_load(self, box: ContainerObj, dst: int, key: Obj) -> None:
        if isinstance(key, ConstObj) and isinstance(key.value, (str, int)):
            self.edge(self.elem(box, key.value), dst)
            self.edge(self.elem(box, "?"), dst)
        else:
            self.edge(self.elem(box, ALL), dst)

    def store_key(self, base: int, key: int, value: int) -> None:
        """``box[k] = v`` with ``k`` a variable: stored under what ``k`` holds."""

        def one(obj: Obj) -> None:
            if isinstance(obj, ContainerObj):
                self.on(key, functools.partial(self._keyed_store, obj, value))
            else:
                self.store_elem(self.holding(obj), ALL, value)

        self.on(base, one)

    def _keyed_store(self, box: ContainerObj, value: int, key: Obj) -> None:
        self.edge(value, self.elem(box, ALL))
        if isinstance(key, ConstObj) and isinstance(key.value, (str, int)):
            self.edge(value, self.elem(box, key.value))
            if box.kind == "dict":
                self.add(self.elem(box, KEYS), (key,))
        else:
            self.edge(value, self.elem(box, "?"))

    def put(self, box: ContainerObj, key: object, value: int) -> None:
        """Store into a container known now (a display, a strong update)."""
        self.edge(value, self.elem(box, ALL))
        self.edge(value, self.elem(box, "?" if key is ALL else key))

    def store_elem(self, base: int, key: object, value: int) -> None:
        def one(obj: Obj) -> None:
            if isinstance(obj, ContainerObj):
                self.put(obj, key, value)
            elif isinstance(obj, (ExtCallObj, ExtAttrObj)):
                self.edge(value, self._stored_field(obj, "[]"))
            elif isinstance(obj, InstObj):
                self.edge(value, self.field(obj, "[]"))

        self.on(base, one)

    def iterate(self, base: int, caller: Obj, site: Site) -> int:
        """The node of what ``for x in base`` gives ``x``."""
        found = self.keyed.get(("iter", base, caller))
        if found is not None:
            return found
        dst = self.key("iter", base, caller)

        def one(obj: Obj) -> None:
            if isinstance(obj, ContainerObj):
                self.edge(self.elem(obj, KEYS if obj.kind == "dict" else ALL), dst)
            elif isinstance(obj, GenObj):
                self.edge(self.yields(obj.func), dst)
            elif isinstance(obj, InstObj):
                got = self.node("iter()")
                self.call_method(obj, "__iter__", CallSite(caller, site, [], [], got))
                self.on(got, lambda it: self._next(it, caller, site, dst))
            elif isinstance(obj, (ExtCallObj, ExtAttrObj)):
                self.ext_field(obj, "[]", dst)
                self.add(dst, (self.ext_attr(obj, "[]", None),))

        self.on(base, one)
        return dst

    def _next(self, it: Obj, caller: Obj, site: Site, dst: int) -> None:
        if isinstance(it, InstObj):
            self.call_method(it, "__next__", CallSite(caller, site, [], [], dst))
        elif isinstance(it, GenObj):
            self.edge(self.yields(it.func), dst)
        elif isinstance(it, ContainerObj):
            self.edge(self.elem(it, ALL), dst)

    # -- calls ---------------------------------------------------------------------------

    def record(self, caller: Obj, callee: str) -> None:
        self.calls.setdefault(self.caller_name(caller), set()).add(callee)

    def call(self, func: int, cs: CallSite) -> None:
        self.on(func, lambda obj: self.invoke(obj, cs))

    def call_method(self, inst: InstObj, name: str, cs: CallSite) -> None:
        got = self.node(name)
        self.edge(self.class_attr(inst.cls, name), got, self.binder(inst), ("bind", inst))
        self.call(got, cs)

    def invoke(self, obj: Obj, cs: CallSite, prepend: tuple[int, ...] = ()) -> None:
        if isinstance(obj, FuncObj):
            self.record(cs.caller, obj.qname)
            target = self.context(obj, cs)
            self.bind(target, cs, prepend)
            if target.is_generator:
                self.add(cs.dst, (self.obj(("gen", target), lambda: GenObj(target)),))
            elif target.kind != "property":
                self.edge(self.ret(target), cs.dst)
        elif isinstance(obj, BoundObj):
            self.invoke(obj.func, cs, (self.holding(obj.self_obj), *prepend))
        elif isinstance(obj, ClassObj):
            inst = self.instance(obj, cs.site)
            self.add(cs.dst, (inst,))
            init = self.node("__init__")
            self.edge(
                self.class_attr(obj, "__init__"),
                init,
                functools.partial(self._init, inst=inst),
                ("init", inst),
            )
            self.call(init, CallSite(cs.caller, cs.site, cs.args, cs.kwargs, self.node("None")))
            self._dataclass_init(obj, inst, cs)
        elif isinstance(obj, InstObj):
            name = "forward" if self.is_module_like(obj.cls) else "__call__"
            self.call_method(obj, name, cs)
        elif isinstance(obj, PartialObj):
            # Once per partial and call site: ``a = partial(a, x)`` in a loop
            # holds itself, and each expansion would call it again with its
            # arguments prepended once more, without end.
            if (obj, cs.dst) in self.partial_calls:
                return
            self.partial_calls.add((obj, cs.dst))
            args = [(n, False) for n in obj.args] + cs.args
            kwargs = [(k, n) for k, n in obj.kwargs.items()] + cs.kwargs
            self.call(obj.func, CallSite(cs.caller, cs.site, args, kwargs, cs.dst))
        elif isinstance(obj, MethodObj):
            self._container_method(obj, cs)
        elif isinstance(obj, ExternalObj):
            self._call_external(obj, cs)
        elif (
            isinstance(obj, ExtAttrObj)
            and obj.attr == "forward"
            and isinstance(obj.base, ExtCallObj)
            and _torch_module(obj.base.type_name)
        ):
            # `seq.forward(x)`, `criterion.forward(out, y)`: the module's call.
            self.invoke(obj.base, cs)
        elif isinstance(obj, ExtAttrObj):
            if obj.qname:
                self.record(cs.caller, obj.qname)
            if (
                obj.attr == "__init__"
                and obj.qname
                and obj.qname[: -len(".__init__")] in ALL_LOADERS
            ):
                # `class Iterator(DataLoader)`: `super().__init__(dataset, ...)`
                # builds the loader the subclass is, with these arguments
                loader = self._ext_call(self.external(obj.qname[: -len(".__init__")]), cs)
                self._loader_calls(loader, cs)
                return
            made = self._ext_call(obj, cs)  # kept: where a module moved to CUDA
            base = obj.base
            if (
                obj.attr in MODULE_SELF_METHODS
                and isinstance(base, InstObj)
                and self.is_module_like(base.cls)
            ):
                # `Net().to(device)`: nn.Module's own method returns the module.
                self.add(cs.dst, (base,))
            elif obj.attr in MODULE_SELF_METHODS and (
                isinstance(base, ExtCallObj) and _torch_module(base.type_name)
            ):
                # `nn.CrossEntropyLoss().cuda()` is the loss module itself; the
                # moved value stays too (what lives on the GPU is asked of it).
                self.add(cs.dst, (base, made))
            else:
                self.add(cs.dst, (made,))
            self._library_method(obj, cs)
        elif isinstance(obj, ExtCallObj):
            self._call_library_object(obj, cs)

    def _dataclass_init(self, cls: ClassObj, inst: InstObj, cs: CallSite) -> None:
        """The ``__init__`` a dataclass is given: arguments in field order
        (base classes' fields first), stored on the instance."""
        names: list[str] = []
        for klass in reversed(self.mro(cls)):
            if isinstance(klass, ClassObj) and klass.fields is not None:
                if "__init__" in klass.defines:
                    return
                names.extend(n for n in klass.fields if n not in names)
        if not names:
            return
        for name, (node, starred) in zip(names, cs.args, strict=False):
            if starred:
                break
            self.edge(node, self.field(inst, name))
        for key, node in cs.kwargs:
            if key in names:
                self.edge(node, self.field(inst, key))

    def instance(self, cls: ClassObj, site: Site | None) -> InstObj:
        return self.obj(("inst", cls, site), lambda: InstObj(cls, site))  # type: ignore[return-value]

    def _init(self, value: Obj, *, inst: InstObj) -> tuple[Obj, ...]:
        """The ``__init__`` a construction runs: a project method bound to
        the new instance, or a library base's (an edge, no effect)."""
        if isinstance(value, FuncObj):
            return (self.bound(value, inst),)
        if isinstance(value, ExternalObj) and not value.name.startswith("<builtin>."):
            return (self.ext_attr(inst, "__init__", value.name),)
        return ()

    def _library_method(self, obj: ExtAttrObj, cs: CallSite) -> None:
        """Library methods whose effect the model needs: argparse's
        ``add_argument(..., default=v)`` (what ``args.x`` holds when the
        command line does not say), and ``parse_args()``'s namespace."""
        base = obj.base
        if obj.attr == "add_argument" and isinstance(base, ExtCallObj):
            kwargs = {k: n for k, n in cs.kwargs if k is not None}
            if "default" not in kwargs:
                return
            dest_node = kwargs.get("dest")
            names = [n for n, starred in cs.args if not starred]
            for node in [dest_node] if dest_node is not None else names:
                self.on(
                    node,
                    functools.partial(self._argument_default, base, kwargs["default"], cs.site),
                )
        elif obj.attr == "prepare" and isinstance(base, ExtCallObj):
            if (base.type_name or "").endswith(".Accelerator"):
                self._returns_arguments(cs)
        elif obj.attr == "__init__" and obj.qname in HF_TRAINERS:
            self._trainer_loaders(cs)
        elif (
            obj.attr == "add_module"
            and isinstance(base, ExtCallObj)
            and base.type_name in SEQUENTIALS
            and len(cs.args) == 2
            and ("seq", base, len(base.args)) not in self.keyed
        ):
            # `seq.add_module("fc", nn.Linear(...))` before the Sequential is
            # called: one more module at its end (once it has run, its chain
            # is fixed and later additions are not followed).
            base.args.append(cs.args[1][0])

    def _argument_default(self, parser: Obj, default: int, site: Site, name: Obj) -> None:
        if isinstance(name, ConstObj) and isinstance(name.value, str):
            dest = name.value.lstrip("-").replace("-", "_")
            long_or_positional = name.value.startswith("--") or not name.value.startswith("-")
            if dest.isidentifier() and long_or_positional:
                where = f"default at {self.where(site)}"
                self.edge(
                    default,
                    self.field(parser, f"<arg>{dest}"),
                    lambda value: (self.origin_const(value, where),),
                    ("argdefault", site),
                )

    def where(self, site: Site) -> str:
        """``train.py:40``: a site as a message names it."""
        module = self.program.modules.get(site.module)
        name = module.obj.path if module is not None else site.module
        return f"{name.replace(chr(92), '/').rsplit('/', 1)[-1]}:{site.line}"

    def origin_const(self, value: Obj, origin: str) -> Obj:
        """A constant that remembers where it comes from (what else
        arrives passes unchanged)."""
        if not isinstance(value, ConstObj) or isinstance(value, OriginConst):
            return value
        constant = value.value
        return self.obj(
            ("origin", type(constant), constant, origin), lambda: OriginConst(constant, origin)
        )

    def _returns_arguments(self, cs: CallSite) -> None:
        """``accelerator.prepare(model, opt, loader)`` hands back what it
        was given (wrapped, the same loader for the rules): one value, or a
        tuple of them in order."""
        args = [n for n, starred in cs.args if not starred]
        if len(args) == 1:
            self.edge(args[0], cs.dst)
        elif args:
            box = self.container("tuple", cs.site, "prepare")
            for index, node in enumerate(args):
                self.edge(node, self.elem(box, index))
                self.edge(node, self.elem(box, ALL))
            self.add(cs.dst, (box,))

    def _trainer_loaders(self, cs: CallSite) -> None:
        """The DataLoaders a Hugging Face ``Trainer`` builds: one per
        dataset, with ``args.dataloader_num_workers`` workers (0 unless the
        ``TrainingArguments`` say) and the ``data_collator``."""
        positional = [n for n, starred in cs.args if not starred]
        keywords = {k: n for k, n in cs.kwargs if k is not None}

        def argument(name: str, position: int) -> int | None:
            if name in keywords:
                return keywords[name]
            return positional[position] if position < len(positional) else None

        training_args = argument("args", 1)
        if training_args is None:
            return  # the default TrainingArguments: no workers
        workers = self.node("dataloader_num_workers")
        self.on(training_args, functools.partial(self._hf_workers, workers))
        collator = argument("data_collator", 2)
        loader_type = self.external("torch.utils.data.DataLoader")
        for name, position in HF_TRAINER_DATASETS:
            dataset = argument(name, position)
            if dataset is None:
                continue
            kwargs = {"dataset": dataset, "num_workers": workers}
            if collator is not None:
                kwargs["collate_fn"] = collator
            key = ("hf-loader", cs.site, name)
            if key in self.objects:
                continue
            loader = ExtCallObj(loader_type, cs.site, [], kwargs)
            self.objects[key] = loader
            self._loader_calls(loader, cs)

    def _hf_workers(self, workers: int, args: Obj) -> None:
        if isinstance(args, ExtCallObj) and (args.type_name or "").endswith("TrainingArguments"):
            node = args.kwargs.get("dataloader_num_workers")
            if node is not None:
                self.edge(node, workers)
            else:
                self.edge(self.const(0), workers)  # TrainingArguments' default
        else:
            self.load(self.holding(args), "dataloader_num_workers", workers)

    # -- config files --------------------------------------------------------------------

    def _config_file(self, cs: CallSite, depth: int, source: Obj) -> None:
        """``yaml.safe_load(open("cfg.yaml"))``, ``OmegaConf.load("cfg.yaml")``:
        follow the argument to a literal path (through ``open()``, ``.read()``,
        ``Path(...)``) and give the call the file's contents."""
        if depth > 3:
            return
        if isinstance(source, ConstObj) and isinstance(source.value, str):
            module = self.program.modules.get(cs.site.module)
            if module is None:
                return
            path = configs.find(module.obj.path, source.value)
            if path is not None:
                self.add(cs.dst, (self.config_value(path, cs.site),))
            return
        if not isinstance(source, ExtCallObj):
            return
        callee = source.callee
        follow: int | None = None
        if source.type_name in ("<builtin>.open", "pathlib.Path", "io.open", "codecs.open"):
            follow = source.args[0] if source.args else None
        elif isinstance(callee, ExtAttrObj) and callee.attr in ("read", "read_text", "open"):
            follow = self.holding(callee.base)
        if follow is not None:
            self.on(follow, functools.partial(self._config_file, cs, depth + 1))

    def config_value(self, path: str, site: Site, data: object = None, prefix: str = "") -> Obj:
        """The object a config file's contents are: a "config" container
        per mapping (keys read as items or attributes), constants that
        remember their file and line."""
        if not prefix:
            data = configs.read(path)
        if isinstance(data, (dict, list)):
            box = self.container("config", site, f"{path}#{prefix}")
            items = data.items() if isinstance(data, dict) else enumerate(data)
            for key, value in items:
                child = self.config_value(path, site, value, f"{prefix}/{key}")
                self.add(self.elem(box, key), (child,))
            return box
        if isinstance(data, configs.Scalar):
            value = data.value
            plain = self.obj(("const", type(value), value), lambda: ConstObj(value))
            return self.origin_const(plain, f"{data.file}:{data.line}" if data.line else data.file)
        return self.obj(("const", type(None), None), lambda: ConstObj(None))

    def hydra_main(self, decorator: ExtCallObj, func: Obj) -> None:
        """``@hydra.main(config_path="conf", config_name="config")``: the
        function's first parameter is that file's config (with the groups
        its ``defaults`` list names)."""
        if not isinstance(func, FuncObj):
            return
        params = self.signatures[func].positional
        module = self.program.modules.get(func.module.name)
        if not params or module is None:
            return

        def text(key: str, position: int) -> str | None:
            node = decorator.kwargs.get(key)
            if node is None and position < len(decorator.args):
                node = decorator.args[position]
            values = self.pts[node] if node is not None else set()
            value = next(iter(values), None) if len(values) == 1 else None
            return (
                value.value
                if isinstance(value, ConstObj) and isinstance(value.value, str)
                else None
            )

        folder, name = text("config_path", 0) or "", text("config_name", 1)
        if name is None:
            return
        here = module.obj.path
        path = configs.find(here, folder, (f"{name}.yaml", name))
        if path is None:
            return
        data = configs.read(path)
        if isinstance(data, dict):
            for entry in data.get("defaults", []) if isinstance(data.get("defaults"), list) else []:
                if not isinstance(entry, dict) or len(entry) != 1:
                    continue
                group, choice = next(iter(entry.items()))
                if group in data or not isinstance(choice, configs.Scalar):
                    continue
                found = configs.find(here, f"{folder}/{group}", (f"{choice.value}.yaml",))
                sub = configs.read(found) if found is not None else None
                if isinstance(sub, dict):
                    data[group] = sub
        box = self.config_value(path, decorator.site, data, "/") if data is not None else None
        if box is not None:
            self.add(self.param(func, params[0]), (box,))

    def _call_library_object(self, obj: ExtCallObj, cs: CallSite) -> None:
        """Calling what a library call made: an ``nn.Sequential`` runs its
        modules in turn (each one's ``forward`` gets the previous output)."""
        if obj.type_name in SEQUENTIALS and cs.args:
            self.edge(cs.args[0][0], self.key("seq", obj, 0))
            self.edge(self._sequence(obj, cs), cs.dst)
        if obj.type_name in WRAPPERS and obj.args:
            # `nn.DataParallel(net)(x)` is `net(x)`: its output, not a library value.
            # Once per (wrapped node, call): `model = nn.DataParallel(model)`
            # wraps itself, and each call registered the call again on the
            # node holding it (pytorch/examples: 2 million handlers, stopped
            # at the step budget). The same call on the same node twice adds
            # nothing.
            if (obj.args[0], id(cs)) not in self.wrapper_calls:
                self.wrapper_calls.add((obj.args[0], id(cs)))  # cs lives in the handler
                self.call(obj.args[0], cs)
            return
        if obj.type_name in COMPOSES and obj.args and cs.args:
            # Each transform gets the input or another's output (read
            # flow-insensitively: the order of the list is not followed).
            flow = self.key("compose", obj)
            self.edge(cs.args[0][0], flow)
            if ("compose-out", obj) not in self.keyed:
                out = self.key("compose-out", obj)
                transforms = self.key("compose-each", obj)
                self.load_elem(obj.args[0], ALL, transforms)
                self.call(transforms, CallSite(cs.caller, cs.site, [(flow, False)], [], out))
                self.edge(out, flow)
            self.edge(self.key("compose-out", obj), cs.dst)
        self.add(cs.dst, (self._ext_call(obj, cs),))

    def _sequence(self, obj: ExtCallObj, cs: CallSite) -> int:
        """The node of what a ``Sequential``'s last module returns. Its
        modules are chained once per object, not per call: a Sequential that
        holds itself (``block = nn.Sequential(block, layer)`` in a loop) would
        otherwise be expanded again at every call, without end."""
        last = len(obj.args)
        if ("seq", obj, last) not in self.keyed:
            for i, node in enumerate(obj.args):
                previous = self.key("seq", obj, i)
                out = self.key("seq", obj, i + 1)
                self.call(node, CallSite(cs.caller, cs.site, [(previous, False)], [], out))
        return self.key("seq", obj, last)

    def _ext_call(self, callee: Obj, cs: CallSite) -> ExtCallObj:
        key = ("xcall", callee, cs.site)
        found = self.objects.get(key)
        if found is None:
            args = [n for n, _ in cs.args]
            kwargs = {k: n for k, n in cs.kwargs if k is not None}
            found = self.objects[key] = ExtCallObj(callee, cs.site, args, kwargs)
            self.made_in[found] = self.caller_name(cs.caller)
        return found  # type: ignore[return-value]

    @staticmethod
    def caller_name(caller: Obj) -> str:
        return caller.name if isinstance(caller, ModuleObj) else caller.qname  # type: ignore[attr-defined]

    def bind(self, func: FuncObj, cs: CallSite, prepend: tuple[int, ...]) -> None:
        sig = self.signatures.get(func)
        if sig is None:
            return
        positional = [(n, False) for n in prepend] + list(cs.args)
        names = sig.positional
        index = 0
        spread = False
        for node, starred in positional:
            if starred:
                items = self.iterate(node, cs.caller, cs.site)
                for later in names[index:]:
                    self.edge(items, self.param(func, later))
                if sig.vararg:
                    self.store_elem(self.param(func, sig.vararg), ALL, items)
                spread = True
                continue
            if spread:
                for later in names[index:]:
                    self.edge(node, self.param(func, later))
            if index < len(names):
                self.edge(node, self.param(func, names[index]))
            elif sig.vararg:
                self.store_elem(self.param(func, sig.vararg), index - len(names), node)
            index += 1
        keywords = set(names) | set(sig.kwonly)
        for name, node in cs.kwargs:
            if name is None:
                for target in keywords:
                    got = self.node("**")
                    self.load_elem(node, target, got)
                    self.edge(got, self.param(func, target))
                if sig.kwarg:
                    self.edge(node, self.param(func, sig.kwarg))
            elif name in keywords:
                self.edge(node, self.param(func, name))
            elif sig.kwarg:
                self.store_elem(self.param(func, sig.kwarg), name, node)

    def _call_external(self, obj: ExternalObj, cs: CallSite) -> None:
        name = obj.name
        self.record(cs.caller, name)
        short = name.rsplit(".", 1)[-1]
        args = [n for n, starred in cs.args if not starred]
        if name in ("functools.partial", "<builtin>.partial") and args:
            kw = {k: n for k, n in cs.kwargs if k is not None}
            partial = self.obj(
                ("partial", cs.site), lambda: PartialObj(args[0], args[1:], kw, cs.site)
            )
            self.add(cs.dst, (partial,))
            return
        if name.startswith("<builtin>.") and self._builtin(short, args, cs):
            return
        if name in COPIES and args:
            # A copy holds objects of the same classes in the same state:
            # read as the objects themselves (its fields, methods and what
            # workers get), not as a library value
            self.edge(args[0], cs.dst)
            return
        if name in CONFIG_READERS and args:
            self.on(args[0], functools.partial(self._config_file, cs, 0))
        result = self._ext_call(obj, cs)
        self.add(cs.dst, (result,))
        if name in HF_TRAINERS:
            self._trainer_loaders(cs)
        if name in ALL_LOADERS:
            self._loader_calls(result, cs)
        elif name in NAMESPACES:
            for key, node in cs.kwargs:
                if key is not None:
                    self.edge(node, self._stored_field(result, key))

    def _loader_calls(self, loader: ExtCallObj, cs: CallSite) -> None:
        """What a DataLoader calls in its workers: the dataset's
        ``__getitem__``/``__iter__``, the sampler's ``__iter__``,
        ``collate_fn(batch)`` and ``worker_init_fn(worker_id)``, so that
        what they reach is analysed with the objects they really get."""

        def argument(name: str, position: int) -> int | None:
            if name in loader.kwargs:
                return loader.kwargs[name]
            if position > 2 and loader.type_name in KEYWORD_LOADERS:
                return None
            return loader.args[position] if position < len(loader.args) else None

        index = self.holding(self.external("<builtin>.int"))  # any index: reads every element
        for name, position, methods in (
            ("dataset", 0, ("__getitem__", "__iter__", "__len__")),
            ("sampler", 3, ("__iter__",)),
            ("batch_sampler", 4, ("__iter__",)),
        ):
            node = argument(name, position)
            if node is None:
                continue
            for method in methods:
                args = [(index, False)] if method == "__getitem__" else []
                self.on(node, functools.partial(self._framework_call, method, args, cs))
        batch = self.holding(self.container("list", cs.site, "batch"))
        for name, position, args in (
            ("collate_fn", 6, [(batch, False)]),
            ("worker_init_fn", 10, [(self.const(0), False)]),
        ):
            node = argument(name, position)
            if node is not None:
                self.call(node, CallSite(cs.caller, cs.site, args, [], self.node(name)))

    def _framework_call(
        self, method: str, args: list[tuple[int, bool]], cs: CallSite, obj: Obj
    ) -> None:
        if isinstance(obj, InstObj):
            self.call_method(obj, method, CallSite(cs.caller, cs.site, args, [], self.node(method)))

    def _builtin(self, name: str, args: list[int], cs: CallSite) -> bool:
        if name in ("map", "filter"):
            # Call whatever callable is passed with the elements of the others.
            items = [self.iterate(n, cs.caller, cs.site) for n in args]
            result = self.container("list", cs.site)
            out = self.node("map()")
            for n in args:
                self.call(n, CallSite(cs.caller, cs.site, [(i, False) for i in items[:1]], [], out))
            if name == "map":
                self.edge(out, self.elem(result, ALL))
            else:
                for i in items:
                    self.edge(i, self.elem(result, ALL))
            self.add(cs.dst, (result,))
            return True
        if name == "getattr" and len(args) >= 2:
            self.on(
                args[1],
                lambda key: (
                    self.load(args[0], key.value, cs.dst)
                    if isinstance(key, ConstObj) and isinstance(key.value, str)
                    else None
                ),
            )
            if len(args) > 2:
                self.edge(args[2], cs.dst)
            return True
        if name == "setattr" and len(args) == 3:
            self.on(
                args[1],
                lambda key: (
                    self.store(args[0], key.value, args[2])
                    if isinstance(key, ConstObj) and isinstance(key.value, str)
                    else None
                ),
            )
            return True
        if name in ("iter", "reversed", "sorted", "list", "tuple", "set", "frozenset") and args:
            kind = {"tuple": "tuple", "set": "set", "frozenset": "set"}.get(name, "list")
            result = self.container(kind, cs.site)
            self.edge(self.iterate(args[0], cs.caller, cs.site), self.elem(result, ALL))
            self.add(cs.dst, (result,))
            return True
        if name == "next" and args:
            self.edge(self.iterate(args[0], cs.caller, cs.site), cs.dst)
            if len(args) > 1:
                self.edge(args[1], cs.dst)
            return True
        if name in ("enumerate", "zip") and args:
            pair = self.container("tuple", cs.site)
            sources = args if name == "zip" else args[:1]
            for i, source in enumerate(sources):
                slot = i + (1 if name == "enumerate" else 0)
                got = self.iterate(source, cs.caller, cs.site)
                self.edge(got, self.elem(pair, slot))
                self.edge(got, self.elem(pair, ALL))
            result = self.container("list", cs.site)
            self.add(self.elem(result, ALL), (pair,))
            self.add(cs.dst, (result,))
            return True
        if name == "dict":
            result = self.container("dict", cs.site)
            for key, n in cs.kwargs:
                if key is not None:
                    self.store_elem(self.holding(result), key, n)
            self.add(cs.dst, (result,))
            return True
        if name == "type" and len(args) == 1:
            self.on(
                args[0], lambda o: self.add(cs.dst, (o.cls,)) if isinstance(o, InstObj) else None
            )
            return True
        return False

    def container(self, kind: str, site: Site | None, tag: str = "") -> ContainerObj:
        return self.obj(("box", kind, site, tag), lambda: ContainerObj(kind, site))  # type: ignore[return-value]

    def _container_method(self, meth: MethodObj, cs: CallSite) -> None:
        box = meth.recv
        assert isinstance(box, ContainerObj)
        args = [n for n, starred in cs.args if not starred]
        name = meth.name
        every = self.elem(box, ALL)
        if name in ("append", "add") and args:
            self.edge(args[0], every)
            self.edge(args[0], self.elem(box, "?"))
        elif name == "insert" and len(args) > 1:
            self.edge(args[1], every)
            self.edge(args[1], self.elem(box, "?"))
        elif name in ("extend", "update") and args:
            if box.kind == "dict":
                self.on(args[0], lambda other: self.merge(other, box=box))
            else:
                items = self.iterate(args[0], cs.caller, cs.site)
                self.edge(items, every)
                self.edge(items, self.elem(box, "?"))
            for key, n in cs.kwargs:
                if key is not None:
                    self.edge(n, self.elem(box, key))
                    self.edge(n, every)
        elif name in ("get", "pop", "setdefault", "__getitem__") and args:
            self.on(args[0], functools.partial(self._keyed_load, box, cs.dst))
            if len(args) > 1:
                self.edge(args[1], cs.dst)
                if name == "setdefault":
                    self.edge(args[1], every)
        elif name == "values":
            self._view(box, every, cs)
        elif name == "keys":
            self._view(box, self.elem(box, KEYS), cs)
        elif name == "items":
            pair = self.container("tuple", cs.site)
            self.edge(self.elem(box, KEYS), self.elem(pair, 0))
            self.edge(every, self.elem(pair, 1))
            self.edge(self.elem(box, KEYS), self.elem(pair, ALL))
            self.edge(every, self.elem(pair, ALL))
            view = self.container("list", cs.site)
            self.add(self.elem(view, ALL), (pair,))
            self.add(cs.dst, (view,))
        elif name == "copy":
            self.add(cs.dst, (box,))

    def _view(self, box: ContainerObj, source: int, cs: CallSite) -> None:
        view = self.container("list", cs.site)
        self.edge(source, self.elem(view, ALL))
        self.add(cs.dst, (view,))

    def merge(self, other: Obj, *, box: ContainerObj) -> None:
        if isinstance(other, ContainerObj):
            self.edge(self.elem(other, ALL), self.elem(box, ALL))
            self.edge(self.elem(other, KEYS), self.elem(box, KEYS))
            for key in list(self.box_keys.get(other, ())):
                self.edge(self.elem(other, key), self.elem(box, key))


def _torch_module(name: str | None) -> bool:
    """A ``torch.nn`` module class (``torch.nn.CrossEntropyLoss``), whose
    ``.to()``/``.cuda()`` return the module itself; not a tensor class
    (``nn.Parameter``) nor a utility's value."""
    if not name or not name.startswith("torch.nn.") or name.startswith(_NOT_MODULES):
        return False
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() and last not in _TENSOR_CLASSES


_NOT_MODULES = ("torch.nn.utils.", "torch.nn.functional.", "torch.nn.parameter.", "torch.nn.init.")
_TENSOR_CLASSES = frozenset(
    {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}
)


def _order(obj: Obj) -> tuple[str, str]:
    """A stable order for sets of bases (sets are unordered)."""
    name = getattr(obj, "qname", None) or getattr(obj, "name", "")
    return (type(obj).__name__, str(name))
