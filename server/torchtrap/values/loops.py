"""A training loop's structure, for the loop rules (TT108, TT214-TT217).

One question answered here for all of them: what runs in one iteration of a
loop, in which order. :meth:`LoopFacts.iteration` lists the *events* of one
pass through a loop's body in source (= execution) order: backward calls,
optimizer and scaler steps, ``zero_grad``, ``unscale_``, gradient clipping,
``train()``/``eval()``, ``set_epoch``, iterations over a value, and every
other call. A call of a helper defined in this module (a module-level
function by name, a method through ``self.name(...)``) is followed: its
events come at the call's place, with the helper's parameters spelled as
the caller's arguments, so ``validate(model)`` that calls ``m.eval()``
gives an ``eval`` event on ``model``.

The value questions (is this an optimizer, a ``GradScaler``, a
``DistributedSampler``) are small functions at the end, on purpose: they
answer from this module's bindings now (:class:`TensorFacts`), and can be
switched to the value layer later without touching the rules.

Evidence only: a call that is not followed (imported, a method of an unknown
object) is an ``CALL`` event with its callee unknown, so a rule can stay
silent when such a call may do what it looks for.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.dataloaders import DATALOADER
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import NodeIndex, ancestors, enclosing_function, parent
from torchtrap.facts.modules import MODULE_WRAPPERS
from torchtrap.facts.optim import is_scheduler_constructor
from torchtrap.facts.remote import mark_remote, same_file
from torchtrap.facts.tensors import Binding
from torchtrap.values.loaders import Loaders
from torchtrap.values.models import ModelFacts
from torchtrap.values.program import Model, module_model
from torchtrap.values.program_values import (
    program_allocations,
    program_callee,
    program_train_mode_layers,
)

if TYPE_CHECKING:
    from torchtrap.values.layer import ValueLayer

Function = ast.FunctionDef | ast.AsyncFunctionDef
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
Loop = ast.For | ast.AsyncFor | ast.While

BACKWARD = "backward"
STEP = "step"
ZERO_GRAD = "zero_grad"
UNSCALE = "unscale"
CLIP = "clip"
EVAL = "eval"
TRAIN = "train"
SET_EPOCH = "set_epoch"
ITERATE = "iterate"
CALL = "call"

CLIP_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_value_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_value_",
        "torch.nn.utils.get_total_norm",
    }
)
GRAD_SCALERS = frozenset(
    {
        "torch.cuda.amp.GradScaler",
        "torch.amp.GradScaler",
        "torch.cpu.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
    }
)
DISTRIBUTED_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
# What a sampler helper returns when not distributed.
OTHER_SAMPLERS = frozenset(
    f"torch.utils.data{module}.{name}"
    for module in ("", ".sampler")
    for name in ("RandomSampler", "SequentialSampler", "SubsetRandomSampler")
)
# torch.optim's non-optimizer members.
_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
_OTHER_OPTIMIZERS = frozenset({"transformers.AdamW", "transformers.optimization.AdamW"})
# Frameworks that run the loop (and zero, unscale, set the epoch) themselves.
FRAMEWORK_BASES = frozenset(
    {
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "pytorch_lightning.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "lightning.pytorch.callbacks.Callback",
        "pytorch_lightning.callbacks.Callback",
        "lightning.Callback",
        "pytorch_lightning.Callback",
        "transformers.Trainer",
        "transformers.TrainerCallback",
    }
)
# A class derived from anything these packages export is theirs to drive
# (Lightning's BoringModel, its test helpers).
_FRAMEWORK_PACKAGES = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
_ITERATION_WRAPPERS = frozenset(
    {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter"}
)
# Tensor methods whose result keeps the receiver's autograd graph.
_GRAPH_KEEPING = frozenset(
    {"mean", "sum", "clone", "to", "cpu", "cuda", "float", "double", "half", "view", "reshape"}
    | {"squeeze", "unsqueeze", "flatten", "mul", "div", "add", "sub", "abs", "sqrt", "exp"}
)
_DETACHING = frozenset({"detach", "item", "tolist", "numpy", "data"})
_MAX_DEPTH = 3
_MAX_UNROLLED = 8  # elements of a display a loop is walked once for
# Method names the walker reads as a library object's action (mode, step).
_LIBRARY_VERBS = frozenset(
    {"backward", "manual_backward", "step", "zero_grad", "unscale_", "eval", "train", "set_epoch"}
)
_MAX_EVENTS = 4000  # a pathological file stops being followed, it does not hang


@dataclass(frozen=True)
class Ref:
    """A value as the analysed loop's function sees it: the expression, where
    it is evaluated (for the bindings), and its dotted spelling there
    (``model``, ``self.model``, ``loader.sampler``); ``key`` is None for
    anything else. Inside a followed helper, a parameter is the caller's
    argument, so ``expr``/``at`` may lie in the caller."""

    expr: ast.expr
    at: ast.AST
    key: str | None


@dataclass(frozen=True)
class Event:
    kind: str
    node: ast.AST  # the call (or the assignment `p.grad = None`, or the loop)
    receiver: Ref | None = None  # `opt` in `opt.step()`, `scaler` in `scaler.step(opt)`
    args: tuple[Ref, ...] = ()  # the call's positional arguments
    # Loops between the analysed loop and the event, outermost first.
    loops: tuple[Loop, ...] = ()
    # Helper calls that lead to the event, outermost first.
    via: tuple[ast.Call, ...] = ()
    conditional: bool = False  # under an `if`/`try`/`match` inside the analysed loop
    callee: Function | None = None  # CALL: the helper followed, if any
    scaled_by: Ref | None = None  # BACKWARD: the scaler of `scaler.scale(loss).backward()`
    extra: tuple[str, ...] = field(default=())  # TRAIN: "restores" for `m.train(was)`

    @property
    def statement(self) -> ast.stmt | None:
        """The statement of the analysed function this event sits in (the
        outermost helper call's statement when reached through one)."""
        node: ast.AST | None = self.via[0] if self.via else self.node
        while node is not None and not isinstance(node, ast.stmt):
            node = parent(node)
        return node


class LoopFacts:
    """Per-module cache (``ctx.values.loops``), shared by the loop rules."""

    def __init__(self, values: ValueLayer) -> None:
        self.facts = values.facts
        self.imports = values.facts.imports
        self.tensors = values.tensors
        # Weakly: the Values owns this, and a cycle would keep the tree alive.
        self._values = weakref.ref(values)
        self._iterations: dict[int, list[Event]] = {}
        self._functions: dict[str, Function] | None = None
        self._backward_marks: set[int] | None = None
        self._for_marks: set[int] | None = None
        self._path = values.path
        self._model: Model | Literal[False] | None = None
        # Trees of other files whose helpers were followed, by id: (path, tree).
        self._foreign: dict[int, tuple[str, ast.Module]] = {}

    # -- loops --------------------------------------------------------------------
    def loops(self) -> list[Loop]:
        index = self.facts.index
        found: list[Loop] = [*index.of(ast.For), *index.of(ast.AsyncFor), *index.of(ast.While)]
        found.sort(key=lambda n: (n.lineno, n.col_offset))
        return found

    def iteration(self, loop: Loop) -> list[Event]:
        """The events of one pass through ``loop``'s body, helpers followed."""
        key = id(loop)
        if key not in self._iterations:
            walker = _Walker(self)
            walker.body(loop.body, _Frame(loop))
            self._iterations[key] = walker.events
        return self._iterations[key]

    def function_events(self, function: Function | ast.Module) -> list[Event]:
        """The events of a whole function (or module) body, helpers followed."""
        key = id(function)
        if key not in self._iterations:
            walker = _Walker(self)
            walker.body(function.body, _Frame(None))
            self._iterations[key] = walker.events
        return self._iterations[key]

    def may_backpropagate(self, node: ast.AST) -> bool:
        """A cheap test before :meth:`iteration`: does ``node`` contain a
        backward call, or a call of a helper that (transitively) does?"""
        if self._backward_marks is None:
            seeds = [
                c
                for name in ("backward", "manual_backward")
                for c in self.facts.calls_by_name.get(name, ())
            ]
            self._backward_marks = self._marks(seeds)
        return id(node) in self._backward_marks

    def may_iterate(self, node: ast.AST) -> bool:
        """Does ``node``'s body (or a helper it calls) hold a ``for`` loop
        or an ``iter(...)`` call?"""
        if self._for_marks is None:
            index = self.facts.index
            iters = self.facts.calls_by_name.get("iter", ())
            self._for_marks = self._marks([*index.of(ast.For), *index.of(ast.AsyncFor), *iters])
        return id(node) in self._for_marks

    def _marks(self, seeds: Sequence[ast.AST]) -> set[int]:
        """Every loop and function around a seed, and around every call of a
        function so marked (by name: a superset, it is only a filter)."""
        marked: set[int] = set()
        functions: list[ast.AST] = []
        todo = list(seeds)
        by_name = self.facts.calls_by_name
        while todo or functions:
            while todo:
                node = todo.pop()
                for anc in ancestors(node):
                    if id(anc) in marked:
                        break
                    if isinstance(anc, (*LOOP_TYPES, ast.FunctionDef, ast.AsyncFunctionDef)):
                        marked.add(id(anc))
                        if not isinstance(anc, LOOP_TYPES):
                            functions.append(anc)
            while functions:
                function = functions.pop()
                todo.extend(by_name.get(function.name, ()))  # type: ignore[attr-defined]
        return marked

    def enclosing_loops(self, node: ast.AST) -> list[Loop]:
        """Loops around ``node`` in its own function, innermost first."""
        out: list[Loop] = []
        for anc in ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            if isinstance(anc, LOOP_TYPES) and not _in_orelse(node, anc):
                out.append(anc)
        return out

    # -- helpers ------------------------------------------------------------------
    def callee(self, call: ast.Call) -> Function | None:
        """The helper a call runs: in this module, ``f(...)`` for a function
        defined once at module level or in an enclosing function,
        ``self.f(...)`` for a method of the caller's own class; else the one
        project function the whole-program model says it runs (an imported
        helper, ``trainer.validate(...)``), in this file or another."""
        if id(_root(call)) in self._foreign:
            return self._program_callee(call, own=False)
        found = self._local_callee(call)
        if found is None and _worth_asking(call, self.imports.qualname(call.func)):
            found = self._program_callee(call, own=True)
        return found

    def plain_method(self, call: ast.Call) -> Function | None:
        """``self.train()`` in a class that is no module, optimizer or other
        library object (``class Trainer:`` with its own ``train`` method): the
        method, a helper like any other, not a mode switch or a step."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in _LIBRARY_VERBS
        ):
            return None
        cls = next((a for a in ancestors(call) if isinstance(a, ast.ClassDef)), None)
        info = self.facts.classes.get(cls.name) if cls is not None else None
        if info is None or info.node is not cls or not self._plain_class(info, 0):
            return None
        return self._local_callee(call)

    def _plain_class(self, info: ClassInfo, depth: int) -> bool:
        """Only ``object`` or plain classes of this file as bases."""
        for base in info.bases:
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            local = self.facts.classes.get(base.id) if isinstance(base, ast.Name) else None
            if local is None or local is info or depth > _MAX_DEPTH:
                return False
            if not self._plain_class(local, depth + 1):
                return False
        return not info.node.keywords

    def project_method(self, call: ast.Call) -> Function | None:
        """The project function a method call runs, whatever its name
        (``meter.update(loss)``): the file's helpers, else the model's."""
        return self._local_callee(call) or self._program_callee(call, own=True)

    def foreign_path(self, node: ast.AST) -> str | None:
        """The path of the other file a followed helper's node lies in."""
        found = self._foreign.get(id(_root(node)))
        return found[0] if found is not None else None

    def program(self) -> Model | None:
        """The whole-program model of this file, its imports and importers
        (built once, on the first question the file alone cannot answer)."""
        if self._model is None:
            values = self._values()
            ctx = values.context() if values is not None else None
            if ctx is None:
                return None
            self._model = module_model(ctx.project, ctx.path, ctx.text, ctx.tree) or False
        return self._model or None

    def train_mode_layers(self, ref: Ref) -> bool | None:
        """Does the module ``ref`` holds have Dropout/BatchNorm, as the
        whole-program model sees it (a class defined in another file)? None
        when not known."""
        if id(_root(ref.expr)) in self._foreign:
            return None
        model = self.program()
        return program_train_mode_layers(model, ref.expr) if model is not None else None

    def _program_callee(self, call: ast.Call, own: bool) -> Function | None:
        if self.program() is None:
            return None
        assert self._model
        func = program_callee(self._model, call, own)
        if func is None or isinstance(func.node, ast.Lambda):
            return None
        module = self._model.analysis.solver.program.modules.get(func.module.name)
        if module is None:
            return None
        if same_file(func.module.path, self._path):
            # The model may hold its own parse of this file: the local twin.
            return next(
                (
                    f
                    for f in self.facts.index.of(type(func.node))
                    if (f.lineno, f.col_offset) == (func.node.lineno, func.node.col_offset)
                ),
                None,
            )
        tree = module.tree
        if id(tree) not in self._foreign:
            NodeIndex(tree)  # parent links, for the walk and the rules' questions
            mark_remote(tree, func.module.path)
            self._foreign[id(tree)] = (func.module.path, tree)  # kept: links are weak
        return func.node

    def _local_callee(self, call: ast.Call) -> Function | None:
        func = call.func
        if isinstance(func, ast.Name):
            if self.imports.qualname(func) is not None:
                return None
            nested = _nested_function(call, func.id)
            if nested is not None:
                return nested
            return self._module_functions().get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id != "self":
                return None
            cls = next((a for a in ancestors(call) if isinstance(a, ast.ClassDef)), None)
            if cls is None:
                return None
            info = self.facts.classes.get(cls.name)
            method = info.method(func.attr) if info is not None else None
            return method
        return None

    def self_alias(self, expr: ast.expr) -> str | None:
        """``attr`` when the root name of ``expr`` is a local bound only to
        ``self.attr`` (through ``.to()``-style calls, or a DataParallel
        wrapper of itself): ``model = self.model``."""
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or root.id == "self":
            return None
        reach = self.tensors.reaching(root.id, root)
        if reach is None or not reach.bindings:
            return None
        found: set[str] = set()
        for binding in reach.bindings:
            value = binding.value
            if value is None or binding.path:
                return None
            while isinstance(value, ast.Call):
                func = value.func
                if isinstance(func, ast.Attribute) and func.attr in _SELF_RETURNING:
                    value = func.value
                elif self.imports.qualname(func) in MODULE_WRAPPERS and value.args:
                    value = value.args[0]
                else:
                    return None
            if isinstance(value, ast.Name) and value.id == root.id:
                continue  # `model = nn.DataParallel(model)`
            if not (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "self"
            ):
                return None
            found.add(value.attr)
        return found.pop() if len(found) == 1 else None

    def _module_functions(self) -> dict[str, Function]:
        if self._functions is None:
            counts: dict[str, int] = {}
            found: dict[str, Function] = {}
            for stmt in self.facts.tree.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    counts[stmt.name] = counts.get(stmt.name, 0) + 1
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found[stmt.name] = stmt
            self._functions = {n: f for n, f in found.items() if counts[n] == 1}
        return self._functions

    # -- value questions (to be answered by the value layer) ------------------------
    def values(self, ref: Ref, depth: int = 0) -> list[tuple[ast.expr, ast.AST]] | None:
        """What ``ref`` may hold: (value, where) pairs, None when unknown. A
        parameter holds what every caller in this module passes."""
        expr = ref.expr
        if isinstance(expr, ast.Call):
            return [(expr, ref.at)]
        if isinstance(expr, ast.Subscript):
            return self._item_values(expr, ref.at, depth)
        found = self.tensors.values_of(expr, ref.at)
        if found is not None or not isinstance(expr, ast.Name) or depth >= _MAX_DEPTH:
            return found
        reach = self.tensors.reaching(expr.id, ref.at)
        if reach is not None and not reach.complete and _both_branches(reach.bindings):
            # `if distributed: x = A(...) else: x = B(...)`: one of the two.
            return [(b.value, b.stmt) for b in reach.bindings if b.value is not None]
        function = enclosing_function(ref.at)
        if (
            function is not None
            and reach is not None
            and not reach.complete
            and reach.bindings
            and all(
                b.value is not None and not b.path and b.stmt is not function
                for b in reach.bindings
            )
            and not _declared_outer(function, expr.id)
        ):
            # Bound only under a condition in this function: a local name, so
            # where it is unbound the use raises; it holds one of those values.
            return [(b.value, b.stmt) for b in reach.bindings if b.value is not None]
        if function is None or reach is None or not reach.complete:
            return None
        if not all(b.stmt is function for b in reach.bindings):
            return None
        passed = self._loaders().parameter_arguments(function, expr.id)
        if not passed:
            return None
        out: list[tuple[ast.expr, ast.AST]] = []
        for arg, call in passed:
            inner = self.values(Ref(arg, call, dotted_name(arg)), depth + 1)
            if inner is None:
                return None
            out.extend(inner)
        return out

    def constructions(self, ref: Ref) -> list[tuple[ast.expr, ast.AST]] | None:
        """:meth:`values`, and where that is unknown or a call of a project
        function, the constructions of this file the whole-program model
        says ``ref`` holds: a loader made in a helper and returned (alone,
        in a tuple or a dict), or handed to a constructor and kept on
        ``self``. Each is then (the construction call, itself)."""
        values = self.values(ref)
        if values is not None and not any(
            isinstance(v, ast.Name) or self._project_call(v) for v, _ in values
        ):
            return values
        if id(_root(ref.expr)) in self._foreign or self.program() is None:
            return values
        assert self._model
        sites = program_allocations(self._model, ref.expr)
        if not sites:
            return values
        calls = {(c.lineno, c.col_offset): c for c in self.facts.index.of(ast.Call)}
        out: list[tuple[ast.expr, ast.AST]] = []
        for site in sites:
            call = calls.get(site)
            if call is None:
                return values
            out.append((call, call))
        return out

    def _project_call(self, value: ast.expr) -> bool:
        """A call of a function of the project (its result is what the
        function returns, not the call itself)."""
        if not isinstance(value, ast.Call):
            return False
        name = self.imports.qualname(value.func)
        if name is not None:
            return False
        return not (
            isinstance(value.func, ast.Name) and self.facts.classes.get(value.func.id) is not None
        )

    def splat_keyword(self, call: ast.Call, name: str) -> tuple[ast.expr, ast.AST] | None:
        """The value a ``**params`` of ``call`` gives keyword ``name``, and
        where it is evaluated: ``params["sampler"] = DistributedSampler(ds)``
        (the last such store before the call in its function, else the key
        of the dict literal ``params`` was bound to); None when no
        ``**`` dict of the function evidently holds it."""
        function = enclosing_function(call)
        found: tuple[ast.expr, ast.AST] | None = None
        for kw in call.keywords:
            if kw.arg is not None or not isinstance(kw.value, ast.Name) or function is None:
                continue
            spelled = kw.value.id
            stores = [
                n
                for n in _statements(function)
                if isinstance(n, ast.Assign)
                and n.lineno < call.lineno
                and any(
                    isinstance(t, ast.Subscript)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == spelled
                    and isinstance(t.slice, ast.Constant)
                    and t.slice.value == name
                    for t in n.targets
                )
            ]
            if stores:
                last = max(stores, key=lambda n: (n.lineno, n.col_offset))
                found = (last.value, last)
                continue
            literals = self.tensors.values_of(kw.value, call) or []
            for literal, at in literals:
                if not isinstance(literal, ast.Dict):
                    continue
                for key, value in zip(literal.keys, literal.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == name:
                        found = (value, at)
        return found

    def loader_call(self, value: ast.expr) -> ast.Call | None:
        """The ``DataLoader(...)`` call that builds the loader ``value``
        constructs: the call itself, or for a ``DataLoader`` subclass of
        this file, the ``super().__init__(...)`` call of its ``__init__``
        (whose arguments are then the loader's)."""
        if not isinstance(value, ast.Call):
            return None
        if self.imports.qualname(value.func) == DATALOADER:
            return value
        if not isinstance(value.func, ast.Name):
            return None
        info = self.facts.classes.get(value.func.id)
        if info is None or not self.facts.classes.derives_from(info, frozenset({DATALOADER})):
            return None
        init = info.method("__init__")
        if init is None:
            return None
        supers = [
            n
            for n in _statements(init)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "__init__"
            and isinstance(n.func.value, ast.Call)
            and isinstance(n.func.value.func, ast.Name)
            and n.func.value.func.id == "super"
        ]
        return supers[0] if len(supers) == 1 else None

    def _item_values(
        self, expr: ast.Subscript, at: ast.AST, depth: int
    ) -> list[tuple[ast.expr, ast.AST]] | None:
        """``loaders["train"]``: the value under that constant key of every
        dict literal the container may hold (``self.data_loader =
        data_loader``, a parameter given ``{"train": DataLoader(...)}``)."""
        key = expr.slice
        if not isinstance(key, ast.Constant) or depth >= _MAX_DEPTH:
            return None
        containers = self._resolved(Ref(expr.value, at, dotted_name(expr.value)), depth + 1)
        if not containers:
            return None
        out: list[tuple[ast.expr, ast.AST]] = []
        for container, _ in containers:
            if not isinstance(container, ast.Dict):
                return None
            items = [
                v
                for k, v in zip(container.keys, container.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == key.value
            ]
            if len(items) != 1 or any(k is None for k in container.keys):
                return None  # missing, twice, or `**other` may hold it
            out.append((items[0], items[0]))
        return out

    def _resolved(self, ref: Ref, depth: int) -> list[tuple[ast.expr, ast.AST]] | None:
        """:meth:`values`, with a value that is itself a name (``self.x =
        x``) looked up in turn."""
        values = self.values(ref, depth)
        if values is None:
            return None
        out: list[tuple[ast.expr, ast.AST]] = []
        for value, at in values:
            if isinstance(value, ast.Name) and depth < _MAX_DEPTH:
                inner = self._resolved(Ref(value, at, value.id), depth + 1)
                if inner is None:
                    return None
                out.extend(inner)
            else:
                out.append((value, at))
        return out

    def carries_graph(self, expr: ast.expr, at: ast.AST, events: list[Event]) -> bool:
        """Is ``expr`` (at ``at``) evidently a tensor with an autograd graph:
        a loss that ``events`` backpropagates (``loss.backward()``,
        ``scaler.scale(loss).backward()``), a value a same-file helper
        returns after backpropagating it, a module's output computed with
        grad on, or arithmetic and non-detaching methods on one."""
        if isinstance(expr, ast.BinOp):
            return self.carries_graph(expr.left, at, events) or self.carries_graph(
                expr.right, at, events
            )
        if isinstance(expr, ast.UnaryOp):
            return self.carries_graph(expr.operand, at, events)
        if isinstance(expr, ast.Subscript):
            return self.carries_graph(expr.value, at, events)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in _GRAPH_KEEPING:
                return self.carries_graph(func.value, at, events)
            callee = self.callee(expr)
            return callee is not None and self._returns_backpropagated(callee)
        if isinstance(expr, ast.Attribute) and expr.attr == "loss":
            # `outputs.loss` of a model's output (transformers) that is backpropagated
            return _backpropagated(ast.unparse(expr), events)
        if not isinstance(expr, ast.Name):
            return False
        reach = self.tensors.reaching(expr.id, at)
        if (
            reach is not None
            and reach.complete
            and reach.bindings
            and all(b.value is not None and _cut_from_graph(b.value) for b in reach.bindings)
        ):
            return False  # rebound to `loss.detach().cpu().numpy()` before the use
        if _backpropagated(expr.id, events) and not _replaced_after_backward(expr.id, at, events):
            return True
        if reach is None or not reach.complete or len(reach.bindings) != 1:
            return False
        binding = reach.bindings[0]
        value = binding.value
        if value is None or binding.path:
            return False
        if isinstance(value, ast.Call) and not _detached(value):
            callee = self.callee(value)
            if callee is not None and self._returns_backpropagated(callee):
                return True
        if isinstance(value, ast.Attribute) and value.attr == "loss":
            return _backpropagated(ast.unparse(value), events)
        if self._part_of_backpropagated(expr.id, events):
            return True
        if any(e.kind == BACKWARD for e in events):
            values = self._values()
            return values is not None and values.autograd.in_graph(expr, at)
        return False

    def container_of_graph(self, expr: ast.expr, events: list[Event]) -> bool:
        """Is ``expr`` a name whose *item* was backpropagated
        (``output['loss'].backward()``): a dict or list holding the graph,
        not a tensor (``.detach()`` would not work on it)?"""
        if not isinstance(expr, ast.Name):
            return False
        whole = part = False
        for event in events:
            call = event.node
            if event.kind != BACKWARD or event.via or not isinstance(call, ast.Call):
                continue
            loss = call.func.value if isinstance(call.func, ast.Attribute) else None
            if isinstance(loss, ast.Name) and loss.id == expr.id:
                whole = True
            elif isinstance(loss, (ast.Subscript, ast.Attribute)) and _root_name(loss) == expr.id:
                part = True
        return part and not whole

    def _part_of_backpropagated(self, name: str, events: list[Event]) -> bool:
        """Is ``name`` a term of a loss that ``events`` backpropagate
        (``loss = a + 0.1 * b; loss.backward()``)? Then it carries the graph."""
        for event in events:
            if event.kind != BACKWARD or event.via or not isinstance(event.node, ast.Call):
                continue
            call = event.node
            loss = call.func.value if isinstance(call.func, ast.Attribute) else None
            if isinstance(loss, ast.Call) and loss.args:  # scaler.scale(loss)
                loss = loss.args[0]
            if loss is None or not isinstance(loss, ast.Name):
                continue
            reach = self.tensors.reaching(loss.id, call)
            if reach is None or not reach.complete:
                continue
            for binding in reach.bindings:
                if binding.value is None or not isinstance(binding.value, ast.BinOp):
                    continue
                if any(isinstance(n, ast.Name) and n.id == name for n in _terms(binding.value)):
                    return True
        return False

    def _returns_backpropagated(self, function: Function) -> bool:
        """Every ``return`` of the helper gives a name it backpropagates."""
        key = -id(function)
        if key not in self._iterations:
            self._iterations[key] = []
            events = self.function_events(function)
            returns = [
                n.value
                for n in _statements(function)
                if isinstance(n, ast.Return) and n.value is not None
            ]
            ok = bool(returns) and all(
                isinstance(r, ast.Name) and _backpropagated(r.id, events) for r in returns
            )
            self._iterations[key] = [Event(CALL, function)] if ok else []
        return bool(self._iterations[key])

    def grad_enabled(self, node: ast.AST, depth: int = 0) -> bool:
        """Does ``node`` evidently run with grad on: not under ``no_grad``,
        and at module level or in a function whose every caller in this
        module runs with grad on?"""
        if grad_off_context(node, self.imports) is not None:
            return False
        function = enclosing_function(node)
        if function is None:
            return True
        if depth >= _MAX_DEPTH or function.decorator_list:
            return False
        sites = self._models().callers_of(function)
        return bool(sites) and all(self.grad_enabled(s.call, depth + 1) for s in sites)

    def grad_off_by_callers(self, function: Function, depth: int = 0) -> bool:
        """Does ``function`` run with grad off on every path: each of its
        callers in this module calls it under ``torch.no_grad()`` (or from a
        function that itself runs so): ``with torch.no_grad():
        eval_one_epoch(model, loader)``."""
        if depth >= _MAX_DEPTH:
            return False
        sites = self._models().callers_of(function)
        if not sites:
            return False
        for site in sites:
            if grad_off_context(site.call, self.imports) is not None:
                continue
            caller = enclosing_function(site.call)
            if caller is None or not self.grad_off_by_callers(caller, depth + 1):
                return False
        return True

    def _models(self) -> ModelFacts:
        values = self._values()
        assert values is not None, "used after its module's lint"
        return values.models

    def _loaders(self) -> Loaders:
        values = self._values()
        assert values is not None, "used after its module's lint"
        return values.loaders

    def optimizer(self, ref: Ref, depth: int = 0) -> bool:
        """Is ``ref`` evidently a torch optimizer (``torch.optim.SGD(...)``,
        also through names and ``self`` attributes, or a parameter
        annotated ``Optimizer``, also once stored: ``self.optimizer =
        optimizer`` in an ``__init__(self, optimizer: optim.Optimizer)``)?"""
        if self._annotated(ref, ("torch.optim.Optimizer", "torch.optim.optimizer.Optimizer")):
            return True
        values = self.values(ref)
        return bool(values) and all(
            self._optimizer_value(v)
            or (
                isinstance(v, ast.Name)
                and depth < _MAX_DEPTH
                and self.optimizer(Ref(v, at, v.id), depth + 1)
            )
            for v, at in values or ()
        )

    def _optimizer_value(self, value: ast.expr) -> bool:
        if not isinstance(value, ast.Call):
            return False
        qualname = self.imports.qualname(value.func) or ""
        if qualname in _OTHER_OPTIMIZERS:
            return True
        return (
            qualname.startswith("torch.optim.")
            and not qualname.startswith(_NOT_OPTIMIZERS)
            and qualname.rsplit(".", 1)[-1][:1].isupper()
        )

    def scheduler(self, ref: Ref) -> bool:
        """Is ``ref`` evidently a learning-rate scheduler
        (``torch.optim.lr_scheduler.StepLR(...)``, a Hugging Face schedule
        builder), also through names and ``self`` attributes?"""
        values = self.values(ref)
        return bool(values) and all(
            isinstance(v, ast.Call)
            and is_scheduler_constructor(self.imports.qualname(v.func) or "")
            for v, _ in values or ()
        )

    def scaler(self, ref: Ref) -> Scaler | None:
        """The ``GradScaler(...)`` construction(s) ``ref`` holds, None when
        it is not evidently one."""
        values = self.values(ref)
        if not values:
            return None
        calls: list[ast.Call] = []
        for value, _ in values:
            if not (
                isinstance(value, ast.Call) and self.imports.qualname(value.func) in GRAD_SCALERS
            ):
                return None
            calls.append(value)
        return Scaler(tuple(calls))

    def distributed_sampler(self, ref: Ref) -> Sampler | None:
        """The ``DistributedSampler(...)`` call ``ref`` holds, if evident;
        ``DistributedSampler(ds) if distributed else None`` (or the same in
        two branches) counts: the distributed run takes that branch. So does
        a helper of this file that returns one, or another sampler when not
        distributed (``data_sampler(ds, shuffle=True, distributed=d)``):
        its parameters are then that call's arguments."""
        values = self.values(ref)
        if not values:
            return None
        found: list[Sampler] = []
        alternatives = False
        for value, _ in values:
            for branch in _branches(value):
                if (
                    isinstance(branch, ast.Call)
                    and self.imports.qualname(branch.func) in DISTRIBUTED_SAMPLERS
                ):
                    found.append(Sampler(branch))
                elif isinstance(branch, ast.Call) and self._sampler_alias(branch) is not None:
                    aliased = self._sampler_alias(branch)
                    assert aliased is not None
                    found.append(Sampler(branch, alternatives=aliased))
                elif isinstance(branch, ast.Call) and self._local_callee(branch) is not None:
                    made = self._sampler_factory(branch)
                    if made is None:
                        return None
                    found.append(made)
                elif isinstance(branch, ast.Constant) and branch.value is None:
                    alternatives = True
                else:
                    return None
        if len(found) != 1:
            return None
        return replace(found[0], alternatives=found[0].alternatives or alternatives)

    def _sampler_alias(self, call: ast.Call) -> bool | None:
        """``S(ds)`` where the name ``S`` holds the ``DistributedSampler``
        class on some path (``S = RandomSampler if single else
        DistributedSampler``): False when it holds only that class, True when
        another torch sampler class on other paths; None when ``S`` may hold
        anything else (the call is then not known to build one)."""
        func = call.func
        if not isinstance(func, ast.Name) or self.imports.qualname(func) is not None:
            return None
        values = self.values(Ref(func, call, func.id))
        if not values:
            return None
        distributed = other = False
        for value, _ in values:
            for branch in _branches(value):
                name = self.imports.qualname(branch) if isinstance(branch, ast.expr) else None
                if name in DISTRIBUTED_SAMPLERS:
                    distributed = True
                elif name in OTHER_SAMPLERS:
                    other = True
                else:
                    return None
        return other if distributed else None

    def _sampler_factory(self, call: ast.Call) -> Sampler | None:
        """The one ``DistributedSampler(...)`` a helper of this file returns,
        the others being ``None`` or another torch sampler."""
        function = self._local_callee(call)
        if function is None or function.decorator_list:
            return None
        returns = [n.value for n in _statements(function) if isinstance(n, ast.Return)]
        found: ast.Call | None = None
        alternatives = False
        for value in returns:
            for branch in _branches(value) if value is not None else [ast.Constant(None)]:
                name = self.imports.qualname(branch.func) if isinstance(branch, ast.Call) else None
                if name in DISTRIBUTED_SAMPLERS and found is None:
                    found = branch  # type: ignore[assignment]
                elif (isinstance(branch, ast.Constant) and branch.value is None) or (
                    name in OTHER_SAMPLERS
                ):
                    alternatives = True
                else:
                    return None
        if found is None:
            return None
        return Sampler(found, _arguments(function, call), alternatives)

    def _annotated(self, ref: Ref, qualnames: tuple[str, ...]) -> bool:
        if not isinstance(ref.expr, ast.Name):
            return False
        reach = self.tensors.reaching(ref.expr.id, ref.at)
        if reach is None or not reach.complete:
            return False
        return all(
            b.annotation is not None
            and self.imports.qualname(_unwrap_optional(b.annotation, self.imports)) in qualnames
            for b in reach.bindings
        )

    def annotated_scaler(self, ref: Ref) -> bool:
        """A name annotated ``GradScaler`` (``Optional[GradScaler]`` too): a
        parameter the caller gives as one."""
        return self._annotated(ref, tuple(GRAD_SCALERS))

    def is_clip(self, call: ast.Call) -> bool:
        return self.imports.qualname(call.func) in CLIP_FUNCTIONS

    def in_framework(self, node: ast.AST) -> bool:
        """Inside a class that Lightning or HF ``Trainer`` drives (its hooks
        run in the framework's own loop, which zeroes, unscales and sets
        the epoch)."""
        for anc in ancestors(node):
            if isinstance(anc, ast.ClassDef):
                info = self.facts.classes.get(anc.name)
                if info is not None and self.facts.classes.derives_from(info, FRAMEWORK_BASES):
                    return True
                for base in anc.bases:
                    qualname = self.imports.qualname(base) or ""
                    if qualname in FRAMEWORK_BASES or qualname.startswith(_FRAMEWORK_PACKAGES):
                        return True
        return False


@dataclass(frozen=True)
class Sampler:
    """A ``DistributedSampler(...)`` call a value holds. ``bound``: when a
    helper of this file made it, the helper's parameters as the caller's
    arguments (``shuffle=shuffle`` is then what the caller passed);
    ``alternatives``: on other paths the value is ``None`` or another sampler."""

    call: ast.Call
    bound: dict[str, ast.expr] = field(default_factory=dict)
    alternatives: bool = False

    def argument(self, keyword: str, position: int) -> ast.expr | None:
        """The call's argument, as the helper's caller gave it."""
        value: ast.expr | None = next(
            (kw.value for kw in self.call.keywords if kw.arg == keyword), None
        )
        if value is None and len(self.call.args) > position:
            value = self.call.args[position]
        if isinstance(value, ast.Name) and value.id in self.bound:
            return self.bound[value.id]
        return value


@dataclass(frozen=True)
class Scaler:
    """One or more ``GradScaler(...)`` constructions a value may hold."""

    calls: tuple[ast.Call, ...]

    @property
    def flag(self) -> ast.expr | None:
        """The ``enabled=`` expression when the scaler is on only if it is
        true (``GradScaler(enabled=args.amp)``); None when always on."""
        for call in self.calls:
            for kw in call.keywords:
                if kw.arg == "enabled" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is True
                ):
                    return kw.value
            if len(call.args) >= 5:
                return call.args[4]
        return None

    @property
    def disabled(self) -> bool:
        """``GradScaler(enabled=False)`` everywhere: no scaling at all."""
        flag = self.flag
        return (
            flag is not None
            and isinstance(flag, ast.Constant)
            and flag.value is False
            and all(
                any(
                    kw.arg == "enabled"
                    and isinstance(kw.value, ast.Constant)
                    and kw.value.value is False
                    for kw in c.keywords
                )
                for c in self.calls
            )
        )


@dataclass
class _Frame:
    """Where the walker is: the analysed loop, the loops and helper calls
    entered since, the helper's parameters as the caller's values."""

    loop: Loop | None
    loops: tuple[Loop, ...] = ()
    via: tuple[ast.Call, ...] = ()
    conditional: bool = False
    env: dict[str, Ref] = field(default_factory=dict)
    visiting: frozenset[int] = frozenset()
    foreign: bool = False  # in a helper of another file: its globals are not the caller's
    # A parameter given a list or tuple display: its elements as the caller's values
    # (`set_mode("eval", [pg, ee])` then `for m in models: m.eval()`).
    sequences: dict[str, tuple[Ref, ...]] = field(default_factory=dict)


class _Walker:
    def __init__(self, loops: LoopFacts) -> None:
        self.facts = loops
        self.events: list[Event] = []

    # -- statements -------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], frame: _Frame) -> None:
        for stmt in stmts:
            if len(self.events) > _MAX_EVENTS:
                return
            self.statement(stmt, frame)

    def statement(self, stmt: ast.stmt, frame: _Frame) -> None:
        cond = replace(frame, conditional=True)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # runs when called, not here
        if isinstance(stmt, ast.If):
            self.expression(stmt.test, frame)
            known = _static_test(stmt.test, frame)
            if known is not False:
                self.body(stmt.body, frame if known else cond)
            if known is not True:
                self.body(stmt.orelse, frame if known is False else cond)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)) and self._unrolled(stmt, frame):
            pass
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.expression(stmt.iter, frame)
            self.events.append(
                Event(
                    ITERATE,
                    stmt,
                    receiver=self.ref(_iterated(stmt.iter, self.facts), frame),
                    loops=frame.loops,
                    via=frame.via,
                    conditional=frame.conditional,
                )
            )
            self.body(stmt.body, replace(frame, loops=(*frame.loops, stmt)))
            self.body(stmt.orelse, cond)
        elif isinstance(stmt, ast.While):
            self.expression(stmt.test, frame)
            self.body(stmt.body, replace(frame, loops=(*frame.loops, stmt)))
            self.body(stmt.orelse, cond)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expression(item.context_expr, frame)
            self.body(stmt.body, frame)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.body(stmt.body, frame)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.body(handler.body, cond)
            self.body(stmt.orelse, cond)  # type: ignore[attr-defined]
            self.body(stmt.finalbody, frame)  # type: ignore[attr-defined]
        elif type(stmt).__name__ == "Match":
            self.expression(stmt.subject, frame)  # type: ignore[attr-defined]
            for case in stmt.cases:  # type: ignore[attr-defined]
                self.body(case.body, cond)
        else:
            self.expression(stmt, frame)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                    self.add(ZERO_GRAD, stmt, frame)

    def _unrolled(self, stmt: ast.For | ast.AsyncFor, frame: _Frame) -> bool:
        """``for m in models: m.eval()`` over a display (here, or the
        caller's argument): the body once per element, ``m`` as that element."""
        target = stmt.target
        if not isinstance(target, ast.Name) or stmt.orelse:
            return False
        it = stmt.iter
        if isinstance(it, (ast.List, ast.Tuple)) and not any(
            isinstance(e, ast.Starred) for e in it.elts
        ):
            elements = tuple(self.ref(e, frame) for e in it.elts)
        elif isinstance(it, ast.Name) and it.id in frame.sequences:
            elements = frame.sequences[it.id]
        else:
            return False
        if not elements or len(elements) > _MAX_UNROLLED:
            return False
        self.events.append(
            Event(
                ITERATE,
                stmt,
                receiver=self.ref(it, frame),
                loops=frame.loops,
                via=frame.via,
                conditional=frame.conditional,
            )
        )
        for element in elements:
            env = {**frame.env, target.id: element}
            inner = replace(frame, loops=(*frame.loops, stmt), env=env)
            self.body(stmt.body, inner)
        return True

    # -- expressions ----------------------------------------------------------------
    def expression(self, node: ast.AST, frame: _Frame) -> None:
        calls = [n for n in _calls_under(node)]
        # Inner calls end first: `scaler.scale(loss)` before `.backward()`.
        calls.sort(key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))
        for call in calls:
            self.call(call, frame)

    def call(self, call: ast.Call, frame: _Frame) -> None:
        func = call.func
        args = tuple(self.ref(a, frame) for a in call.args if not isinstance(a, ast.Starred))
        if isinstance(func, ast.Attribute) and not self.facts.plain_method(call):
            receiver = self.ref(func.value, frame)
            attr = func.attr
            if attr in ("backward", "manual_backward"):
                scaled = None
                value = func.value
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Attribute)
                    and value.func.attr == "scale"
                ):
                    scaled = self.ref(value.func.value, frame)
                self.add(BACKWARD, call, frame, receiver, args, scaled_by=scaled)
                return
            if attr == "step":
                self.add(STEP, call, frame, receiver, args)
                return
            if attr == "zero_grad":
                self.add(ZERO_GRAD, call, frame, receiver, args)
                return
            if attr in ("zero_", "detach_", "requires_grad_") and _is_grad(func.value):
                self.add(ZERO_GRAD, call, frame, None, args)
                return
            if attr == "unscale_":
                self.add(UNSCALE, call, frame, receiver, args)
                return
            if attr == "eval" and not call.args and not call.keywords:
                self.add(EVAL, call, frame, receiver, args)
                return
            if attr == "train":
                mode = (
                    call.args[0]
                    if call.args
                    else next((kw.value for kw in call.keywords if kw.arg == "mode"), None)
                )
                if isinstance(mode, ast.Constant) and mode.value is False:
                    self.add(EVAL, call, frame, receiver, args)
                else:
                    restores = (
                        () if mode is None or isinstance(mode, ast.Constant) else ("restores",)
                    )
                    self.add(TRAIN, call, frame, receiver, args, extra=restores)
                return
            if attr == "set_epoch":
                self.add(SET_EPOCH, call, frame, receiver, args)
                return
        if self.facts.is_clip(call):
            self.add(CLIP, call, frame, None, args)
            return
        if _builtin_iter(call, self.facts):
            # `batches = iter(loader)` starts a pass: a DataLoader asks its
            # sampler for a new order here, as a `for` over it does.
            target = _iterated(call.args[0], self.facts)
            self.add(ITERATE, call, frame, self.ref(target, frame), args)
            return
        qualname = self.facts.imports.qualname(func)
        if qualname in ("torch.autograd.backward",):
            self.add(BACKWARD, call, frame, None, args)
            return
        callee = self.facts.callee(call)
        receiver = self.ref(func, frame)
        self.add(CALL, call, frame, receiver, args, callee=callee)
        if callee is not None and len(frame.via) < _MAX_DEPTH and id(callee) not in frame.visiting:
            env = _bind(callee, call, args, frame)
            sequences = {
                name: tuple(self.ref(e, frame) for e in ref.expr.elts)
                for name, ref in env.items()
                if isinstance(ref.expr, (ast.List, ast.Tuple))
                and any(ref.expr is a for a in call.args)
                and not any(isinstance(e, ast.Starred) for e in ref.expr.elts)
            }
            inner = _Frame(
                frame.loop,
                frame.loops,
                (*frame.via, call),
                frame.conditional,
                env,
                frame.visiting | {id(callee)},
                self.facts.foreign_path(callee) is not None,
                sequences,
            )
            self.body(callee.body, inner)

    def add(
        self,
        kind: str,
        node: ast.AST,
        frame: _Frame,
        receiver: Ref | None = None,
        args: tuple[Ref, ...] = (),
        *,
        callee: Function | None = None,
        scaled_by: Ref | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.events.append(
            Event(
                kind,
                node,
                receiver,
                args,
                frame.loops,
                frame.via,
                frame.conditional,
                callee,
                scaled_by,
                extra,
            )
        )

    def ref(self, expr: ast.expr, frame: _Frame) -> Ref:
        found = _ref(expr, frame)
        if frame.foreign:
            return found
        alias = self.facts.self_alias(expr)
        if alias is None:
            return found
        # `model = self.model` (maybe `nn.DataParallel(model)`): the same
        # object as `self.model`, as the training and evaluation spell it.
        outer = frame.env.get("self")
        if outer is not None and outer.key:
            base = f"{outer.key}.{alias}"
        elif not frame.via:
            base = f"self.{alias}"
        else:
            return found  # a helper whose `self` the caller does not name
        dotted = dotted_name(expr) or ""
        rest = dotted.partition(".")[2]
        return Ref(expr, found.at, f"{base}.{rest}" if rest else base)


def _bind(callee: Function, call: ast.Call, args: tuple[Ref, ...], frame: _Frame) -> dict[str, Ref]:
    """The helper's parameters as the caller's values (``self`` stays
    ``self`` for a method called on ``self``)."""
    params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    env: dict[str, Ref] = {}
    if isinstance(call.func, ast.Attribute) and params[:1] == ["self"]:
        receiver = call.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            env["self"] = frame.env.get("self", Ref(receiver, call, "self"))
        else:  # `trainer.validate(...)`: `self` there is the caller's `trainer`
            env["self"] = _ref(receiver, frame)
        params = params[1:]
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(call.args):
        for name, ref in zip(params, args, strict=False):
            env[name] = ref
    kwonly = {a.arg for a in callee.args.kwonlyargs} | set(params)
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in kwonly:
            env[kw.arg] = _ref(kw.value, frame)
    return env


def _ref(expr: ast.expr, frame: _Frame) -> Ref:
    """``expr`` as the analysed function spells it: inside a helper, a
    parameter is the caller's argument; a local of the helper has no key."""
    dotted = dotted_name(expr)
    if dotted is None or (not frame.env and not frame.foreign):
        return Ref(expr, expr, dotted)
    root, _, rest = dotted.partition(".")
    outer = frame.env.get(root)
    if outer is None:
        return Ref(expr, expr, dotted if root == "self" and not frame.foreign else None)
    if not rest:
        return outer
    return Ref(expr, expr, f"{outer.key}.{rest}" if outer.key is not None else None)


def _static_test(test: ast.expr, frame: _Frame) -> bool | None:
    """``mode == "eval"`` in a helper whose caller passed ``"eval"``: known
    to hold (True) or not (False); None for any other test."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Constant)
    ):
        return None
    passed = frame.env.get(test.left.id)
    if passed is None or not isinstance(passed.expr, ast.Constant):
        return None
    same = passed.expr.value == test.comparators[0].value
    return same if isinstance(test.ops[0], ast.Eq) else not same


def _calls_under(node: ast.AST) -> Iterator[ast.Call]:
    """Calls in a simple statement or a header expression, not in lambdas or
    nested functions (they run later)."""
    from torchtrap.facts.index import walk_scope

    if isinstance(node, ast.Call):
        yield node
    for sub in walk_scope(node):
        if isinstance(sub, ast.Call):
            yield sub


def _arguments(function: Function, call: ast.Call) -> dict[str, ast.expr]:
    """The function's parameters as ``call`` gives them (defaults where it
    does not); none at all when it splats (``*args``, ``**kwargs``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    ):
        return {}
    params = [*function.args.posonlyargs, *function.args.args]
    out: dict[str, ast.expr] = {}
    defaults = function.args.defaults
    for param, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
        out[param.arg] = default
    for param, kw_default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if kw_default is not None:
            out[param.arg] = kw_default
    for param, arg in zip(params, call.args, strict=False):
        out[param.arg] = arg
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = kw.value
    return out


