"""What one module passes to the project's functions and methods: the
summary's call sites of *values that are built here* (a model:
``Net(...)``, ``make_model(...)``), for a parameter's value as the join over
its call sites (TT207 asks which model reaches ``validate(net)``).

Plain data, as in :mod:`torchtrap.project.summary`. A site is kept when a
statement calls a project name and passes a value built in the module
(``make:<ref>``: the result of calling the project name ``ref``, a class or
a factory: the project tells which), in modules that look like drivers
(:data:`DRIVER_WORDS`). Every call is counted by name (``ModuleSummary.called``:
``name(x)`` or ``<anything>.name(x)`` with an argument): a parameter's value
is known only when every call of the function's name in the project is a
kept site, so that a caller passing something else (callers that disagree),
a call nested in an expression, or a method of the same name on another
class all make it unknown. Cheap on purpose: the count reads the calls the
lint's node index already holds, the sites a walk over statements.

Steps followed in a scope (the module, a top-level function, a method of a
top-level class): a local name bound once by ``name = value`` (``net =
Net(); fit(net)``), ``obj.m(...)`` with ``obj = Cls(...)`` bound once or a
module-level instance, ``.to()``/``.cuda()`` chains. A value whose mode the
scope may switch (a line naming it with ``eval``, ``train(...)``, ``infer``
or ``mode``, other than the call itself) is unknown, and so is a name
assigned by a walrus anywhere in the scope.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from torchtrap.facts.index import block_statements
from torchtrap.facts.tensors import MODULE_SELF_METHODS

# Modules whose call sites are kept: scripts and drivers, where models are
# built and handed to training and evaluation code (a cost gate: a site not
# kept only makes the parameter unknown).
DRIVER_WORDS = ("__main__", "def main(")


def is_driver(text: str) -> bool:
    return any(word in text for word in DRIVER_WORDS)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class PassedArg:
    """One argument: its position (or keyword) and origin: ``make:<ref>``
    (the result of calling the project name ``ref``) or "" (anything else)."""

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


def called_names(calls: Iterable[ast.AST]) -> tuple[tuple[str, int], ...]:
    """How often each name is called with an argument: ``f(x)``,
    ``obj.m(x)`` (the attribute's name, whatever the receiver)."""
    counts: Counter[str] = Counter()
    for call in calls:
        if not isinstance(call, ast.Call) or not (call.args or call.keywords):
            continue
        func = call.func
        if func.__class__ is ast.Attribute:
            counts[func.attr] += 1
        elif func.__class__ is ast.Name:
            counts[func.id] += 1
    return tuple(sorted(counts.items()))


class _Scope:
    """The statement-level calls and bindings of one function (or the module)."""

    def __init__(
        self, body: list[ast.stmt], lines: list[str], start: int, args: ast.arguments | None
    ) -> None:
        self.start = start  # the line number of lines[0]
        self.qual = ""  # "fit", "Trainer.fit"; "" for the module
        self.params = _parameters(args) if args is not None else {}
        self.mode_lines: list[int] = []
        self._walrus: list[str] | None = None
        self.calls: list[ast.Call] = []
        self.bound: dict[str, list[ast.expr | None]] = {}
        self.lines = lines
        for stmt in block_statements(body):
            if isinstance(stmt, ast.Assign):
                single = len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                for target in stmt.targets:
                    self._targets(target, stmt.value if single else None)
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                self._targets(stmt.target, None)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        self._targets(item.optional_vars, None)
            elif isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                self._bind(stmt.name, None)
                continue
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)) and args is not None:
                for alias in stmt.names:  # a function's own import shadows the module's
                    self._bind((alias.asname or alias.name).split(".", 1)[0], None)
            elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
                for name in stmt.names:
                    self._bind(name, None)
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    self._targets(target, None)
            value = getattr(stmt, "value", None)
            if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return)) and isinstance(
                value, ast.Call
            ):
                self.calls.append(value)
        if args is not None:
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None:
                    self._bind(arg.arg, None)

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
        if values is None or len(values) != 1:
            return None
        if self._walrus is None:
            self._walrus = [line for line in self.lines if ":=" in line]
        if any(name in line for line in self._walrus):
            return None  # may also be bound inside an expression
        return values[0]

    def switched(self, name: str, site: ast.Call) -> bool:
        """May this scope switch the mode of ``name``: a line (other than
        the site's) that names it with a mode word."""
        first, last = site.lineno, site.end_lineno or site.lineno
        word: re.Pattern[str] | None = None
        end = self.start + len(self.lines)
        for number in self.mode_lines:
            if not self.start <= number < end or first <= number <= last:
                continue
            line = self.lines[number - self.start]
            if name not in line:
                continue
            word = word or re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
            if word.search(line):
                return True
        return False


