"""Bindings of one module, and the torch name tables, for the value layer.

Answered from the one module's ``ast`` only: which assignments to a name
can reach a use of it in the same function (``reaching``), and was the name
changed in place in between (``p.clamp_()``, ``p[...] = ...``, ``p += ...``,
``out=p``); what was assigned to a name or ``self.attr`` (``values_of``,
``self_attribute_values``). Which torch functions, methods and classes give
tensors are tables here. Whether an expression *is* a tensor or a module
is the value layer's question (:mod:`torchtrap.values`), never asked here.

Computed lazily per scope, only for the names a rule asks about.
"""

from __future__ import annotations

import ast
import enum
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from torchtrap.facts.index import (
    SCOPE_TYPES,
    NodeIndex,
    ancestors,
    enclosing_scope,
    enclosing_statement,
    walk_scope,
)

if TYPE_CHECKING:
    from torchtrap.facts.classes import ClassTable
    from torchtrap.facts.imports import ImportTable

Pos = tuple[int, int]


class ModuleSyntax(Protocol):
    """What :class:`TensorFacts` reads of a module's facts
    (``torchtrap.facts.ModuleFacts``, which imports this module: typed
    structurally so the two do not import each other)."""

    tree: ast.Module
    index: NodeIndex

    @property
    def imports(self) -> ImportTable: ...

    @property
    def classes(self) -> ClassTable: ...

    @property
    def calls_by_name(self) -> dict[str, list[ast.Call]]: ...

    def scope_table(self, scope: ast.AST) -> ScopeTable: ...


def words(text: str) -> frozenset[str]:
    """A name table written as whitespace-separated words."""
    return frozenset(text.split())


class Kind(enum.Enum):
    """What a registration stores on ``self`` (``self_attribute_values``):
    ``register_buffer`` a tensor, ``add_module`` a module; UNKNOWN for an
    unpacked target. What an expression holds is the value layer's question."""

    TENSOR = "tensor"
    MODULE = "module"
    UNKNOWN = "unknown"


# torch's elementwise math, each both `torch.<name>(x)` and `x.<name>()`, each
# with an in-place twin `x.<name>_()` (checked on torch 2.13).
ELEMENTWISE = words(
    """
    sin cos tan asin acos atan atan2 arcsin arccos arctan arctan2 sinh cosh asinh acosh
    atanh arcsinh arccosh arctanh exp2 expm1 log1p logit erf erfc erfinv lgamma digamma i0
    sinc hypot xlogy sgn frac fix deg2rad rad2deg float_power heaviside copysign nextafter
    negative bitwise_and bitwise_or bitwise_xor bitwise_not logical_and logical_or
    logical_not logical_xor subtract multiply divide absolute ldexp gcd lcm
    """
)
# torch.* functions that return a tensor (an allowlist: torch.load, torch.compile,
# torch.jit.script... return models or anything, and stay unknown).
TORCH_TENSOR_FUNCTIONS = (
    words(
        """
    tensor as_tensor asarray from_numpy frombuffer zeros ones empty full rand randn randint
    randperm arange linspace logspace eye zeros_like ones_like empty_like full_like rand_like
    randn_like randint_like stack cat concat concatenate hstack vstack where clamp clip
    clamp_min clamp_max softmax log_softmax sigmoid tanh relu exp log log2 log10 log1p expm1
    abs neg sqrt rsqrt pow square reciprocal sign floor ceil round trunc matmul mm bmm einsum
    outer addmm addcmul addcdiv lerp sum mean prod std var norm cumsum cumprod logsumexp
    maximum minimum gather scatter scatter_add scatter_reduce masked_fill masked_scatter
    masked_select index_select index_fill index_add index_copy index_put index_reduce
    take_along_dim narrow unsqueeze squeeze transpose t permute reshape flatten unflatten
    movedim repeat_interleave tile flip roll diag tril triu bernoulli multinomial normal
    poisson add sub mul div true_divide floor_divide fmod remainder nan_to_num erf
    clone detach one_hot argmax argmin cdist dist cross dot tensordot kron
    amax amin isnan isinf isfinite logaddexp logaddexp2 logcumsumexp
    """
    )
    | ELEMENTWISE
)
# Namespaces whose lowercase functions return tensors.
TORCH_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.fft.", "torch.special.")
# nn.* names that are tensors, not modules.
TORCH_TENSOR_CLASSES = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "torch.nn.Buffer",
        "torch.nn.parameter.Buffer",
        "torch.Tensor",
        "torch.FloatTensor",
        "torch.LongTensor",
        "torch.IntTensor",
        "torch.BoolTensor",
        "torch.DoubleTensor",
        "torch.HalfTensor",
    }
)
TENSOR_ANNOTATIONS = TORCH_TENSOR_CLASSES
# Tensor methods that return a tensor (for chains: ``x.float().view(-1)``).
TENSOR_METHODS = (
    words(
        """
    clamp clamp_min clamp_max clip masked_fill masked_scatter masked_select scatter scatter_add
    scatter_reduce index_fill index_add index_copy index_put index_reduce index_select gather
    unsqueeze squeeze transpose t permute view reshape flatten unflatten expand expand_as
    view_as reshape_as type_as repeat repeat_interleave narrow contiguous detach clone float
    half double bfloat16 int long bool byte short to cuda cpu add sub mul div pow abs neg exp
    log log2 log10 log1p sqrt rsqrt reciprocal square sigmoid tanh relu softmax log_softmax
    sum mean prod std var norm cumsum matmul mm bmm softmax argmax argmin floor ceil round
    trunc sign nan_to_num lerp addcmul addcdiv fmod remainder new_zeros new_ones new_full
    new_empty new_tensor flip roll tril triu diag amax amin isnan isinf isfinite
    """
    )
    | ELEMENTWISE
)
# Methods that return the module itself when called on one.
MODULE_SELF_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "train", "eval"}
    | {"requires_grad_", "share_memory", "to_empty", "apply", "xpu"}
)
# Methods whose loop variable yields parameters / buffers (path in the target).
PARAMETER_ITERATORS = {
    "parameters": (),
    "buffers": (),
    "named_parameters": (1,),
    "named_buffers": (1,),
}
# Those of them that yield nn.Parameters (leaves that require grad; buffers do not).
PARAMETER_ONLY_ITERATORS = {k: v for k, v in PARAMETER_ITERATORS.items() if "parameters" in k}
_CONDITIONAL = tuple(
    t
    for t in (
        ast.If,
        ast.For,
        ast.AsyncFor,
        ast.While,
        ast.Try,
        getattr(ast, "TryStar", None),
        getattr(ast, "Match", None),
    )
    if t is not None
)
_NAMED_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)