def _unwrap_optional(annotation: ast.expr, imports: ImportTable) -> ast.expr:
    """``X`` of ``Optional[X]`` and ``X | None``; the annotation otherwise."""
    if isinstance(annotation, ast.Subscript) and imports.qualname(annotation.value) in (
        "typing.Optional",
        "typing_extensions.Optional",
    ):
        return annotation.slice
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        for side, other in (
            (annotation.left, annotation.right),
            (annotation.right, annotation.left),
        ):
            if isinstance(other, ast.Constant) and other.value is None:
                return side
    return annotation


def _builtin_iter(call: ast.Call, facts: LoopFacts) -> bool:
    """``iter(x)`` of the builtin (not a local function of that name)."""
    func = call.func
    return (
        isinstance(func, ast.Name)
        and func.id == "iter"
        and len(call.args) == 1
        and not call.keywords
        and facts.imports.qualname(func) is None
        and facts._local_callee(call) is None
    )


def _iterated(expr: ast.expr, facts: LoopFacts) -> ast.expr:
    """``loader`` of ``enumerate(tqdm(loader))``."""
    while isinstance(expr, ast.Call) and expr.args:
        func = expr.func
        name = facts.imports.qualname(func) or (func.id if isinstance(func, ast.Name) else "")
        if name not in _ITERATION_WRAPPERS:
            break
        expr = expr.args[0]
    return expr


