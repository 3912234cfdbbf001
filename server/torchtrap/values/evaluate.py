"""``Values.of(expr)``: the abstract value an expression holds.

Inside a function it follows assignments (the bindings that reach the use,
:meth:`~torchtrap.facts.tensors.TensorFacts.reaching`), tuple unpacking,
``if``/``else`` (a value one branch gives is MAY), walrus, conditional
expressions, ``self.x`` assigned in any method of the class, module-level
names, and the operations of :mod:`torchtrap.values.tensor_ops`. Across
functions and files it asks the project index: what a project function
returns, what a module class's ``forward`` gives, what the call sites pass
to a module-level function's parameter (joined over them). Past
``_MAX_DEPTH`` steps a value is UNKNOWN, never a guess; an unresolved
import is UNKNOWN.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from torchtrap.facts.autograd import distribution_kind
from torchtrap.facts.dataloaders import Workers
from torchtrap.facts.devices import Cuda
from torchtrap.facts.generators import SELF_RETURNING, TORCH_GENERATOR, generator_family
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import ancestors, enclosing_function, enclosing_scope, parent
from torchtrap.facts.remote import REMOTE_ATTR, remote_node
from torchtrap.facts.shapes import normalising_sum, same_dimension, shape
from torchtrap.facts.tensors import (
    TENSOR_METHODS,
    TORCH_TENSOR_CLASSES,
    Binding,
    TensorFacts,
    shadowed,
    single_literal,
)
from torchtrap.facts.tensors import Kind as Marker
from torchtrap.project.index import location
from torchtrap.values import tensor_ops as ops
from torchtrap.values import worker_init
from torchtrap.values.containers import constant_index, item_at, list_items
from torchtrap.values.datasets import DatasetFacts
from torchtrap.values.devices import device_cuda
from torchtrap.values.kinds import batches_of, parameter_loop, qualname_kind, tensor_annotation
from torchtrap.values.loaders import LoaderEvidence, Loaders
from torchtrap.values.memo import DepthMemo
from torchtrap.values.model import (
    UNKNOWN,
    Certainty,
    Generator,
    Kind,
    Probability,
    Value,
    join,
    plain,
    tensor,
)
from torchtrap.values.models import ModelFacts
from torchtrap.values.program import program_model
from torchtrap.values.program_values import program_worker_count

if TYPE_CHECKING:
    from torchtrap.facts.dataloaders import DataLoaderCall
    from torchtrap.facts.datasets import DatasetView
    from torchtrap.project.index import Project
    from torchtrap.values.autograd import AutogradFacts
    from torchtrap.values.layer import Context
    from torchtrap.values.loops import LoopFacts

_MAX_DEPTH = 10
# Attributes of a tensor that are tensors (``x.data``, ``x.T``) and of a module.
_TENSOR_VIEWS = frozenset({"data", "T", "mT", "real", "imag"})
_PARAMETERS = frozenset({"weight", "bias"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef


class Values:
    """One per linted module (``ctx.values``), caching what it computed.

    It holds its context weakly: the context holds it, and a cycle would
    keep the syntax tree alive until a full garbage collection."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = weakref.ref(ctx)
        self.path = ctx.path
        self.facts = ctx.facts
        self.tree = ctx.tree
        self.imports = ctx.facts.imports
        self.tensors = TensorFacts(ctx.facts)
        self._memo: DepthMemo[Value] = DepthMemo(_MAX_DEPTH, UNKNOWN)
        self._names: set[str] | None = None
        self._loaders: Loaders | None = None
        self._models: ModelFacts | None = None
        self._loops: LoopFacts | None = None
        self._datasets: DatasetFacts | None = None
        self._default_collate: set[int] | None = None
        self._autograd: AutogradFacts | None = None

    @property
    def project(self) -> Project | None:
        """The project (may raise NeedsProject while ``check`` indexes: let it)."""
        ctx = self._ctx()
        return ctx.project if ctx is not None else None

    def context(self) -> Context | None:
        """The rule context this layer was built for, while it lives."""
        return self._ctx()

    # -- the API -----------------------------------------------------------------
    @property
    def loaders(self) -> Loaders:
        """The DataLoader / iterator evidence of this module (:mod:`torchtrap.values.loaders`)."""
        if self._loaders is None:
            self._loaders = Loaders(self.facts, self.tensors)
        return self._loaders

    @property
    def datasets(self) -> DatasetFacts:
        """Which DataLoader receives which dataset class, and the shared
        "used with workers" judgement (:mod:`torchtrap.values.datasets`)."""
        if self._datasets is None:
            ctx = self._ctx()
            text = ctx.text if ctx is not None else ""
            # Weakly: the DatasetFacts is ours, and a cycle would keep the tree alive.
            counts = partial(_program_workers, weakref.ref(self))
            self._datasets = DatasetFacts(self.facts, self.loaders, text, counts)
        return self._datasets

    @property
    def models(self) -> ModelFacts:
        """Which constructor built a model value, who calls a function
        (:mod:`torchtrap.values.models`)."""
        if self._models is None:
            self._models = ModelFacts(self.tensors)
        return self._models

    @property
    def loops(self) -> LoopFacts:
        """A training loop's structure, shared by the loop rules
        (:mod:`torchtrap.values.loops`)."""
        if self._loops is None:
            from torchtrap.values.loops import LoopFacts

            self._loops = LoopFacts(self)
        return self._loops

    @property
    def autograd(self) -> AutogradFacts:
        """Parameters and values in the autograd graph (:mod:`torchtrap.values.autograd`)."""
        if self._autograd is None:
            from torchtrap.values.autograd import AutogradFacts

            self._autograd = AutogradFacts(self)
        return self._autograd

    def dataloader(self, expr: ast.expr, at: ast.AST | None = None) -> LoaderEvidence | None:
        """Evidence that ``expr`` (seen at ``at``) is a torch DataLoader; None: unknown."""
        return self.loaders.dataloader(expr, at if at is not None else expr)

    def iterator(self, expr: ast.expr, at: ast.AST | None = None) -> LoaderEvidence | None:
        """Evidence that ``expr`` is an iterator over a DataLoader (``iter(loader)``)."""
        return self.loaders.iterator(expr, at if at is not None else expr)

    def device(self, expr: ast.expr, at: ast.AST | None = None) -> Cuda:
        """How certainly a device expression is CUDA (:mod:`torchtrap.values.devices`)."""
        return device_cuda(self, expr, at if at is not None else expr)

    def constant(self, expr: ast.expr, at: ast.AST | None = None) -> Value:
        """``expr`` as a single literal: ``Kind.CONSTANT`` with ``constant``
        (the literal itself, or a name's only binding in the nearest scope
        that binds it, else the module's: ``n = 2`` ... ``num_workers=n``);
        a name bound more than once (``if args.x: n = 4``), or to anything
        but a literal, is UNKNOWN."""
        if isinstance(expr, ast.Constant):
            return Value(Kind.CONSTANT, constant=expr)
        if not isinstance(expr, ast.Name):
            return UNKNOWN
        literal = single_literal(
            expr.id, at if at is not None else expr, self.tree, self.tensors.table
        )
        return Value(Kind.CONSTANT, constant=literal) if literal is not None else UNKNOWN

    def assigned(self, name: ast.Name, scope: ast.AST) -> ast.expr | None:
        """The value last assigned to ``name`` (``x = ...``, ``x: T = ...``,
        ``(x := ...)``) in ``scope`` before the use, else the first one after
        it; nested functions are not looked into."""
        line = getattr(name, "lineno", 0)
        before: tuple[int, ast.expr] | None = None
        after: tuple[int, ast.expr] | None = None
        for binding in self.tensors.table(scope).bindings.get(name.id, ()):
            value = binding.value
            if value is None or binding.path or binding.loop_iter is not None:
                continue  # a parameter, a loop or `with` target, an unpacked element
            lineno = binding.pos[0]
            if lineno <= line:
                if before is None or lineno >= before[0]:
                    before = (lineno, value)
            elif after is None or lineno < after[0]:
                after = (lineno, value)
        chosen = before or after
        return chosen[1] if chosen else None

    def parameter(self, name: ast.Name, at: ast.AST | None = None) -> Function | None:
        """The function ``name`` is a parameter of, when ``name`` (seen at
        ``at``) still holds what the caller passed: no other binding in the
        function reaches ``at``. None for a local, a rebound parameter, or a
        name outside any function."""
        where = at if at is not None else name
        fn = enclosing_function(where)
        if fn is None:
            return None
        args = fn.args
        if name.id not in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}:
            return None
        reach = self.tensors.reaching(name.id, where)
        if reach is None or any(b.stmt is not fn for b in reach.bindings):
            return None
        return fn

    def worker_init_resets(
        self, loader: DataLoaderCall, attr: str, view: DatasetView
    ) -> bool | None:
        """Whether ``loader``'s worker_init_fn re-creates or re-seeds
        ``<x>.attr`` in each worker; None for one that cannot be read
        (:mod:`torchtrap.values.worker_init`)."""
        return worker_init.resets(loader, attr, self.datasets, view, lambda: self.project)

    # -- names in scopes: where a fix may go, what was written ---------------------
    def binds(self, name: str, scope: ast.AST) -> bool:
        """``scope`` itself binds ``name`` (an assignment, a parameter, a loop
        or ``with`` target, an import, a ``def``, ``global``): assigning to it
        there does not make a new local."""
        return bool(self.tensors.table(scope).bindings.get(name))

    def shadowed(self, name: str, at: ast.AST) -> bool:
        """The builtin ``name`` is rebound in a scope ``at`` sees (a
        parameter called ``next``, ``from numpy import float``)."""
        return shadowed(self.tensors, name, at)

    def bound_before(self, name: ast.Name, at: ast.AST) -> bool:
        """A binding of ``name`` in ``at``'s own scope comes before ``at``
        (so a statement inserted before ``at`` sees the same value)."""
        return self.tensors.reaching(name.id, at) is not None

    def mutated_after(self, name: str, stmt: ast.stmt) -> bool:
        """``name`` is changed in place after ``stmt`` in its scope
        (``x += 1``, ``x.add_(...)``, ``out=x``)."""
        table = self.tensors.table(enclosing_scope(stmt))
        after = (stmt.lineno, stmt.col_offset)
        return any(p > after for p in table.mutations.get(name, ()))

    def sources(self, expr: ast.expr, at: ast.AST) -> list[tuple[ast.expr, ast.AST]] | None:
        """The expressions written to a name or ``self.attr`` that may reach
        ``at``, with where each is written: for a rule that judges how a
        value was written (``n = (pred == y).sum()``), not what it holds
        (ask :meth:`of`). None when unknown: a parameter, a loop target, a
        binding that only some paths make, an outer scope."""
        return self.tensors.values_of(expr, at)

    def narrowed(self, expr: ast.expr, at: ast.AST) -> bool:
        """Whether ``at`` lies in a branch that tests ``expr`` is a tensor
        (``if isinstance(x, torch.Tensor):``, ``torch.is_tensor(x) and``)
        with nothing in it writing to what ``expr`` reads."""
        return isinstance(expr, _NARROWABLE) and _narrowed_to_tensor(expr, at, self.imports)

    def of(self, expr: ast.expr, at: ast.AST | None = None) -> Value:
        """The value of ``expr`` as seen at ``at`` (default: ``expr`` itself,
        which must be a node of this module's tree)."""
        return self._eval(expr, at if at is not None else expr, 0)

    # -- evaluation --------------------------------------------------------------
    def _eval(self, expr: ast.expr, at: ast.AST, depth: int) -> Value:
        # Memoised so that no answer depends on the questions asked before
        # (:mod:`torchtrap.values.memo`); a cycle through a node is UNKNOWN.
        return self._memo.answer((id(expr), id(at)), depth, self._eval_node, expr, at, depth)

    def _eval_node(self, expr: ast.expr, at: ast.AST, depth: int) -> Value:
        value = self._eval_expr(expr, at, depth)
        if (
            value.kind is Kind.UNKNOWN
            and isinstance(expr, _NARROWABLE)
            and _narrowed_to_tensor(expr, at, self.imports)
        ):
            return tensor()  # `if isinstance(x, torch.Tensor): x.to(...)`
        return value

    def _eval_expr(self, expr: ast.expr, at: ast.AST, depth: int) -> Value:
        if isinstance(expr, ast.Call):
            return self._call(expr, at, depth)
        if isinstance(expr, ast.Name):
            return self._name(expr, at, depth)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, at, depth)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, at, depth)
        if isinstance(expr, ast.BinOp):
            return self._binop(expr, at, depth)
        if isinstance(expr, ast.IfExp):
            options = [self._eval(expr.body, at, depth + 1), self._eval(expr.orelse, at, depth + 1)]
            return _alternatives(options) or join(options)
        if isinstance(expr, ast.BoolOp):
            # `rng or default_rng()`: a generator question only (the operands
            # of a tensor `and`/`or` are truth values).
            return _alternatives([self._eval(v, at, depth + 1) for v in expr.values]) or UNKNOWN
        if isinstance(expr, ast.NamedExpr):
            return self._eval(expr.value, at, depth + 1)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.Invert)):
            operand = self._eval(expr.operand, at, depth + 1)
            return plain(operand) if operand.kind is Kind.TENSOR else UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in expr.elts):
                return UNKNOWN
            return Value(
                Kind.TUPLE, elements=tuple(self._eval(e, at, depth + 1) for e in expr.elts)
            )
        return UNKNOWN

    # -- calls -------------------------------------------------------------------
    def _call(self, call: ast.Call, at: ast.AST, depth: int) -> Value:
        func = call.func
        qualname = self.imports.qualname(func)
        if qualname is not None:
            return self._qualified_call(qualname, call, at, depth)
        if isinstance(func, ast.Attribute) and (
            not _is_self(func.value) or func.attr not in self._self_attributes(at)
        ):
            found = self._method(func, call, at, depth)
            if found is not None:
                return found
        local = self.facts.classes.class_of_call(call)
        if local is not None:
            # A class of this module: the project knows its forward's output.
            found = self._project_call(func, call) if isinstance(func, ast.Name) else UNKNOWN
            if found.kind is Kind.MODULE or not self.facts.classes.is_module(local):
                return found
            return Value(Kind.MODULE)
        callee = self._eval(func, at, depth + 1)
        if callee.output is not None:
            return self._called(callee, call)
        if callee.kind is Kind.MODULE:
            return plain(callee)  # calling a module: its forward's output
        if isinstance(func, ast.Name) and (
            func.id in self._module_names() or func.id in self.models.relative_imports
        ):
            return self._project_call(func, call)
        return UNKNOWN

    def _called(self, callee: Value, call: ast.Call) -> Value:
        """What calling a module or function value gives at ``call``."""
        out = callee.output
        assert out is not None
        if out.probability is not None and not hasattr(out.probability.origin, REMOTE_ATTR):
            # A local module instance: the probabilities are computed at the call.
            out = replace(out, probability=replace(out.probability, origin=call))
        if out.log_probability is not None and not hasattr(out.log_probability.origin, REMOTE_ATTR):
            out = replace(out, log_probability=replace(out.log_probability, origin=call))
        if not (callee.definite or callee.partial):
            return out.maybe(callee.assumed)
        if out.kind is Kind.TENSOR and not out.definite:
            # Some of the modules it may be give probabilities; every one gives a tensor.
            return replace(out, partial=True)
        return out

    def _qualified_call(self, qualname: str, call: ast.Call, at: ast.AST, depth: int) -> Value:
        found = self._qualified(qualname, call, at, depth)
        if found.kind is Kind.UNKNOWN and found.probability is None:
            kind = qualname_kind(qualname)
            if kind is not Kind.UNKNOWN:
                return Value(kind)  # torch.sum(x) is a tensor whatever x is
        return found

    def _qualified(self, qualname: str, call: ast.Call, at: ast.AST, depth: int) -> Value:
        family = generator_family(qualname)
        if family is not None:
            return Value(Kind.RNG, generator=Generator(family, call))
        if qualname in ops.SOFTMAX_FUNCTIONS:
            return tensor(Probability("softmax", call))
        if qualname in ops.SIGMOID_FUNCTIONS:
            return tensor(Probability("sigmoid", call))
        if qualname in ops.LOG_SOFTMAX_FUNCTIONS:
            return tensor(log_probability=Probability("log_softmax", call))
        if qualname in ops.LOGSIGMOID_FUNCTIONS:
            return tensor(log_probability=Probability("logsigmoid", call))
        first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        if qualname in ops.KEEP_FUNCTIONS and first is not None:
            return _keep(self._eval(first, at, depth + 1))
        if qualname in ops.CONCAT_FUNCTIONS and first is not None:
            parts = self._eval(first, at, depth + 1)
            if parts.elements:
                joined = join(list(parts.elements))
                if joined.probability is not None and all(
                    e.probability is not None for e in parts.elements
                ):
                    return _keep(joined)
            return tensor()
        if qualname == "torch.sum" and first is not None:
            return _summed(self._eval(first, at, depth + 1), call, 1)
        if qualname in ops.GUARD_FUNCTIONS and first is not None:
            return _guard(self._eval(first, at, depth + 1))
        distribution = distribution_kind(qualname)
        if distribution is not None:
            return self._distribution(distribution, call, at, depth)
        layer = _layer_output(qualname, call)
        if layer is not None:
            return Value(Kind.MODULE, output=layer)
        if qualname == ops.SEQUENTIAL:
            last = call.args[-1] if call.args else None
            if last is None or isinstance(last, ast.Starred):
                return Value(Kind.MODULE)
            inner = self._eval(last, at, depth + 1)
            return (
                Value(Kind.MODULE, output=inner.output)
                if inner.kind is Kind.MODULE
                else Value(Kind.MODULE)
            )
        if qualname.startswith(ops.FOREIGN) or qualname_kind(qualname) is not Kind.UNKNOWN:
            return UNKNOWN  # the caller's qualname_kind answers
        return self._project_call(call.func, call)

    def _method(self, func: ast.Attribute, call: ast.Call, at: ast.AST, depth: int) -> Value | None:
        """``x.<method>(...)`` on an unimported receiver; None: not a method
        the table knows (the receiver may be a callable attribute)."""
        attr = func.attr
        if attr in SELF_RETURNING and isinstance(func.value, ast.Call):
            # torch.Generator().manual_seed(0): the generator itself
            receiver = self._eval(func.value, at, depth + 1)
            gen = receiver.generator
            if gen is not None and gen.family == TORCH_GENERATOR:
                return receiver
            return None
        if attr == "softmax":
            return tensor(Probability("softmax", call))
        if attr == "sigmoid" and not call.args and not call.keywords:
            return tensor(Probability("sigmoid", call))
        if attr == "log_softmax":
            return tensor(log_probability=Probability("log_softmax", call))
        if attr in ops.KEEP_METHODS or attr in ops.MODULE_SELF_METHODS:
            receiver = self._eval(func.value, at, depth + 1)
            if receiver.kind is Kind.MODULE and attr in ops.MODULE_SELF_METHODS:
                return receiver  # nn.Softmax(1).cuda()
            if attr in ops.KEEP_METHODS:
                return _keep(receiver)
            return None
        if attr in ops.GUARD_METHODS:
            return _guard(self._eval(func.value, at, depth + 1))
        if attr == "sum":
            return _summed(self._eval(func.value, at, depth + 1), call, 0)
        if attr in TENSOR_METHODS:
            receiver = self._eval(func.value, at, depth + 1)
            if receiver.kind is Kind.TENSOR:
                return plain(receiver)
            if receiver.kind is Kind.MODULE:
                return UNKNOWN  # a module's own method (`model.sum()` is no tensor op)
        return None

    def _distribution(
        self, distribution: tuple[str, int], call: ast.Call, at: ast.AST, depth: int
    ) -> Value:
        kind, position = distribution
        logits = _keyword(call, "logits")
        probs = _keyword(call, "probs")
        if probs is None and logits is None and len(call.args) > position:
            probs = call.args[position]
        if logits is not None:
            made = tensor(Probability(kind, call, direct=False, module=True))
        elif probs is not None and not isinstance(probs, ast.Starred):
            made = self._eval(probs, at, depth + 1)
        else:
            made = UNKNOWN
        return Value(Kind.DISTRIBUTION, fields=(("probs", made),))

    # -- names and attributes ----------------------------------------------------------
    def _name(self, name: ast.Name, at: ast.AST, depth: int) -> Value:
        if name.id in ("self", "cls"):
            return UNKNOWN
        reach = self.tensors.reaching(name.id, at)
        if reach is None:
            return self._module_level(name.id, at, depth)
        found: list[Value] = []
        for binding in reach.bindings:
            stmt = binding.stmt
            if isinstance(stmt, _FUNCTIONS) and binding.value is None:
                value = self._parameter(name.id, stmt, depth)
            elif binding.value is not None:
                value = self._eval(binding.value, stmt, depth + 1)
            elif binding.path and binding.loop_iter is None and isinstance(stmt, ast.Assign):
                value = self._element(self._eval(stmt.value, stmt, depth + 1), binding.path)
            elif binding.loop_iter is not None:
                value = self._loop_item(binding.loop_iter, binding.path, stmt)
            else:
                value = UNKNOWN
            if value.kind is not Kind.TENSOR and tensor_annotation(
                self.imports, binding.annotation
            ):
                value = tensor()  # `x: torch.Tensor`
            found.append(value)
        if not reach.complete and not _both_branches(reach.bindings, at):
            found.append(UNKNOWN)  # the name may come from before the branch
        joined = join(found).via(name.id)
        if reach.mutated:
            # Changed in place (p.clamp_(), p += eps, out=p): still a tensor,
            # no longer what it was computed as.
            if joined.kind is Kind.UNKNOWN:
                return UNKNOWN
            return replace(joined, probability=None, log_probability=None)
        return joined

    def _loop_item(self, iterable: ast.expr, path: tuple[int, ...], at: ast.AST) -> Value:
        """A loop target: a parameter (``for p in m.parameters()``), a batch
        of a DataLoader with the default collate or a tensor in one."""
        parameter = parameter_loop(iterable, path)
        if parameter is not None:
            return tensor() if parameter else UNKNOWN
        unwrapped = batches_of(self.imports, iterable, path)
        if unwrapped is None or not self._default_collate_loader(*unwrapped[:1], at):
            return UNKNOWN
        return Value(Kind.BATCH) if not unwrapped[1] else tensor()

    def _default_collate_loader(self, expr: ast.expr, at: ast.AST) -> bool:
        """A DataLoader built here without a ``collate_fn`` (a custom one may
        give anything: a BatchEncoding's ``.to()`` works in place), through a
        name, or a parameter whose project callers all pass one."""
        if self._default_collate is None:
            self._default_collate = {
                id(d.node)
                for d in self.facts.dataloaders
                if d.argument("collate_fn") is None and not d.has_splat
            }
        made = self._default_collate
        if isinstance(expr, ast.Call):
            return id(expr) in made
        values = self.tensors.values_of(expr, at)
        if values is None and isinstance(expr, ast.Name):
            return self._loader_parameter(expr, at)
        return bool(values) and all(
            isinstance(v, ast.Call) and id(v) in made for v, _ in values or ()
        )

    def _module_level(self, name: str, at: ast.AST, depth: int) -> Value:
        scope = enclosing_scope(at)
        if isinstance(scope, ast.Module) or self.tensors.table(scope).bindings.get(name):
            return UNKNOWN  # module level already looked at, or bound here after the use
        events = self.tensors.table(self.tree).bindings.get(name, [])
        if len(events) == 1 and events[0].value is not None:
            return self._eval(events[0].value, events[0].stmt, depth + 1).via(name)
        return UNKNOWN

    def _attribute(self, attr: ast.Attribute, at: ast.AST, depth: int) -> Value:
        name = attr.attr
        if name == "grad":
            return tensor()
        if name in _TENSOR_VIEWS or name in _PARAMETERS:
            base = self._eval(attr.value, at, depth + 1)
            owner = Kind.TENSOR if name in _TENSOR_VIEWS else Kind.MODULE
            if base.kind is owner:
                return plain(base)
        if _is_self(attr.value):
            values = self._self_attributes(at).get(name)
            if not values:
                return UNKNOWN
            return join([self._stored(v, depth) for v in values])
        if name == "probs":
            return self._eval(attr.value, at, depth + 1).field("probs")
        return UNKNOWN

    def _stored(self, value: ast.expr | Marker, depth: int) -> Value:
        """One value stored in ``self.<attr>``: an expression, or a
        registration (``register_buffer``: a tensor, ``add_module``: a module)."""
        if isinstance(value, ast.expr):
            return self._eval(value, value, depth + 1)
        if value is Marker.TENSOR:
            return tensor()
        return Value(Kind.MODULE) if value is Marker.MODULE else UNKNOWN

    def _self_attributes(self, at: ast.AST) -> dict[str, list[ast.expr | Marker]]:
        return self.tensors.self_attribute_values(at)

    def _subscript(self, sub: ast.Subscript, at: ast.AST, depth: int) -> Value:
        items = list_items(sub.value, at, self.tensors, self.facts.index)
        if items is not None:
            # `arr = []; arr.append(x); arr[0]`: x. Any item when the index
            # is not a constant: they must agree (join), else unknown.
            chosen = item_at(items, sub.slice)
            if chosen is not None:
                return self._eval(chosen[0], chosen[1], depth + 1)
            if isinstance(sub.slice, ast.Slice) or constant_index(sub.slice) is not None:
                return UNKNOWN  # a slice, or past the end
            return join([self._eval(v, stmt, depth + 1) for v, stmt in items])
        base = self._eval(sub.value, at, depth + 1)
        index = sub.slice
        if base.elements is not None:
            if (
                isinstance(index, ast.Constant)
                and isinstance(index.value, int)
                and -len(base.elements) <= index.value < len(base.elements)
            ):
                return base.elements[index.value]
            return UNKNOWN
        if base.kind is Kind.BATCH:
            return plain(base)  # batch["x"], batch[0]
        kept = _keep(base)
        prob = kept.probability
        part = _part_of(index)
        if prob is not None and not prob.scaled and prob.part is None and part is not None:
            return replace(kept, probability=prob.derived(part=part))
        return kept

    def _binop(self, expr: ast.BinOp, at: ast.AST, depth: int) -> Value:
        op = expr.op
        if isinstance(op, ast.Sub) and _is_number(expr.left, 1):
            inner = self._eval(expr.right, at, depth + 1)
            prob = inner.probability
            if prob is None or prob.complement or prob.scaled:
                return tensor() if inner.kind is Kind.TENSOR else UNKNOWN
            return replace(inner, probability=replace(prob, complement=True), log_probability=None)
        if isinstance(op, (ast.Add, ast.Sub)):
            sides = [self._eval(s, at, depth + 1) for s in (expr.left, expr.right)]
            probs = [s for s in sides if s.probability is not None]
            if len(probs) == 1:
                return _guard(probs[0])  # p + eps, p * 0.98 + 0.01
            return _arithmetic(sides)
        if isinstance(op, (ast.Mult, ast.Pow)):
            left = self._eval(expr.left, at, depth + 1)
            right = self._eval(expr.right, at, depth + 1)
            for side in (left, right) if isinstance(op, ast.Mult) else (left,):
                prob = side.probability
                if prob is not None:
                    return replace(
                        side, probability=prob.derived(scaled=True), log_probability=None
                    )
            return _arithmetic([left, right])
        if isinstance(op, ast.Div) and _normalises(expr, self.imports):
            return tensor(Probability("normalised", expr, direct=False))
        if isinstance(op, ast.Mod):
            return UNKNOWN  # "%d" % n: string formatting as often as a tensor op
        return _arithmetic([self._eval(s, at, depth + 1) for s in (expr.left, expr.right)])

    def _element(self, value: Value, path: tuple[int, ...]) -> Value:
        for index in path:
            if value.elements is None or index < 0 or index >= len(value.elements):
                return UNKNOWN
            value = value.elements[index]
        return value

    # -- other functions and files (the project index) ------------------------------
    def _module_names(self) -> set[str]:
        """Names this module defines at top level (functions, classes, assignments)."""
        if self._names is None:
            names: set[str] = set()
            for stmt in self.tree.body:
                if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                    names.add(stmt.name)
                elif isinstance(stmt, ast.Assign):
                    names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
            self._names = names
        return self._names

    def _project_call(self, func: ast.expr, call: ast.Call) -> Value:
        """A project function, module instance or module class: what calling
        it gives (``torch.log(probs(x))`` with ``probs`` in utils.py)."""
        qualname = self.imports.qualname(func)
        if qualname is not None and qualname.startswith(ops.FOREIGN):
            return UNKNOWN
        dotted = dotted_name(func)
        project = self.project if dotted is not None else None
        ref = project.ref(self.path, dotted) if project is not None and dotted else None
        if project is None or ref is None:
            return UNKNOWN
        if project.class_fact(ref) is not None:
            kind = project.module_class_output(ref)
            if kind is None:
                return Value(Kind.MODULE) if project.derives_from(ref, _MODULES) else UNKNOWN
            output = tensor(self._remote_probability(project, ref, kind, call))
            return Value(Kind.MODULE, output=output)
        kind = project.probability_of(ref)
        if kind is not None:
            return tensor(self._remote_probability(project, ref, kind, call))
        # The return annotation adds "a tensor" where the returns say no more.
        annotated = project.return_annotation(ref)
        elements = project.returned_elements(ref)
        if annotated[:1] == ("tensor",):
            return tensor()
        marked = annotated[1:] if annotated[:1] == ("tuple",) else ()
        if elements and marked and len(elements) != len(marked):
            marked = ()  # the returns and the annotation disagree: believe neither's length
        if not elements and not marked:
            return UNKNOWN
        count = len(elements or marked)
        return Value(
            Kind.TUPLE,
            elements=tuple(
                tensor(self._remote_probability(project, ref, elements[i], call))
                if elements and elements[i]
                else tensor()
                if marked and marked[i]
                else UNKNOWN
                for i in range(count)
            ),
        )

    def _remote_probability(
        self, project: Project, ref: str, kind: str, call: ast.Call
    ) -> Probability:
        found = project.definition(ref)
        if found is None:
            return Probability(kind, call, direct=False, module=True)
        path, span = found
        origin = remote_node(path, span, location(path, span, project.root))
        return Probability(kind, origin, direct=False, module=True)

    def _loader_parameter(self, name: ast.Name, at: ast.AST) -> bool:
        """Whether ``name`` is a parameter of a module-level function whose
        call sites in the project pass it a DataLoader with the default
        collate, and every tracked argument there does."""
        fn = self.parameter(name, at)
        if fn is None or parent(fn) is not self.tree:
            return False
        positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        project = self.project
        ref = project.ref(self.path, fn.name) if project is not None else None
        if project is None or ref is None:
            return False
        index = positional.index(name.id) if name.id in positional else None
        args = project.call_site_args(ref, index, keyword=name.id)
        return bool(args) and all(a.arg.kind == "dataloader" for a in args)

    def _parameter(
        self, name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, depth: int
    ) -> Value:
        """A parameter of a module-level function: the join of what its call
        sites in the project pass (``bce(torch.sigmoid(z), y)``)."""
        if parent(fn) is not self.tree:
            return UNKNOWN
        args = fn.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if name not in positional and name not in [a.arg for a in args.kwonlyargs]:
            return UNKNOWN
        project = self.project
        ref = project.ref(self.path, fn.name) if project is not None else None
        if project is None or ref is None:
            return UNKNOWN
        index = positional.index(name) if name in positional else None
        found: list[Value] = []
        for arg in project.call_site_args(ref, index, keyword=name):
            kind = project.arg_probability(arg)
            if kind is None:
                found.append(UNKNOWN)
                continue
            node = remote_node(arg.path, arg.arg.span, arg.where(project.root))
            found.append(
                tensor(Probability(kind, node, direct=False, module=True, via=name, passed=True))
            )
        if not found:
            return UNKNOWN
        value = join(found)
        if not value.definite and value.probability is not None:
            return value.maybe(f"if `{name}` is the {value.probability.kind} some callers pass")
        return value