@dataclass
class Binding:
    """One place where ``name`` gets a value in a scope."""

    name: str
    pos: Pos
    stmt: ast.AST
    value: ast.expr | None = None  # the whole value bound to this name, when known
    annotation: ast.expr | None = None
    loop_iter: ast.expr | None = None  # for-loop targets: the iterable
    path: tuple[int, ...] = ()  # index inside an unpacked target: (x, (y, z)) -> z is (1, 1)


@dataclass
class ScopeTable:
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    mutations: dict[str, list[Pos]] = field(default_factory=dict)


@dataclass
class Reach:
    """The bindings that may give a name its value at a use."""

    bindings: list[Binding]
    mutated: bool  # changed in place between the earliest of them and the use
    complete: bool  # False when every binding found is conditional (the name
    # may also come from an outer scope or be unbound)


def _pos(node: ast.AST) -> Pos:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bind_target(
    bindings: defaultdict[str, list[Binding]],
    mutations: defaultdict[str, list[Pos]],
    target: ast.AST,
    value: ast.expr | None,
    stmt: ast.AST,
    path: tuple[int, ...] = (),
    loop_iter: ast.expr | None = None,
    annotation: ast.expr | None = None,
) -> None:
    # A module-level function, not a closure in _collect: a recursive closure
    # is a reference cycle that would keep the bindings (and through them the
    # syntax tree) alive until a full garbage collection.
    if isinstance(target, ast.Name):
        bindings[target.id].append(
            Binding(target.id, _pos(stmt), stmt, value, annotation, loop_iter, path)
        )
    elif isinstance(target, (ast.Tuple, ast.List)):
        elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        if elts is not None and len(elts) != len(target.elts):
            elts = None
        for i, elt in enumerate(target.elts):
            sub = elts[i] if elts is not None and loop_iter is None else None
            _bind_target(bindings, mutations, elt, sub, stmt, (*path, i), loop_iter)
    elif isinstance(target, ast.Starred):
        _bind_target(bindings, mutations, target.value, None, stmt, (*path, -1), loop_iter)
    elif isinstance(target, ast.Subscript):
        root = _root_name(target)
        if root is not None:
            mutations[root].append(_pos(stmt))


# Node types that bind no name and mutate nothing (what `_collect` skips).
_BINDS_NOTHING = frozenset(
    {
        ast.Name,
        ast.Constant,
        ast.Attribute,
        ast.Subscript,
        ast.keyword,
        ast.Tuple,
        ast.List,
        ast.Dict,
        ast.BinOp,
        ast.UnaryOp,
        ast.BoolOp,
        ast.Compare,
        ast.Expr,
        ast.Return,
        ast.If,
        ast.Starred,
        ast.Slice,
        ast.JoinedStr,
        ast.FormattedValue,
        ast.comprehension,
    }
)