def _backpropagated(spelling: str, events: list[Event]) -> bool:
    """Do ``events`` call backward on the value spelled so (``loss``,
    ``outputs.loss``)? ``loss.backward()``, ``scaler.scale(loss).backward()``,
    ``accelerator.backward(loss)``, ``(loss / n).backward()``."""
    for event in events:
        if event.kind != BACKWARD or event.via:
            continue
        call = event.node
        if not isinstance(call, ast.Call):
            continue
        exprs: list[ast.expr] = list(call.args[:1])
        if isinstance(call.func, ast.Attribute):
            exprs.append(call.func.value)
        for expr in exprs:
            for node in ast.walk(expr):
                if isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node) == spelling:
                    return True
    return False


def _both_branches(bindings: list[Binding]) -> bool:
    """Two bindings with values, one in each branch of the same ``if``."""
    if len(bindings) != 2 or any(b.value is None or b.path for b in bindings):
        return False
    first, second = (parent(b.stmt) for b in bindings)
    if first is None or first is not second or not isinstance(first, ast.If):
        return False
    in_body = [any(b.stmt is s for s in first.body) for b in bindings]
    return in_body.count(True) == 1


def _branches(expr: ast.expr) -> list[ast.expr]:
    """Both values of ``a if c else b``; the value itself otherwise."""
    if isinstance(expr, ast.IfExp):
        return [*_branches(expr.body), *_branches(expr.orelse)]
    return [expr]


