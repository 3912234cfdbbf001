"""Is this expression a DataLoader, or an iterator over one? (TT208, TT210, TT211)

The DataLoader and iterator part of the value layer: rules ask
``ctx.values.dataloader(expr, at)`` / ``ctx.values.iterator(expr, at)``.

Evidence only, from one module: a ``DataLoader(...)`` call, a name or
``self.attr`` whose every binding is one (``self.loader = DataLoader(...)``),
an item of a dict or list of them (``loaders[phase]``), a local function
that returns one, a parameter annotated ``DataLoader``, or a
parameter whose every call site in this module passes one. An iterator is
``iter(loader)`` or ``loader.__iter__()`` of such a loader, or a name or
attribute whose every binding is one. Anything else is unknown (None).

``Loaders.parameter_arguments`` is the one place that answers "what do the
callers pass for this parameter"; the project index can extend it with
call sites in other files.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchtrap.facts.dataloaders import DATALOADER, DataLoaderCall
from torchtrap.facts.index import SCOPE_TYPES, ancestors, enclosing_scope, parent, walk_scope
from torchtrap.facts.tensors import (
    MODULE_SELF_METHODS,
    Binding,
    TensorFacts,
    outer_scope,
    shadowed,
)
from torchtrap.values.containers import appended_before, item_at
from torchtrap.values.memo import DepthMemo

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts

_MAX_DEPTH = 8
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class LoaderEvidence:
    """Why an expression is a DataLoader (or an iterator over one)."""

    calls: tuple[DataLoaderCall, ...]  # the DataLoader calls it may be; () for an annotation
    annotated: bool = False  # only known from a `: DataLoader` annotation

    def __add__(self, other: LoaderEvidence) -> LoaderEvidence:
        calls = self.calls + tuple(c for c in other.calls if c not in self.calls)
        return LoaderEvidence(calls, self.annotated or other.annotated)


_NONE = LoaderEvidence(())
# (value, where it is seen, depth) -> evidence or None
_Judge = Callable[[ast.expr, ast.AST, int], LoaderEvidence | None]


class Loaders:
    """Per-module cache; rules create one in ``check()``."""

    def __init__(self, facts: ModuleFacts, tensors: TensorFacts | None = None) -> None:
        self.facts = facts
        self.imports = facts.imports
        self.tensors = tensors or TensorFacts(facts)
        self._calls = {id(d.node): d for d in facts.dataloaders}
        # Answers by (expression, place, question); a cycle (a recursive
        # function's parameter) ends as unknown (None).
        self._memo: DepthMemo[LoaderEvidence | None] = DepthMemo(_MAX_DEPTH, None)

    # -- DataLoaders --------------------------------------------------------------
    def dataloader(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> LoaderEvidence | None:
        """Evidence that ``expr`` (seen at ``at``) is a torch DataLoader, else None."""
        return self._resolve(expr, at, depth, self._dataloader_value, self.dataloader)

    def _dataloader_value(self, value: ast.expr, at: ast.AST, depth: int) -> LoaderEvidence | None:
        if isinstance(value, ast.Call):
            call = self._calls.get(id(value))
            if call is not None:
                return LoaderEvidence((call,))
            return self._returned(value, depth)
        return None

    def _returned(self, call: ast.Call, depth: int) -> LoaderEvidence | None:
        """``make_loader()`` where every ``return`` of that module-level
        function (or ``self.make_loader()``, of that method of the class)
        gives a DataLoader."""
        function = self._local_function(call.func) or _own_method(call)
        if function is None:
            return None
        returns = [
            node.value
            for node in walk_scope(function)
            if isinstance(node, ast.Return) and node.value is not None
        ]
        if not returns:
            return None
        return self._all(
            [(value, value) for value in returns], depth, self._dataloader_value, self.dataloader
        )

    def _item(
        self, container: ast.expr, at: ast.AST, depth: int, key: ast.expr | None = None
    ) -> LoaderEvidence | None:
        """``loaders[phase]`` where every value of the dict or list (a
        literal or comprehension, or a name bound to one) is a DataLoader;
        a name bound to an empty ``{}``/``[]`` counts the values its items
        are assigned (``d["train"] = DataLoader(...)``, ``ls.append(...)``),
        only those under the same constant key when the use names one."""
        bound = self.bound_values(container, at, depth)
        if isinstance(container, (ast.Dict, ast.DictComp, ast.List, ast.Tuple)):
            bound = [(container, at)]
        if not isinstance(bound, list) or not bound:
            return None
        items: list[tuple[ast.expr, ast.AST]] = []
        for value, where in bound:
            if isinstance(value, ast.Dict) and value.values:
                items += [(v, where) for v in value.values]
            elif isinstance(value, ast.DictComp):
                items.append((value.value, value.value))
            elif isinstance(value, (ast.List, ast.Tuple)) and value.elts:
                items += [(v, where) for v in value.elts]
            elif _empty_container(value) and isinstance(container, ast.Name):
                ordered = appended_before(container.id, where, at, self.tensors, self.facts.index)
                chosen = item_at(ordered, key) if ordered is not None and key is not None else None
                if chosen is not None:
                    items.append(chosen)  # `ls.append(loader); ls[0]`: that one
                    continue
                filled = _filled_items(container.id, where, key)
                if not filled:
                    return None
                items += filled
            else:
                return None
        return self._all(items, depth, self._dataloader_value, self.dataloader)

    # -- iterators ------------------------------------------------------------------
    def iterator(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> LoaderEvidence | None:
        """Evidence that ``expr`` is an iterator over a torch DataLoader
        (``iter(loader)``, ``loader.__iter__()``, a name bound to one)."""
        return self._resolve(expr, at, depth, self._iterator_value, self.iterator)

    def iter_result(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> LoaderEvidence | None:
        """Evidence that ``expr`` is what ``iter(x)`` or ``x.__iter__()``
        returned, whatever ``x`` is: the DataLoader calls among the ``x``
        (none when unknown), None when some binding is something else."""
        return self._resolve(expr, at, depth, self._iter_result_value, self.iter_result)

    def _iter_source(self, value: ast.expr) -> ast.expr | None:
        """``x`` of ``iter(x)`` (the builtin, not shadowed) or ``x.__iter__()``."""
        if not isinstance(value, ast.Call) or value.keywords:
            return None
        func = value.func
        if (
            isinstance(func, ast.Name)
            and func.id == "iter"
            and len(value.args) == 1
            and not shadowed(self.tensors, "iter", value)
        ):
            return value.args[0]
        if isinstance(func, ast.Attribute) and func.attr == "__iter__" and not value.args:
            return func.value
        return None

    def _iter_result_value(self, value: ast.expr, at: ast.AST, depth: int) -> LoaderEvidence | None:
        source = self._iter_source(value)
        return None if source is None else self._iterated(source, value, depth)

    def _iterated(self, source: ast.expr, at: ast.AST, depth: int) -> LoaderEvidence | None:
        found = self.dataloader(source, at, depth + 1)
        if found is not None:
            return found
        if isinstance(source, ast.Call) and self.imports.qualname(source.func) is not None:
            return None  # an object of another library: its iterator is unknown
        return _NONE

    def _iterator_value(self, value: ast.expr, at: ast.AST, depth: int) -> LoaderEvidence | None:
        source = self._iter_source(value)
        return None if source is None else self.dataloader(source, value, depth + 1)

    # -- shared resolution ------------------------------------------------------------
    def _resolve(
        self, expr: ast.expr, at: ast.AST, depth: int, judge: _Judge, recurse: _Judge
    ) -> LoaderEvidence | None:
        key = (id(expr), id(at), getattr(recurse, "__name__", ""))
        return self._memo.answer(key, depth, self._resolve_once, expr, at, depth, judge, recurse)

    def _resolve_once(
        self, expr: ast.expr, at: ast.AST, depth: int, judge: _Judge, recurse: _Judge
    ) -> LoaderEvidence | None:
        direct = judge(expr, at, depth)
        if direct is not None:
            return direct
        if isinstance(expr, ast.IfExp):
            pairs = [(expr.body, at), (expr.orelse, at)]
            return self._all(pairs, depth, judge, recurse)
        if isinstance(expr, ast.NamedExpr):
            return recurse(expr.value, at, depth + 1)
        if isinstance(expr, ast.Subscript) and recurse == self.dataloader:
            return self._item(expr.value, at, depth, expr.slice)
        values = self.bound_values(expr, at, depth)
        if values is None:
            return None
        if isinstance(values, LoaderEvidence):
            # An annotated parameter is a DataLoader, never an iterator over one.
            return values if recurse == self.dataloader else None
        return self._all(values, depth, judge, recurse)

    def _all(
        self,
        values: list[tuple[ast.expr, ast.AST]],
        depth: int,
        judge: _Judge,
        recurse: _Judge,
    ) -> LoaderEvidence | None:
        if not values:
            return None
        total = _NONE
        for value, where in values:
            found = judge(value, where, depth + 1)
            if found is None and isinstance(value, (ast.Name, ast.Attribute, ast.IfExp)):
                found = recurse(value, where, depth + 1)
            if found is None:
                return None
            total = total + found
        return total

    def bound_values(
        self, expr: ast.expr, at: ast.AST, depth: int = 0
    ) -> list[tuple[ast.expr, ast.AST]] | LoaderEvidence | None:
        """Every value a name or ``self.attr`` can hold at ``at``, as
        (value, where) pairs; a parameter's call-site arguments; a
        LoaderEvidence for a parameter annotated ``DataLoader``; None when
        any binding is unknown (a loop target, an import, a ``global``)."""
        if isinstance(expr, ast.Name):
            return self._name_values(expr.id, at, depth)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            inside: ast.AST | None = at if expr.value.id == "self" else None
            if inside is None:
                inside = self._instance_class(expr.value, at, depth)
            if inside is None:
                return None
            values = self.tensors.self_attribute_values(inside).get(expr.attr)
            if not values or not all(isinstance(v, ast.expr) for v in values):
                return None
            # `self.loader = None` in __init__, set for real elsewhere: a placeholder.
            real = [v for v in values if not _is_none(v)]
            return [(v, v) for v in real if isinstance(v, ast.expr)] or None
        return None

    def _instance_class(self, name: ast.Name, at: ast.AST, depth: int) -> ast.AST | None:
        """A node inside the class ``name`` is an instance of when every
        binding of it is ``LocalClass(...)`` (``model = Net(); model.loader``)."""
        bound = self._name_values(name.id, at, depth + 1)
        if not isinstance(bound, list) or not bound:
            return None
        if depth > _MAX_DEPTH:
            return None
        found: set[int] = set()
        body: ast.AST | None = None
        for value, where in bound:
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in MODULE_SELF_METHODS
                and isinstance(value.func.value, ast.Name)
            ):
                # model = model.to(device): the module itself
                inner = self._instance_class(value.func.value, where, depth + 1)
                if inner is None:
                    return None
                cls = next(a for a in ancestors(inner) if isinstance(a, ast.ClassDef))
                found.add(id(cls))
                body = inner
                continue
            info = self.facts.classes.class_of_call(value) if isinstance(value, ast.Call) else None
            if info is None or not info.node.body:
                return None
            found.add(id(info.node))
            body = info.node.body[0]
        return body if len(found) == 1 else None

    def _name_values(
        self, name: str, at: ast.AST, depth: int
    ) -> list[tuple[ast.expr, ast.AST]] | LoaderEvidence | None:
        scope = enclosing_scope(at)
        while True:
            bindings = self.tensors.table(scope).bindings.get(name)
            if bindings:
                break
            outer = outer_scope(scope)
            if outer is None:
                return None
            scope = outer
        if scope is enclosing_scope(at):
            # Flow-sensitive where it is safe: the bindings that reach the use,
            # unless a later one may reach it again around a loop.
            reach = self.tensors.reaching(name, at)
            if reach is not None and reach.complete and not _rebound_in_loop(bindings, at, scope):
                bindings = reach.bindings
        out: list[tuple[ast.expr, ast.AST]] = []
        evidence: LoaderEvidence | None = None
        for binding in bindings:
            if binding.value is not None:
                out.append((binding.value, binding.stmt))
            elif isinstance(binding.stmt, _FUNCTIONS) and binding.stmt is scope:
                found = self._parameter(scope, name, depth)
                if found is None:
                    return None
                if isinstance(found, LoaderEvidence):
                    evidence = found if evidence is None else evidence + found
                else:
                    out.extend(found)
            else:
                return None  # a loop target, an import, `with ... as`, `global`
        if evidence is not None:
            return evidence if not out else None
        return out

    # -- parameters ---------------------------------------------------------------------
    def _parameter(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, depth: int
    ) -> list[tuple[ast.expr, ast.AST]] | LoaderEvidence | None:
        arg = next((a for a in _parameters(function) if a.arg == name), None)
        if arg is None:
            return None  # *args / **kwargs
        if arg.annotation is not None and self.imports.qualname(arg.annotation) == DATALOADER:
            return LoaderEvidence((), annotated=True)
        return self.parameter_arguments(function, name)

    def parameter_arguments(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
    ) -> list[tuple[ast.expr, ast.AST]] | None:
        """What every caller in this module passes for parameter ``name`` of
        ``function`` (a module-level function, or a method called on
        ``self``), as (argument, call) pairs; None when a caller is unknown:
        no call at all, the function used as a value, a decorator, ``*args``."""
        if function.decorator_list:
            return None
        owner = parent(function)
        calls = self._call_sites(function, owner)
        if not calls:
            return None
        params = _parameters(function)
        if isinstance(owner, ast.ClassDef):
            params = params[1:]  # self
        position = next((i for i, a in enumerate(params) if a.arg == name), None)
        out: list[tuple[ast.expr, ast.AST]] = []
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                kw.arg is None for kw in call.keywords
            ):
                return None
            value = next((kw.value for kw in call.keywords if kw.arg == name), None)
            if value is None and position is not None and position < len(call.args):
                value = call.args[position]
            if value is None:
                return None  # the default
            out.append((value, call))
        return out

    def _call_sites(self, function: ast.AST, owner: ast.AST | None) -> list[ast.Call] | None:
        name = getattr(function, "name", "")
        calls: list[ast.Call] = []
        if isinstance(owner, ast.Module):
            for node in self.facts.index.names(name):
                if not isinstance(node.ctx, ast.Load):
                    continue
                call = parent(node)
                if not (isinstance(call, ast.Call) and call.func is node):
                    return None  # used as a value: called from elsewhere
                calls.append(call)
            defined = [
                s
                for s in owner.body
                if isinstance(s, SCOPE_TYPES) and getattr(s, "name", "") == name
            ]
            return calls if len(defined) == 1 else None
        if isinstance(owner, ast.ClassDef) and name == "__init__":
            return self._constructions(owner)
        if isinstance(owner, ast.ClassDef):
            others = [
                c
                for c in self.facts.classes.classes.values()
                if c.node is not owner and name in c.methods
            ]
            if others:
                return None  # another class's method of that name
            for attribute in self.facts.index.attributes(name):
                call = parent(attribute)
                if not (isinstance(call, ast.Call) and call.func is attribute):
                    return None
                calls.append(call)
            return calls
        return None

    def _constructions(self, cls: ast.ClassDef) -> list[ast.Call] | None:
        """The ``Cls(...)`` calls in this module that run ``cls.__init__``;
        None when the class is used otherwise (a base class, passed as a
        value, defined twice), since its ``__init__`` may then run from
        elsewhere."""
        if not isinstance(parent(cls), ast.Module):
            return None
        defined = [c for c in self.facts.classes.classes.values() if c.node.name == cls.name]
        if len(defined) != 1:
            return None
        calls: list[ast.Call] = []
        for node in self.facts.index.names(cls.name):
            if not isinstance(node.ctx, ast.Load):
                continue
            call = parent(node)
            if not (isinstance(call, ast.Call) and call.func is node):
                return None  # a base class, an isinstance check, a factory table
            calls.append(call)
        return calls

    # -- helpers ----------------------------------------------------------------------------
    def _local_function(self, func: ast.expr) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        if not isinstance(func, ast.Name):
            return None
        found = [
            s
            for s in self.facts.tree.body
            if isinstance(s, (*_FUNCTIONS, ast.ClassDef)) and s.name == func.id
        ]
        if len(found) != 1 or not isinstance(found[0], _FUNCTIONS) or found[0].decorator_list:
            return None
        return found[0]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = function.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _empty_container(value: ast.expr) -> bool:
    """``{}``, ``[]``, ``dict()``, ``list()``."""
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.List):
        return not value.elts
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "list")
        and not value.args
        and not value.keywords
    )


def _filled_items(
    name: str, where: ast.AST, key: ast.expr | None
) -> list[tuple[ast.expr, ast.AST]]:
    """The values put into the container ``name`` in the scope of its
    binding ``where``: ``name[k] = v`` (under ``key`` when it and every
    ``k`` are constants) and ``name.append(v)``."""
    wanted = key.value if isinstance(key, ast.Constant) else None
    found: list[tuple[object, ast.expr, ast.AST]] = []
    for node in walk_scope(enclosing_scope(where)):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                ):
                    k = target.slice.value if isinstance(target.slice, ast.Constant) else ...
                    found.append((k, node.value, node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and len(node.args) == 1
        ):
            found.append((..., node.args[0], node))
    if wanted is not None and all(k is not ... for k, _, _ in found):
        found = [f for f in found if f[0] == wanted]
    return [(value, stmt) for _, value, stmt in found]


def _is_none(node: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _own_method(call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``self.name(...)`` calls, in the class the call is in
    (undecorated, defined once)."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return None
    cls = next((a for a in ancestors(call) if isinstance(a, ast.ClassDef)), None)
    if cls is None:
        return None
    found = [s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == func.attr]
    if len(found) != 1 or found[0].decorator_list:
        return None
    return found[0]


def _rebound_in_loop(bindings: list[Binding], at: ast.AST, scope: ast.AST) -> bool:
    """A binding after ``at`` inside a loop that also holds ``at``: it may
    reach ``at`` on the next iteration."""
    loops = [
        a
        for a in ancestors(at)
        if isinstance(a, (ast.For, ast.AsyncFor, ast.While))
        and any(s is scope for s in ancestors(a))
    ]
    if not loops:
        return False
    use = (getattr(at, "lineno", 0), getattr(at, "col_offset", 0))
    for binding in bindings:
        if binding.pos <= use:
            continue
        if any(any(x is loop for x in ancestors(binding.stmt)) for loop in loops):
            return True
        if any(binding.stmt is loop for loop in loops):
            return True  # the loop's own target
    return False