_MODULES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def _layer_output(qualname: str, call: ast.Call) -> Value | None:
    """What an ``nn.Softmax``/``nn.Sigmoid``/``nn.LogSoftmax`` instance gives."""
    if qualname in ops.SOFTMAX_MODULES:
        return tensor(Probability("softmax", call, direct=False, module=True))
    if qualname in ops.SIGMOID_MODULES:
        return tensor(Probability("sigmoid", call, direct=False, module=True))
    if qualname in ops.LOG_SOFTMAX_MODULES:
        return tensor(log_probability=Probability("log_softmax", call, direct=False, module=True))
    if qualname in ops.LOGSIGMOID_MODULES:
        return tensor(log_probability=Probability("logsigmoid", call, direct=False, module=True))
    return None


def _alternatives(options: list[Value]) -> Value | None:
    """``a if c else b`` / ``a or b`` where some operand is a random
    generator: the first one, MAY unless every operand is one; None when
    none is (the caller's usual answer)."""
    built = [v for v in options if v.kind is Kind.RNG and v.generator is not None]
    if not built:
        return None
    first = built[0]
    assert first.generator is not None
    if len(built) == len(options):
        joined = join(options)  # the certainty; the first operand's constructor
        alternative = joined.generator is not None and joined.generator.alternative
        return replace(
            joined,
            generator=replace(first.generator, alternative=alternative),
            origin=first.origin,
        )
    return replace(
        first,
        certainty=Certainty.MAY,
        generator=replace(first.generator, alternative=True),
        assumed="a generator when that operand is taken",
    )