def _terms(expr: ast.expr) -> Iterator[ast.expr]:
    """The operands of a sum/product, through arithmetic only."""
    if isinstance(expr, ast.BinOp):
        yield from _terms(expr.left)
        yield from _terms(expr.right)
    elif isinstance(expr, ast.UnaryOp):
        yield from _terms(expr.operand)
    else:
        yield expr


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _replaced_after_backward(name: str, at: ast.AST, events: list[Event]) -> bool:
    """``output['loss'].backward(); output['loss'] = output['loss'].detach()``:
    the part of ``name`` that was backpropagated is replaced before ``at``."""
    line = getattr(at, "lineno", 0)
    for event in events:
        call = event.node
        if event.kind != BACKWARD or event.via or not isinstance(call, ast.Call):
            continue
        if not isinstance(call.func, ast.Attribute):
            continue
        loss = call.func.value
        if isinstance(loss, ast.Name) or dotted_name(loss) == name:
            return False  # the whole value was backpropagated
        spelled = ast.unparse(loss)
        function = enclosing_function(call)
        scope = function if function is not None else None
        if scope is None:
            return False
        for node in _statements(scope):
            if (
                isinstance(node, ast.Assign)
                and call.lineno < node.lineno < line
                and any(ast.unparse(t) == spelled for t in node.targets)
            ):
                return True
    return False