def _mode_lines(text: str) -> list[int]:
    """Line numbers holding a mode word (``eval``, ``infer``, ``mode`` but
    not ``model``, ``.train(<not True>)``): plain string scans, a superset."""
    found: set[int] = set()
    for word in ("eval", "infer", "mode", ".train("):
        at = text.find(word)
        while at != -1:
            after = text[at + len(word) : at + len(word) + 4]
            if not (word == "mode" and after[:1] == "l") and not (
                word == ".train(" and (after[:1] == ")" or after == "True")
            ):
                found.add(text.count("\n", 0, at) + 1)
            at = text.find(word, at + 1)
    return sorted(found)


def passing_sites(
    tree: ast.Module,
    lines: list[str],
    ref: Callable[[ast.AST], str | None],
    module_instances: Mapping[str, ast.expr],
    is_project: Callable[[str], bool],
) -> tuple[PassingSite, ...]:
    """The statement-level calls that pass a value built in the module."""
    sites: list[PassingSite] = []
    mode_lines = _mode_lines("\n".join(lines))
    for body, args, first, last, qual in _scopes(tree):
        scope = _Scope(body, lines[first - 1 : last], first, args)
        scope.qual = qual
        scope.mode_lines = mode_lines
        for call in scope.calls:
            if not call.args and not call.keywords:
                continue
            callee = _callee(call.func, scope, ref, module_instances, is_project)
            if callee is None:
                continue
            passed, splat, made = _arguments(call, scope, ref, is_project)
            if made:
                sites.append(PassingSite(callee, call.lineno, call.col_offset, passed, splat))
    return tuple(sites)


def _scopes(
    tree: ast.Module,
) -> Iterator[tuple[list[ast.stmt], ast.arguments | None, int, int, str]]:
    """(body, parameters, first line, last line, qualified name): the
    module (""), its top-level functions and the methods of its top-level
    classes (undecorated ones only get a name: a parameter of a static
    method or a property is not followed)."""
    end = max((getattr(s, "end_lineno", 0) or 0 for s in tree.body), default=0)
    yield tree.body, None, 1, end, ""
    for stmt in tree.body:
        methods: list[ast.stmt] = [stmt]
        if isinstance(stmt, ast.ClassDef):
            methods = list(stmt.body)
        for fn in methods:
            if isinstance(fn, _FUNCTIONS):
                qual = fn.name
                if isinstance(stmt, ast.ClassDef):
                    first = fn.args.args[0].arg if fn.args.args else ""
                    plain = not fn.decorator_list and first == "self"
                    qual = f"{stmt.name}.{fn.name}" if plain else ""
                yield fn.body, fn.args, fn.lineno, fn.end_lineno or fn.lineno, qual


def _parameters(args: ast.arguments) -> dict[str, str]:
    """Each parameter's handle in a ``param:`` origin: ``<index>:<name>``
    (the index counts from the first positional parameter, ``self``
    included; empty for keyword-only)."""
    found: dict[str, str] = {}
    for index, arg in enumerate((*args.posonlyargs, *args.args)):
        if arg.arg not in ("self", "cls"):  # the receiver is not a passed value
            found[arg.arg] = f"{index}:{arg.arg}"
    for arg in args.kwonlyargs:
        found[arg.arg] = f":{arg.arg}"
    return found


def _callee(
    func: ast.expr,
    scope: _Scope,
    ref: Callable[[ast.AST], str | None],
    module_instances: Mapping[str, ast.expr],
    is_project: Callable[[str], bool],
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
            return f"{owner}.{func.attr}" if owner is not None else None
        if receiver.id in module_instances:
            owner = made_by(module_instances[receiver.id], ref, is_project)
            if owner is not None:
                return f"{owner}.{func.attr}"
    found = ref(func)
    return found if found is not None and is_project(found) else None


def made_by(
    value: ast.expr, ref: Callable[[ast.AST], str | None], is_project: Callable[[str], bool]
) -> str | None:
    """``Net(...)`` (through ``.to()``/``.cuda()``): the callee's reference;
    None when not a call of a project name, or its mode is set on the way."""
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
    given: list[tuple[int | None, str | None, ast.expr]] = [
        *((i, None, a) for i, a in enumerate(call.args)),
        *((None, k.arg, k.value) for k in call.keywords),
    ]
    for index, keyword, value in given:
        if isinstance(value, ast.Starred) or (index is None and keyword is None):
            splat = True
            continue
        made: str | None = None
        origin = ""
        if isinstance(value, ast.Name):
            bound = scope.single(value.id)
            if bound is not None and not scope.switched(value.id, call):
                made = made_by(bound, ref, is_project)
            elif (
                scope.qual
                and value.id in scope.params
                and scope.bound.get(value.id) == [None]
                and not scope.switched(value.id, call)
            ):
                # The caller's own parameter, never rebound nor switched here:
                # what reaches it is what its callers pass (`fit(model)` calling
                # `evaluate(model, loader)` each epoch).
                origin = f"param:{scope.qual}:{scope.params[value.id]}"
        elif isinstance(value, ast.Call):
            made = made_by(value, ref, is_project)
        if made is not None:
            origin = f"make:{made}"
        if origin:
            made_any = True
        args.append(PassedArg(index, keyword, origin))
    return tuple(args), splat, made_any