_NARROWABLE = (ast.Name, ast.Attribute, ast.Subscript)
_IS_TENSOR = frozenset({"torch.is_tensor"})


def _narrowed_to_tensor(expr: ast.expr, at: ast.AST, imports: ImportTable) -> bool:
    """``expr`` seen at ``at`` inside ``if isinstance(expr, torch.Tensor):``
    (or ``torch.is_tensor(expr)``, also as an operand of ``and`` before
    ``at``), with nothing in that branch writing to what ``expr`` reads."""
    wanted = shape(expr)
    child: ast.AST = at
    for anc in ancestors(at):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        tests: list[ast.expr] = []
        in_if = isinstance(anc, ast.If) and child in anc.body
        if in_if or (isinstance(anc, ast.IfExp) and child is anc.body):
            tests = [anc.test]  # type: ignore[attr-defined]
        elif isinstance(anc, ast.BoolOp) and isinstance(anc.op, ast.And) and child in anc.values:
            tests = anc.values[: anc.values.index(child)]
        for test in tests:
            if _tests_tensor(test, wanted, imports) and not _writes(anc, expr):
                return True
        child = anc
    return False


def _tests_tensor(test: ast.expr, wanted: str, imports: ImportTable) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_tests_tensor(v, wanted, imports) for v in test.values)
    if not isinstance(test, ast.Call) or test.keywords or not test.args:
        return False
    qualname = imports.qualname(test.func)
    if qualname in _IS_TENSOR and len(test.args) == 1:
        return shape(test.args[0]) == wanted
    if not (isinstance(test.func, ast.Name) and test.func.id == "isinstance"):
        return False
    if len(test.args) != 2 or shape(test.args[0]) != wanted:
        return False
    types = test.args[1]
    options = types.elts if isinstance(types, ast.Tuple) else [types]
    return bool(options) and all(imports.qualname(t) in TORCH_TENSOR_CLASSES for t in options)