def _detached(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in _DETACHING


def _cut_from_graph(value: ast.expr) -> bool:
    """``loss.detach().cpu()``, ``loss.item()``, ``float(loss)``, ``x.data``:
    a method chain with a step that leaves the autograd graph."""
    node = value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("float", "int")
    ):
        return True
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _DETACHING:
                return True
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr == "data":
                return True
            node = node.value
        else:
            return False


def _statements(function: Function) -> Iterator[ast.AST]:
    from torchtrap.facts.index import walk_scope

    return walk_scope(function)


def _is_grad(expr: ast.expr) -> bool:
    """``p.grad`` / ``p.grad.data``."""
    if isinstance(expr, ast.Attribute) and expr.attr == "data":
        expr = expr.value
    return isinstance(expr, ast.Attribute) and expr.attr == "grad"


def _in_orelse(node: ast.AST, loop: Loop) -> bool:
    return any(node is s or _contains(s, node) for s in loop.orelse)


def _contains(tree: ast.AST, node: ast.AST) -> bool:
    return any(anc is tree for anc in ancestors(node))


def function_of(node: ast.AST) -> Function | None:
    return enclosing_function(node)


def helper_names(events: list[Event]) -> set[str]:
    """The helpers an iteration runs, by name (for messages)."""
    return {e.callee.name for e in events if e.kind == CALL and e.callee is not None}