def collect_scope(scope: ast.AST) -> ScopeTable:
    """The bindings and in-place changes of every name of ``scope`` (not of
    nested functions). Callers ask ``ModuleFacts.scope_table``, which keeps
    one per scope (not on the node: the table points back at the tree, and
    a cycle would keep it alive)."""
    bindings: defaultdict[str, list[Binding]] = defaultdict(list)
    mutations: defaultdict[str, list[Pos]] = defaultdict(list)

    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                bindings[arg.arg].append(
                    Binding(arg.arg, _pos(scope), scope, annotation=arg.annotation)
                )
    for node in walk_scope(scope):
        if node.__class__ in _BINDS_NOTHING:  # most nodes: one set lookup, not a dozen isinstance
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(bindings, mutations, target, node.value, node)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                _bind_target(
                    bindings, mutations, node.target, node.value, node, annotation=node.annotation
                )
        elif isinstance(node, ast.AugAssign):
            root = _root_name(node.target)
            if root is not None:
                mutations[root].append(_pos(node))
        elif isinstance(node, ast.NamedExpr):
            _bind_target(
                bindings, mutations, node.target, node.value, enclosing_statement(node) or node
            )
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            _bind_target(bindings, mutations, node.target, None, node, loop_iter=node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    _bind_target(bindings, mutations, item.optional_vars, None, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".", 1)[0]
                bindings[name].append(Binding(name, _pos(node), node))
        elif isinstance(node, _NAMED_NODES) and node.name:
            bindings[node.name].append(Binding(node.name, _pos(node), node))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            # Bound elsewhere too: make every later use look unknown.
            for name in node.names:
                bindings[name].append(Binding(name, (0, 0), node))
        elif isinstance(node, ast.Call):
            _record_call_mutation(node, mutations)
    for events in bindings.values():
        events.sort(key=lambda b: b.pos)
    for positions in mutations.values():
        positions.sort()
    return ScopeTable(dict(bindings), dict(mutations))


def _record_call_mutation(call: ast.Call, mutations: defaultdict[str, list[Pos]]) -> None:
    """``p.clamp_(...)``, ``torch.clamp_(p)``, ``nn.init.zeros_(p)``, ``out=p``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    in_place = name.endswith("_") and not name.startswith("_")
    if in_place and isinstance(func, ast.Attribute):
        root = _root_name(func.value)
        if root is not None:
            mutations[root].append(_pos(call))
    if in_place and call.args:
        root = _root_name(call.args[0])
        if root is not None:
            mutations[root].append(_pos(call))
    for kw in call.keywords:
        if kw.arg == "out":
            root = _root_name(kw.value)
            if root is not None:
                mutations[root].append(_pos(call))


def single_literal(
    name: str, at: ast.AST, module: ast.Module, table: Callable[[ast.AST], ScopeTable]
) -> ast.Constant | None:
    """The literal ``name`` holds at ``at`` when it is the name's only
    binding in the nearest scope that binds it, else the module's
    (``n = 2`` ... ``num_workers=n``). Bound more than once (``if args.x:
    n = 4``), or otherwise (a parameter, a loop, an import): None."""
    scope = enclosing_scope(at)
    for candidate in (scope, module) if scope is not module else (module,):
        bindings = table(candidate).bindings.get(name)
        if bindings:
            value = bindings[0].value
            if len(bindings) == 1 and isinstance(value, ast.Constant):
                return value
            return None
    return None


class TensorFacts:
    """Per-module cache; rules create one in ``check()``."""

    def __init__(self, facts: ModuleSyntax) -> None:
        self.facts = facts
        self.imports = facts.imports
        self.classes = facts.classes
        self.tree = facts.tree
        self._self_attrs: dict[int, dict[str, list[ast.expr | Kind]]] = {}

    # -- bindings -------------------------------------------------------------
    def table(self, scope: ast.AST) -> ScopeTable:
        return self.facts.scope_table(scope)

    def reaching(self, name: str, at: ast.AST) -> Reach | None:
        """Bindings of ``name`` in ``at``'s own scope that may reach ``at``:
        the last one before it, and the ones before that while they are
        conditional (inside an ``if``/loop/``try`` that does not hold ``at``).
        None when the scope does not bind the name before ``at``."""
        stmt = enclosing_statement(at) or at
        scope = enclosing_scope(at)
        table = self.table(scope)
        events = table.bindings.get(name)
        if not events:
            return None
        use = _pos(stmt)
        before = [b for b in events if b.pos < use]
        if not before:
            return None
        around = {id(a) for a in ancestors(at)}
        chosen: list[Binding] = []
        complete = False
        for binding in reversed(before):
            chosen.append(binding)
            if not self._conditional(binding, around, scope):
                complete = True
                break
        first = min(b.pos for b in chosen)
        mutated = any(first < p < use for p in table.mutations.get(name, ()))
        return Reach(chosen, mutated, complete)

    @staticmethod
    def _conditional(binding: Binding, around: set[int], scope: ast.AST) -> bool:
        nodes: list[ast.AST] = [binding.stmt] if binding.loop_iter is not None else []
        for anc in ancestors(binding.stmt):
            if anc is scope:
                break
            nodes.append(anc)
        return any(isinstance(n, _CONDITIONAL) and id(n) not in around for n in nodes)

    def values_of(self, expr: ast.expr, at: ast.AST) -> list[tuple[ast.expr, ast.AST]] | None:
        """What a name or ``self.attr`` was assigned: (value, where) pairs, or
        None when unknown (a parameter, a loop variable, an outer scope...)."""
        if isinstance(expr, ast.Name):
            reach = self.reaching(expr.id, at)
            if reach is None:
                return self._module_value(expr.id, at)
            if not reach.complete or any(b.value is None for b in reach.bindings):
                return None
            return [(b.value, b.stmt) for b in reach.bindings if b.value is not None]
        if isinstance(expr, ast.Attribute) and _is_self(expr.value):
            values = self._self_attr_values(at).get(expr.attr)
            if not values or any(isinstance(v, Kind) for v in values):
                return None
            return [(v, v) for v in values if isinstance(v, ast.expr)]
        return None

    def _module_value(self, name: str, at: ast.AST) -> list[tuple[ast.expr, ast.AST]] | None:
        scope = enclosing_scope(at)
        if isinstance(scope, ast.Module) or self.table(scope).bindings.get(name):
            return None  # module level already looked at, or bound here after the use
        events = self.table(self.tree).bindings.get(name, [])
        if len(events) == 1 and events[0].value is not None:
            return [(events[0].value, events[0].stmt)]
        return None

    def self_attribute_values(self, at: ast.AST) -> dict[str, list[ast.expr | Kind]]:
        """Every value assigned to ``self.<attr>`` in the methods of ``at``'s
        class, by attribute; ``Kind`` for registrations and unpacking."""
        return self._self_attr_values(at)

    def _self_attr_values(self, at: ast.AST) -> dict[str, list[ast.expr | Kind]]:
        cls = next((a for a in ancestors(at) if isinstance(a, ast.ClassDef)), None)
        if cls is None:
            return {}
        key = id(cls)
        if key not in self._self_attrs:
            found: defaultdict[str, list[ast.expr | Kind]] = defaultdict(list)
            for stmt in cls.body:
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in walk_scope(stmt):
                    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for target in targets:
                            if isinstance(target, ast.Attribute) and _is_self(target.value):
                                found[target.attr].append(node.value)
                            elif isinstance(target, (ast.Tuple, ast.List)):
                                for elt in target.elts:
                                    if isinstance(elt, ast.Attribute) and _is_self(elt.value):
                                        found[elt.attr].append(Kind.UNKNOWN)
                    elif isinstance(node, ast.Call):
                        _record_registration(node, found)
            self._self_attrs[key] = dict(found)
        return self._self_attrs[key]


def _record_registration(call: ast.Call, found: defaultdict[str, list[ast.expr | Kind]]) -> None:
    """``self.register_buffer("w", t)`` makes ``self.w`` a tensor;
    ``self.add_module("m", mod)`` a module."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and _is_self(func.value) and call.args):
        return
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return
    if func.attr in ("register_buffer", "register_parameter"):
        found[first.value].append(Kind.TENSOR)
    elif func.attr in ("add_module", "register_module"):
        found[first.value].append(Kind.MODULE)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def shadowed(tensors: TensorFacts, name: str, at: ast.AST) -> bool:
    """Is the builtin ``name`` rebound in a scope that ``at`` sees (a
    parameter called ``str``, ``from numpy import float``)?"""
    scope: ast.AST | None = enclosing_scope(at)
    while scope is not None:
        if tensors.table(scope).bindings.get(name):
            return True
        scope = outer_scope(scope)
    return False


def outer_scope(scope: ast.AST) -> ast.AST | None:
    """The next scope whose names ``scope`` sees (class bodies are skipped)."""
    for anc in ancestors(scope):
        if isinstance(anc, SCOPE_TYPES) and not isinstance(anc, ast.ClassDef):
            return anc
    return None