def _writes(branch: ast.AST, expr: ast.expr) -> bool:
    """Whether ``branch`` (the ``if`` or the expression holding the use)
    binds the name ``expr`` starts from, anywhere (a loop may run it
    first), or, for ``x[k]``/``x.a``, writes through it or calls a method
    of it (``x.update(...)``)."""
    root: ast.expr = expr
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not isinstance(root, ast.Name):
        return True
    name = root.id
    for node in ast.walk(branch):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if root is expr:
            continue
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            base = node.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name) and base.id == name:
                return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
        ):
            return True
    return False


def _both_branches(bindings: list[Binding], at: ast.AST) -> bool:
    """Some binding sits directly in the body and one in the ``else`` of
    one ``if`` that does not hold ``at``: every path through it binds."""
    around = {id(a) for a in ancestors(at)}
    sides: dict[int, set[str]] = {}
    for binding in bindings:
        stmt = binding.stmt
        owner = parent(stmt)
        if binding.loop_iter is not None or not isinstance(owner, ast.If) or id(owner) in around:
            continue
        side = "body" if any(s is stmt for s in owner.body) else "orelse"
        sides.setdefault(id(owner), set()).add(side)
    return any(len(found) == 2 for found in sides.values())


def _summed(value: Value, call: ast.Call, dim_at: int) -> Value:
    """``(p * onehot).sum(1)`` / ``torch.sum(p * onehot, dim=1)``: a sum over a
    dimension of a scaled probability selects one (a one-hot mask); the
    sum of a probability itself is 1, not a probability that underflows."""
    prob = value.probability
    has_dim = len(call.args) > dim_at or _keyword(call, "dim") is not None
    if prob is not None and prob.scaled and has_dim:
        return replace(value, probability=prob.derived(scaled=False))
    dim = call.args[dim_at] if len(call.args) > dim_at else _keyword(call, "dim")
    if (
        prob is not None
        and prob.part is not None
        and dim is not None
        and _is_number(dim, prob.part)
    ):
        # `p[:, 1:].sum(1)`: the mass of some classes (1 - p[:, 0])
        return replace(value, probability=prob.derived(part=None))
    return plain(value) if value.kind is Kind.TENSOR else UNKNOWN