# Calls into these packages run no project code.
_LIBRARIES = ("torch.", "numpy.", "math.", "os.", "time.", "logging.", "builtins.")


def _worth_asking(call: ast.Call, qualname: str | None) -> bool:
    """A call the whole-program model may resolve to project code: not a
    builtin or a library function by its import."""
    func = call.func
    if qualname is not None:
        return not qualname.startswith(_LIBRARIES) and "." in qualname
    if isinstance(func, ast.Name):
        return func.id not in _BUILTINS
    return isinstance(func, ast.Attribute) and func.attr not in _TENSOR_METHODS


_BUILTINS = frozenset(dir(__import__("builtins")))
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "train"})
# Method names that are a tensor's or a container's far more often than a project's.
_TENSOR_METHODS = frozenset(
    {"item", "detach", "cpu", "cuda", "to", "size", "view", "mean", "sum", "append", "update"}
    | {"format", "items", "keys", "values", "get", "numpy", "tolist", "add_scalar", "log"}
)


def _root(node: ast.AST) -> ast.AST:
    found = node
    for anc in ancestors(node):
        found = anc
    return found


def _nested_function(call: ast.Call, name: str) -> Function | None:
    """A function named ``name`` defined once directly in a function around
    ``call`` (a closure), nearest first."""
    for anc in ancestors(call):
        if isinstance(anc, ast.ClassDef):
            return None
        if not isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        defs = [
            s
            for s in anc.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and s.name == name
        ]
        if len(defs) == 1 and not isinstance(defs[0], ast.ClassDef):
            return defs[0]
        if defs:
            return None
    return None


