"""What one module passes to the project's functions and methods: the
summary's call sites of *values that are built here* (a model:
``Net(...)``, ``make_model(...)``), for a parameter's value as the join over
its call sites (TT207 asks which model reaches ``validate(net)``).

Plain data, as in :mod:`torchtrap.project.summary`. A site is kept when it
passes a value this module builds (``make:<ref>``: the result of calling
the project name ``ref``, a class or a factory: the project tells which);
every other call of a project callee with arguments is named in
``ModuleSummary.passes_unknown`` so that a caller that passes something
else is never missed (callers that disagree: unknown). A method called on a
receiver whose class is not known here (``x.train(loader)``) is named in
``ModuleSummary.unknown_methods``: any class's method of that name may be
the callee.

Steps followed in a scope: a local name bound once (``net = Net();
fit(net)``), the module-level instance of a project class, ``obj.m(...)``
with ``obj = Cls(...)`` bound once, ``.to()``/``.cuda()`` chains. A value
whose mode the scope switches (``net.eval()``, ``net.train(False)``) or
hands to another call named for the mode (``set_eval(net)``) is unknown.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from torchtrap.facts.index import SCOPE_TYPES, walk_scope
from torchtrap.facts.tensors import MODULE_SELF_METHODS

# Calls named for the mode (as TT207 reads them): a helper that may switch it.
_MODE_WORDS = ("eval", "infer", "train", "mode")
# Cost bound: a module with more calls than this keeps no sites (a generated file).
_MAX_CALLS = 20_000


@dataclass(frozen=True)
class PassedArg:
    """One argument: its position (or keyword) and origin: ``make:<ref>``
    (the result of calling the project name ``ref``, bound to no other
    value on the way) or "" (anything else)."""

    index: int | None
    keyword: str | None
    origin: str


@dataclass(frozen=True)
class PassingSite:
    """A call of ``callee`` (absolute reference: ``pkg.train.fit``, a method
    ``pkg.solver.Solver.train``) that passes a value built here. ``args``:
    every argument; ``splat``: it also passes ``*args``/``**kwargs``."""

    callee: str
    line: int
    col: int
    args: tuple[PassedArg, ...]
    splat: bool = False


def _words(name: str) -> list[str]:
    return re.split(r"[._]", name.lower())


def _mode_named(dotted: str | None) -> bool:
    return any(
        w.startswith(_MODE_WORDS) and not w.startswith("model") for w in _words(dotted or "")
    )


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Scope:
    """The calls and single bindings of one function (or the module)."""

    def __init__(self, node: ast.AST) -> None:
        self.calls: list[ast.Call] = []
        # name -> what each binding gives (None: bound otherwise: a loop,
        # ``with``, unpacking, an import, a parameter, a nested def)
        self.bound: dict[str, list[ast.expr | None]] = {}
        self.inner: list[ast.AST] = []
        bind = self._bind
        for child in walk_scope(node):
            if isinstance(child, ast.Call):
                self.calls.append(child)
            elif isinstance(child, SCOPE_TYPES):
                self.inner.append(child)
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bind(child.name, None)
            elif isinstance(child, ast.Assign):
                single = len(child.targets) == 1 and isinstance(child.targets[0], ast.Name)
                for target in child.targets:
                    self._targets(target, child.value if single else None)
            elif isinstance(
                child, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)
            ):
                self._targets(child.target, None)
            elif isinstance(child, (ast.With, ast.AsyncWith)):
                for item in child.items:
                    if item.optional_vars is not None:
                        self._targets(item.optional_vars, None)
            elif isinstance(child, ast.NamedExpr):
                self._targets(child.target, None)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    bind((alias.asname or alias.name).split(".", 1)[0], None)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                bind(child.name, None)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                for name in child.names:
                    bind(name, None)
            elif isinstance(child, ast.Delete):
                for target in child.targets:
                    self._targets(target, None)
        args = getattr(node, "args", None)
        if isinstance(args, ast.arguments):
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None:
                    bind(arg.arg, None)

    def _bind(self, name: str, value: ast.expr | None) -> None:
        self.bound.setdefault(name, []).append(value)

    def _targets(self, target: ast.AST, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, value)
            return
        for name in ast.walk(target):
            if isinstance(name, ast.Name):
                self._bind(name.id, None)

    def single(self, name: str) -> ast.expr | None:
        """The value a name is bound to, when bound exactly once, by ``name = value``."""
        values = self.bound.get(name)
        return values[0] if values is not None and len(values) == 1 else None

    def switched(self, site: ast.Call) -> set[str]:
        """Root names whose mode this scope switches, or hands to a call
        named for the mode other than ``site``."""
        names: set[str] = set()
        for call in self.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("eval", "train"):
                given = call.args[0] if call.args else next((k.value for k in call.keywords), None)
                if func.attr == "eval" or not (
                    given is None or (isinstance(given, ast.Constant) and given.value is True)
                ):
                    root = _dotted(func.value)
                    if root:
                        names.add(root.split(".", 1)[0])
                continue
            if call is not site and _mode_named(_dotted(func)):
                for arg in (*call.args, *(k.value for k in call.keywords)):
                    root = _dotted(arg.value if isinstance(arg, ast.Starred) else arg)
                    if root:
                        names.add(root.split(".", 1)[0])
        return names


def passing_sites(
    tree: ast.Module,
    ref: Callable[[ast.AST], str | None],
    module_instances: Mapping[str, ast.expr],
    is_project: Callable[[str], bool],
) -> tuple[tuple[PassingSite, ...], tuple[str, ...], tuple[str, ...]]:
    """(sites passing a value built here, other project callees called with
    arguments, methods called on a receiver of unknown class)."""
    sites: list[PassingSite] = []
    unknown: set[str] = set()
    methods: set[str] = set()
    todo: list[ast.AST] = [tree]
    seen = 0
    while todo:
        scope = _Scope(todo.pop())
        todo.extend(scope.inner)
        seen += len(scope.calls)
        if seen > _MAX_CALLS:
            return (), (), ()
        for call in scope.calls:
            if not call.args and not call.keywords:
                continue
            callee = _callee(call.func, scope, ref, module_instances, is_project, methods)
            if callee is None:
                continue
            args, splat, made = _arguments(call, scope, ref, is_project)
            if made:
                sites.append(PassingSite(callee, call.lineno, call.col_offset, args, splat))
            else:
                unknown.add(callee)
    return tuple(sites), tuple(sorted(unknown)), tuple(sorted(methods))


def _callee(
    func: ast.expr,
    scope: _Scope,
    ref: Callable[[ast.AST], str | None],
    module_instances: Mapping[str, ast.expr],
    is_project: Callable[[str], bool],
    methods: set[str],
) -> str | None:
    if isinstance(func, ast.Name):
        if func.id in scope.bound:
            return None  # a local callable: not a project name
        found = ref(func)
        return found if found is not None and is_project(found) else None
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name):
        if receiver.id in ("self", "cls"):
            return None  # the class's own method: its file tells
        if receiver.id in scope.bound:
            made = scope.single(receiver.id)
            owner = made_by(made, ref, is_project) if made is not None else None
            if owner is not None:
                return f"{owner}.{func.attr}"
            methods.add(func.attr)
            return None
        if receiver.id in module_instances:
            owner = made_by(module_instances[receiver.id], ref, is_project)
            if owner is not None:
                return f"{owner}.{func.attr}"
    found = ref(func)
    if found is not None:
        return found if is_project(found) else None
    methods.add(func.attr)
    return None


def made_by(
    value: ast.expr, ref: Callable[[ast.AST], str | None], is_project: Callable[[str], bool]
) -> str | None:
    """``Net(...)`` (through ``.to()``/``.cuda()``): the callee's reference;
    None when not a call of a project name, or switched to eval on the way."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
    ):
        if value.func.attr in ("eval", "train"):
            return None  # the mode is set on the way: not ours to judge
        value = value.func.value
    if not isinstance(value, ast.Call):
        return None
    found = ref(value.func)
    return found if found is not None and is_project(found) else None


def _arguments(
    call: ast.Call,
    scope: _Scope,
    ref: Callable[[ast.AST], str | None],
    is_project: Callable[[str], bool],
) -> tuple[tuple[PassedArg, ...], bool, bool]:
    args: list[PassedArg] = []
    splat = False
    made_any = False
    switched: set[str] | None = None
    given: list[tuple[int | None, str | None, ast.expr]] = [
        *((i, None, a) for i, a in enumerate(call.args)),
        *((None, k.arg, k.value) for k in call.keywords),
    ]
    for index, keyword, value in given:
        if isinstance(value, ast.Starred) or (index is None and keyword is None):
            splat = True
            continue
        origin = ""
        made: str | None = None
        if isinstance(value, ast.Name):
            bound = scope.single(value.id)
            if bound is not None:
                if switched is None:
                    switched = scope.switched(call)
                if value.id not in switched:
                    made = made_by(bound, ref, is_project)
        elif isinstance(value, ast.Call):
            made = made_by(value, ref, is_project)
        if made is not None:
            origin = f"make:{made}"
            made_any = True
        args.append(PassedArg(index, keyword, origin))
    return tuple(args), splat, made_any