def _part_of(index: ast.expr) -> int | None:
    """``p[:, 1:]``: the one dimension a slice with bounds cuts (1), when
    every other dimension is whole (``:``); None otherwise."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    cut: int | None = None
    for at, part in enumerate(parts):
        if not isinstance(part, ast.Slice) or part.step is not None:
            return None
        if part.lower is None and part.upper is None:
            continue
        if cut is not None:
            return None
        cut = at
    return cut


def _keep(value: Value) -> Value:
    """An operation that keeps the probability (selection, layout, casts)."""
    prob = value.probability
    logp = value.log_probability
    if prob is None and logp is None:
        return plain(value) if value.kind is Kind.TENSOR else UNKNOWN
    return replace(
        value,
        kind=Kind.TENSOR,
        probability=prob.derived(part=None) if prob else None,
        log_probability=logp.derived(part=None) if logp else None,
        output=None,
    )


def _guard(value: Value) -> Value:
    """A clamp or an offset: the probability is kept off 0."""
    prob = value.probability
    if prob is None:
        return plain(value) if value.kind is Kind.TENSOR else UNKNOWN
    return replace(value, probability=prob.derived(guarded=True), log_probability=None)


def _arithmetic(sides: list[Value]) -> Value:
    """``a + b``, ``a @ b``, ``-a``...: a tensor when a side is one and no side
    is a module; as certain as its tensor sides."""
    tensors = [s for s in sides if s.kind is Kind.TENSOR]
    if not tensors or any(s.kind is Kind.MODULE for s in sides):
        return UNKNOWN
    return plain(next((t for t in tensors if not t.definite), tensors[0]))


def _normalises(expr: ast.BinOp, imports: ImportTable) -> bool:
    """``y / y.sum(d, keepdim=True)``, ``y / torch.sum(y, d).unsqueeze(d)``:
    the same expression over its sum, kept on the summed dimension."""
    parts = normalising_sum(expr)
    if parts is None or not same_dimension(parts.summed, parts.kept):
        return False
    return not parts.function_form or imports.qualname(parts.call.func) == "torch.sum"


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_number(node: ast.AST, number: int) -> bool:
    return (
        isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == number
    )


__all__ = ["Certainty", "Values"]


def _program_workers(values: weakref.ReferenceType[Values], loader: DataLoaderCall) -> Workers:
    """A DataLoader's worker count the file cannot tell, as the
    whole-program model sees it (``num_workers=workers`` with every caller
    passing 0, or 4); the file's answer when the model has none."""
    owner = values()
    ctx = owner.context() if owner is not None else None
    if ctx is None:
        return loader.workers
    model = program_model(ctx.project, ctx.path, ctx.text, ctx.tree)
    kind = program_worker_count(model, loader.node) if model is not None else None
    return {"zero": Workers.NONE, "some": Workers.SOME}.get(kind or "", loader.workers)