def _declared_outer(function: Function, name: str) -> bool:
    """``global name`` / ``nonlocal name`` in the function."""
    from torchtrap.facts.index import walk_scope

    return any(
        isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
        for node in walk_scope(function)
    )


def keeps_parameter(method: Function, name: str) -> bool:
    """Does ``method`` add its parameter ``name`` as it is into ``self.attr``
    (``+=``) or append it to one, without rebinding it first (``val =
    val.item()``)? Its elements count (``self.sum[k] += losses[k]``, ``for
    v in values: self._sum[i] += v``): the meter keeps what it was given."""
    names = {name}
    for node in ast.walk(method):
        if (
            isinstance(node, (ast.For, ast.AsyncFor))
            and _iterates_name(node.iter, name)
            and not node.orelse
        ):
            target = node.target
            if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]  # `for i, v in enumerate(values)`
            if isinstance(target, ast.Name):
                names.add(target.id)
    kept = False
    for node in ast.walk(method):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                return False
        value: ast.expr | None = None
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and _on_self(node.target)
        ):
            value = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and _on_self(node.func.value)
            and len(node.args) == 1
        ):
            value = node.args[0]
        if value is not None and any(_uses_raw(value, n) for n in names):
            kept = True
    return kept


def _iterates_name(expr: ast.expr, name: str) -> bool:
    """``values``, ``enumerate(values)``, ``values.values()``."""
    if (
        isinstance(expr, ast.Call)
        and len(expr.args) == 1
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "enumerate"
    ):
        expr = expr.args[0]
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "values"
        and not expr.args
    ):
        expr = expr.func.value
    return isinstance(expr, ast.Name) and expr.id == name


def _on_self(target: ast.expr) -> bool:
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return isinstance(target, ast.Name) and target.id == "self"


def _uses_raw(value: ast.expr, name: str) -> bool:
    """``name`` in ``value`` through arithmetic and indexing only (not
    ``.item()``, ``float()``): ``loss``, ``loss * n``, ``losses[key]``."""
    if isinstance(value, ast.Name):
        return value.id == name
    if isinstance(value, ast.Subscript):
        return _uses_raw(value.value, name)
    if isinstance(value, ast.BinOp):
        return _uses_raw(value.left, name) or _uses_raw(value.right, name)
    if isinstance(value, ast.UnaryOp):
        return _uses_raw(value.operand, name)
    return False
