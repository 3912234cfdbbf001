"""From syntax to constraints: one pass over each module.

Locals are flow-sensitive (every assignment makes a new version; branches
join; a loop joins its start with its end), so ``f = a; f(); f = b; f()``
calls ``a`` then ``b``. Globals, fields and elements are flow-insensitive.
Every function body is walked once, whether or not anything calls it, so a
library's code is analysed as much as a script's.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from torchtrap.core.objects import (
    ClassObj,
    ContainerObj,
    ExtAttrObj,
    ExtCallObj,
    ExternalObj,
    FuncObj,
    InstObj,
    ModuleObj,
    Obj,
    Site,
    SuperObj,
)
from torchtrap.core.program import Module, absolute
from torchtrap.core.scopes import (
    assigned_in_loop,
    lambdas_of,
    scope_of,
)
from torchtrap.core.solver import (
    ALL,
    HYDRA_MAIN,
    KEYS,
    NORMALISED,
    CallSite,
    Signature,
    Solver,
)
from torchtrap.facts.shapes import NormalisingSum, normalising_sum, same_dimension

Env = dict[str, frozenset[int]]
PLAIN_DECORATORS = {
    "staticmethod": "staticmethod",
    "classmethod": "classmethod",
    "property": "property",
}


@dataclass
class Scope:
    kind: str  # module, function, class
    obj: Obj  # ModuleObj, FuncObj or ClassObj
    qname: str
    parent: Scope | None
    locals: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    lambdas: dict[int, int] = field(default_factory=dict)

    @property
    def code_owner(self) -> Obj:
        """Whose code a call here is part of (class bodies run in their module)."""
        scope: Scope | None = self
        while scope is not None and scope.kind == "class":
            scope = scope.parent
        return scope.obj if scope is not None else self.obj


class Walker:
    def __init__(self, solver: Solver, module: Module, ctx: tuple[Site, ...] = ()) -> None:
        self.ctx = ctx
        self.solver = solver
        self.module = module
        self.mod: ModuleObj = module.obj
        self.loops: list[dict[str, int]] = []
        self.expr_nodes = solver.expr_nodes
        self.joins: dict[frozenset[int], int] = {}
        self.boxes: dict[int, ContainerObj] = {}  # a local's version -> the dict display it holds

    # -- entry ---------------------------------------------------------------------------

    def run(self) -> None:
        tree = self.module.tree
        names, _, _ = scope_of(tree)
        scope = Scope("module", self.mod, self.mod.name, None, names, lambdas=lambdas_of(tree))
        self.block(tree.body, scope, {})

    def site(self, node: ast.AST) -> Site:
        return Site(
            self.mod.name, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), self.ctx
        )

    def note(self, node: ast.AST, value: int) -> None:
        """Remember what an expression's node is, for the rules' queries."""
        if self.ctx:
            self.solver.ctx_nodes.setdefault(id(node), []).append(value)
        else:
            self.expr_nodes[id(node)] = value

    # -- names ---------------------------------------------------------------------------

    def join(self, nodes: frozenset[int]) -> int:
        if len(nodes) == 1:
            return next(iter(nodes))
        found = self.joins.get(nodes)
        if found is None:
            found = self.joins[nodes] = self.solver.node("join")
            for node in nodes:
                self.solver.edge(node, found)
        return found

    def cell(self, scope: Scope, name: str) -> int:
        """Every value a function's local ever holds (what closures read)."""
        return self.solver.key("cell", scope.obj, name)

    def global_node(self, name: str) -> int:
        return self.solver.key("g", self.mod.name, name)

    def load_name(self, name: str, scope: Scope, env: Env) -> int:
        if scope.kind != "module" and name in scope.globals:
            return self.global_node(name)
        if name in env and name not in scope.nonlocals:
            return self.join(env[name])
        if scope.kind == "function" and name in scope.locals:
            return self.cell(scope, name)
        if scope.kind == "module":
            return self.global_node(name)
        outer = scope.parent
        while outer is not None:
            if outer.kind == "function" and name in outer.locals:
                return self.cell(outer, name)
            if outer.kind == "module":
                return self.global_node(name)
            outer = outer.parent
        return self.global_node(name)

    def store_name(self, name: str, value: int, scope: Scope, env: Env) -> None:
        solver = self.solver
        if scope.kind != "module" and name in scope.globals:
            solver.edge(value, self.global_node(name))
            return
        if name in scope.nonlocals:
            outer = scope.parent
            while outer is not None and not (outer.kind == "function" and name in outer.locals):
                outer = outer.parent
            if outer is not None:
                solver.edge(value, self.cell(outer, name))
            return
        version = solver.node(name)
        solver.edge(value, version)
        env[name] = frozenset((version,))
        if scope.kind == "module":
            solver.edge(version, self.global_node(name))
        elif scope.kind == "class":
            assert isinstance(scope.obj, ClassObj)
            solver.edge(version, solver.field(scope.obj, name))
        elif name in scope.locals:
            solver.edge(version, self.cell(scope, name))

    # -- statements ----------------------------------------------------------------------

    def block(self, body: list[ast.stmt], scope: Scope, env: Env) -> bool:
        """Walk statements; False when the block cannot fall through."""
        return all(self.stmt(stmt, scope, env) for stmt in body)

    def stmt(self, node: ast.stmt, scope: Scope, env: Env) -> bool:  # noqa: C901
        solver = self.solver
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, scope, env)
        elif isinstance(node, ast.ClassDef):
            self.klass(node, scope, env)
        elif isinstance(node, ast.Assign):
            value = self.expr(node.value, scope, env)
            for target in node.targets:
                self.assign(target, value, scope, env, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value, scope, env), scope, env, node.value)
        elif isinstance(node, ast.AugAssign):
            value = self.expr(node.value, scope, env)
            current = self.expr(_as_load(node.target), scope, env)
            result = solver.node("augassign")
            solver.edge(current, result)  # a list stays the same list
            solver.edge(value, result, _containers_only, "containers")
            self.assign(node.target, result, scope, env, None)
        elif isinstance(node, ast.Expr):
            call = node.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "update"
                and len(call.args) == 1
                and isinstance(call.args[0], ast.Dict)
                and not call.keywords
            ):
                literal = call.args[0]
                keys = [self.const_key(k) if k is not None else None for k in literal.keys]
                values = [self.expr(v, scope, env) for v in literal.values]
                if None not in keys and self.strong_update(
                    call.func.value, dict(zip(keys, values, strict=False)), scope, env, call
                ):
                    return True
            self.expr(node.value, scope, env)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                value = self.expr(node.value, scope, env)
                if isinstance(scope.obj, FuncObj):
                    solver.edge(value, solver.ret(scope.obj))
            return False
        elif isinstance(node, ast.If):
            self.expr(node.test, scope, env)
            self.branches([node.body, node.orelse], scope, env)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            items = solver.iterate(
                self.expr(node.iter, scope, env), scope.code_owner, self.site(node)
            )
            self.loop(node, scope, env, lambda e: self.assign(node.target, items, scope, e, None))
        elif isinstance(node, ast.While):
            self.loop(node, scope, env, lambda e: self.expr(node.test, scope, e))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self.expr(item.context_expr, scope, env)
                if item.optional_vars is not None:
                    self.assign(
                        item.optional_vars, self.enter(value, scope, item), scope, env, None
                    )
            return self.block(node.body, scope, env)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.tryblock(node, scope, env)  # type: ignore[arg-type]
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                exc = self.expr(node.exc, scope, env)
                if not isinstance(node.exc, ast.Call):
                    solver.on(exc, lambda obj: self.raise_class(obj, scope, node))
            return False
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node, scope, env)
        elif isinstance(node, (ast.Break, ast.Continue)):
            if self.loops:
                for name, phi in self.loops[-1].items():
                    if name in env:
                        solver.edge(self.join(env[name]), phi)
            return False
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    env.pop(target.id, None)
        elif isinstance(node, ast.Assert):
            self.expr(node.test, scope, env)
        elif isinstance(node, ast.Match):
            subject = self.expr(node.subject, scope, env)
            bodies = []
            for case in node.cases:
                for sub in ast.walk(case.pattern):
                    if isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                        self.store_name(sub.name, subject, scope, env)
                bodies.append(case.body)
            self.branches(bodies + [[]], scope, env)
        return True

    def branches(self, bodies: list[list[ast.stmt]], scope: Scope, env: Env) -> None:
        outs: list[Env] = []
        for body in bodies:
            branch = dict(env)
            if self.block(body, scope, branch):
                outs.append(branch)
        self.merge(env, outs)

    @staticmethod
    def merge(env: Env, outs: list[Env]) -> None:
        if not outs:
            return  # nothing falls through; later code is unreachable
        names = set().union(*outs)
        env.clear()
        for name in names:
            versions: frozenset[int] = frozenset()
            for out in outs:
                versions |= out.get(name, frozenset())
            env[name] = versions

    def loop(
        self,
        node: ast.For | ast.AsyncFor | ast.While,
        scope: Scope,
        env: Env,
        head: Callable[[Env], object],
    ) -> None:
        solver = self.solver
        phis: dict[str, int] = {}
        for name in assigned_in_loop(node):  # the target and the body
            phis[name] = solver.node(f"phi {name}")
            if name in env:
                solver.edge(self.join(env[name]), phis[name])
                env[name] = frozenset((phis[name],))
        head(env)
        self.loops.append(phis)
        body = dict(env)
        if self.block(node.body, scope, body):
            for name, phi in phis.items():
                if name in body:
                    solver.edge(self.join(body[name]), phi)
        self.loops.pop()
        for name, phi in phis.items():
            if name in body or name in env:
                env[name] = frozenset((phi,))
        self.block(node.orelse, scope, env)

    def tryblock(self, node: ast.Try, scope: Scope, env: Env) -> None:
        before = dict(env)
        body = dict(env)
        falls = self.block(node.body, scope, body)
        entry = dict(before)
        self.merge(entry, [before, body])
        outs: list[Env] = []
        for handler in node.handlers:
            branch = dict(entry)
            if handler.type is not None:
                self.expr(handler.type, scope, branch)
            if self.block(handler.body, scope, branch):
                outs.append(branch)
        if falls and self.block(node.orelse, scope, body):
            outs.append(body)
        if outs:
            self.merge(env, outs)
        else:
            env.update(entry)
        self.block(node.finalbody, scope, env)

    def raise_class(self, obj: Obj, scope: Scope, node: ast.Raise) -> None:
        if isinstance(obj, ClassObj):
            self.solver.invoke(
                obj, CallSite(scope.code_owner, self.site(node), [], [], self.solver.node())
            )

    def enter(self, value: int, scope: Scope, item: ast.withitem) -> int:
        """What ``with value as x`` binds: ``__enter__``'s result for a
        project class, else the value itself (``open()``, a lock)."""
        solver = self.solver
        out = solver.node("with")

        def one(obj: Obj) -> None:
            if isinstance(obj, InstObj):
                cs = CallSite(scope.code_owner, self.site(item.context_expr), [], [], out)
                solver.call_method(obj, "__enter__", cs)
            else:
                solver.add(out, (obj,))

        solver.on(value, one)
        return out

    def imports(self, node: ast.Import | ast.ImportFrom, scope: Scope, env: Env) -> None:
        solver = self.solver
        program = solver.program
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    target = self.module_value(alias.name)
                    self.store_name(alias.asname, target, scope, env)
                else:
                    head = alias.name.split(".")[0]
                    self.store_name(head, self.module_value(head), scope, env)
            return
        base = absolute(self.mod, node.level, node.module)
        if base is None:
            return
        found = program.find(base, self.mod) if node.level == 0 else program.modules.get(base)
        for alias in node.names:
            if alias.name == "*":
                continue  # recorded for every module before the walk
            value = solver.node(f"import {alias.name}")
            if found is not None:
                sub = solver.module_obj(f"{found.obj.name}.{alias.name}")
                if sub is not None:
                    solver.add(value, (sub,))
                solver.edge(solver.key("g", found.obj.name, alias.name), value)
            else:
                solver.add(value, (solver.external(f"{base}.{alias.name}"),))
            self.store_name(alias.asname or alias.name, value, scope, env)

    def module_value(self, name: str) -> int:
        found = self.solver.program.find(name, self.mod)
        obj = found.obj if found is not None else self.solver.external(name)
        return self.solver.holding(obj)

    # -- definitions ---------------------------------------------------------------------

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope, env: Env
    ) -> None:
        kind = "function"
        decorators: list[ast.expr] = []
        for dec in node.decorator_list:
            name = dec.id if isinstance(dec, ast.Name) else None
            if name in PLAIN_DECORATORS and scope.kind == "class":
                kind = PLAIN_DECORATORS[name]
            elif isinstance(dec, ast.Attribute) and dec.attr in ("setter", "getter", "deleter"):
                kind = "property"
            else:
                decorators.append(dec)
        func = self.define(node, f"{scope.qname}.{node.name}", scope, env, kind)
        value = self.solver.holding(func)
        value = self.decorate(decorators, value, scope, env)
        self.store_name(node.name, value, scope, env)

    def define(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        qname: str,
        scope: Scope,
        env: Env,
        kind: str,
    ) -> FuncObj:
        solver = self.solver
        cls = scope.obj if isinstance(scope.obj, ClassObj) else None
        func = FuncObj(qname, node, self.mod, cls, kind, self.solver.generator(node))
        solver.functions.append(func)
        args = node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        sig = Signature(
            positional,
            args.vararg.arg if args.vararg else None,
            [a.arg for a in args.kwonlyargs],
            args.kwarg.arg if args.kwarg else None,
        )
        solver.signatures[func] = sig
        defaults: dict[str, int] = {}
        for name, value in zip(
            positional[len(positional) - len(args.defaults) :], args.defaults, strict=False
        ):
            defaults[name] = self.expr(value, scope, env)
        for arg, maybe in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            if maybe is not None:
                defaults[arg.arg] = self.expr(maybe, scope, env)
        solver.definitions[func] = (scope, defaults)
        self.walk_body(func, scope)
        return func

    def walk_body(self, func: FuncObj, scope: Scope) -> None:
        """Bind the parameters (defaults, ``*args``, ``**kwargs``) and walk
        the body once, for the definition or for one call site's copy."""
        solver = self.solver
        node = func.node
        sig = solver.signatures[func]
        for name, default in solver.definitions[func.origin][1].items():
            solver.edge(default, solver.param(func, name))
        if sig.vararg:
            solver.add(
                solver.param(func, sig.vararg), (solver.container("tuple", self.site(node)),)
            )
        if sig.kwarg:
            solver.add(solver.param(func, sig.kwarg), (solver.container("dict", self.site(node)),))
        names, declared_global, declared_nonlocal = solver.scope_names(node)
        params = sig.positional + sig.kwonly + [n for n in (sig.vararg, sig.kwarg) if n]
        inner = Scope(
            "function",
            func,
            func.qname,
            scope,
            names | set(params),
            declared_global,
            declared_nonlocal,
            solver.lambdas(node),
        )
        inner_env: Env = {}
        for name in params:
            inner_env[name] = frozenset((solver.param(func, name),))
            solver.edge(solver.param(func, name), self.cell(inner, name))
        if isinstance(node, ast.Lambda):
            solver.edge(self.expr(node.body, inner, inner_env), solver.ret(func))
        else:
            saved, self.loops = self.loops, []
            self.block(node.body, inner, inner_env)
            self.loops = saved

    def decorate(self, decorators: list[ast.expr], value: int, scope: Scope, env: Env) -> int:
        solver = self.solver
        for dec in reversed(decorators):
            dec_node = self.expr(dec, scope, env)
            out = solver.node("decorated")
            cs = CallSite(scope.code_owner, self.site(dec), [(value, False)], [], out)
            source = value

            def one(obj: Obj, cs: CallSite = cs, source: int = source, out: int = out) -> None:
                if isinstance(obj, (ExternalObj, ExtCallObj, ExtAttrObj)):
                    # A library decorator (torch.no_grad(), functools.wraps):
                    # the function itself is what callers reach.
                    if isinstance(obj, ExtCallObj) and obj.type_name in HYDRA_MAIN:
                        solver.on(source, functools.partial(solver.hydra_main, obj))
                    name = getattr(obj, "name", None) or getattr(obj, "qname", None)
                    if name:
                        solver.record(cs.caller, name)
                    solver.edge(source, out)
                else:
                    solver.invoke(obj, cs)

            solver.on(dec_node, one)
            value = out
        return value

    def klass(self, node: ast.ClassDef, scope: Scope, env: Env) -> None:
        solver = self.solver
        cls = ClassObj(f"{scope.qname}.{node.name}", node, self.mod)
        solver.classes.append(cls)
        solver.set_bases(cls, [self.expr(base, scope, env) for base in node.bases])
        for keyword in node.keywords:
            self.expr(keyword.value, scope, env)
        names, _, _ = scope_of(node)
        cls.defines = names
        cls.instance_attrs = _instance_attrs(node)
        if any(_dataclass_decorator(dec) for dec in node.decorator_list):
            cls.fields = [
                stmt.target.id
                for stmt in node.body
                if isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and "ClassVar" not in ast.unparse(stmt.annotation)
            ]
        inner = Scope("class", cls, cls.qname, scope, names, lambdas=lambdas_of(node))
        self.block(node.body, inner, {})
        value = self.decorate(list(node.decorator_list), solver.holding(cls), scope, env)
        self.store_name(node.name, value, scope, env)

    # -- assignment ----------------------------------------------------------------------

    def assign(
        self, target: ast.expr, value: int, scope: Scope, env: Env, source: ast.expr | None
    ) -> None:
        solver = self.solver
        if isinstance(target, ast.Name):
            self.store_name(target.id, value, scope, env)
            self.note(target, value)
            if isinstance(source, ast.Dict) and len(env.get(target.id, ())) == 1:
                box = next(iter(solver.pts[value]), None)
                if isinstance(box, ContainerObj):
                    self.boxes[next(iter(env[target.id]))] = box
        elif isinstance(target, ast.Subscript) and self.strong_update(
            target.value, {self.const_key(target.slice): value}, scope, env, target
        ):
            return
        elif isinstance(target, ast.Attribute):
            solver.store(self.expr(target.value, scope, env), target.attr, value)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, scope, env)
            key = self.const_key(target.slice)
            if key is None:
                solver.store_key(base, self.expr(target.slice, scope, env), value)
            else:
                solver.store_elem(base, key, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = target.elts
            if (
                isinstance(source, (ast.Tuple, ast.List))
                and len(source.elts) == len(items)
                and not any(isinstance(e, ast.Starred) for e in items + source.elts)
            ):
                for item, part in zip(items, source.elts, strict=False):
                    self.assign(item, self.expr_nodes.get(id(part), value), scope, env, part)
                return
            stars = [i for i, e in enumerate(items) if isinstance(e, ast.Starred)]
            if (
                isinstance(source, (ast.Tuple, ast.List))
                and len(stars) == 1
                and not any(isinstance(e, ast.Starred) for e in source.elts)
                and len(source.elts) >= len(items) - 1
            ):
                star = stars[0]
                tail = len(items) - star - 1
                middle = source.elts[star : len(source.elts) - tail]
                for item, part in zip(items[:star], source.elts[:star], strict=False):
                    self.assign(item, self.expr_nodes.get(id(part), value), scope, env, part)
                for item, part in zip(
                    items[star + 1 :], source.elts[len(source.elts) - tail :], strict=False
                ):
                    self.assign(item, self.expr_nodes.get(id(part), value), scope, env, part)
                rest = solver.container("list", self.site(items[star]))
                for index, part in enumerate(middle):
                    solver.store_elem(
                        solver.holding(rest), index, self.expr_nodes.get(id(part), value)
                    )
                self.assign(items[star].value, solver.holding(rest), scope, env, None)  # type: ignore[attr-defined]
                return
            for index, item in enumerate(items):
                if isinstance(item, ast.Starred):
                    rest = solver.container("list", self.site(item))
                    solver.edge(
                        solver.iterate(value, scope.code_owner, self.site(item)),
                        solver.elem(rest, ALL),
                    )
                    self.assign(item.value, solver.holding(rest), scope, env, None)
                    continue
                slot = solver.node("unpack")
                solver.load_elem(value, index, slot)
                self.assign(item, slot, scope, env, None)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, scope, env, None)

    def strong_update(
        self, base: ast.expr, stores: dict[object, int], scope: Scope, env: Env, node: ast.AST
    ) -> bool:
        """``d[k] = v`` on a local that holds one dict display: later reads
        of ``d[k]`` see ``v`` alone. The dict is copied under a new site
        without the old values of those keys (aliases of the old dict get
        the new values too, so nothing is lost for them)."""
        if not isinstance(base, ast.Name) or None in stores:
            return False
        versions = env.get(base.id, frozenset())
        old = self.boxes.get(next(iter(versions))) if len(versions) == 1 else None
        if old is None:
            return False
        solver = self.solver
        new = solver.container("dict", self.site(node), "update")
        for key, value in stores.items():
            solver.put(old, key, value)
            solver.put(new, key, value)
        for key in list(solver.box_keys.get(old, ())):
            if key not in stores and key != ALL:
                solver.edge(solver.elem(old, key), solver.elem(new, key))
                if key != KEYS:
                    solver.edge(solver.elem(old, key), solver.elem(new, ALL))
        holder = solver.holding(new)
        self.store_name(base.id, holder, scope, env)
        self.boxes[next(iter(env[base.id]))] = new
        self.note(base, holder)
        return True

    @staticmethod
    def const_key(node: ast.expr) -> object | None:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (str, int))
            and not isinstance(node.value, bool)
        ):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
        ):
            return None
        return None

    # -- expressions ---------------------------------------------------------------------

    def expr(self, node: ast.expr, scope: Scope, env: Env) -> int:
        found = self._expr(node, scope, env)
        self.note(node, found)
        return found

    def _expr(self, node: ast.expr, scope: Scope, env: Env) -> int:  # noqa: C901
        solver = self.solver
        if isinstance(node, ast.Name):
            return self.load_name(node.id, scope, env)
        if isinstance(node, ast.Constant):
            value = node.value
            small = not isinstance(value, str) or len(value) <= 200
            if small and (isinstance(value, (str, int, float, bool)) or value is None):
                return solver.const(value)
            return solver.node("const")
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, scope, env)
            out = solver.node(f".{node.attr}")
            solver.load(base, node.attr, out)
            return out
        if isinstance(node, ast.Call):
            return self.call(node, scope, env)
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value, scope, env)
            out = solver.node("[]")
            if isinstance(node.slice, ast.Slice):
                self.expr(node.slice, scope, env)
                self.slice(base, node.slice, out, node)
                return out
            key = self.const_key(node.slice)
            index = self.expr(node.slice, scope, env)
            cs = CallSite(scope.code_owner, self.site(node), [(index, False)], [], out)
            if key is None:
                solver.load_key(base, index, out, cs)
            else:
                solver.load_elem(base, key, out, cs)
            return out
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
            box = solver.container(kind, self.site(node))
            holder = solver.holding(box)
            for index, item in enumerate(node.elts):
                if isinstance(item, ast.Starred):
                    items = solver.iterate(
                        self.expr(item.value, scope, env), scope.code_owner, self.site(item)
                    )
                    solver.put(box, ALL, items)
                else:
                    solver.put(box, index, self.expr(item, scope, env))
            return holder
        if isinstance(node, ast.Dict):
            box = solver.container("dict", self.site(node))
            holder = solver.holding(box)
            for key_node, value_node in zip(node.keys, node.values, strict=False):
                value = self.expr(value_node, scope, env)
                if key_node is None:
                    solver.on(value, functools.partial(solver.merge, box=box))
                    continue
                key = self.const_key(key_node)
                solver.edge(self.expr(key_node, scope, env), solver.elem(box, KEYS))
                solver.put(box, ALL if key is None else key, value)
            return holder
        if isinstance(node, ast.Lambda):
            number = scope.lambdas.get(id(node), 0)
            func = self.define(node, f"{scope.qname}.<lambda{number}>", scope, env, "function")
            return solver.holding(func)
        if isinstance(node, ast.IfExp):
            self.expr(node.test, scope, env)
            return self.join(
                frozenset((self.expr(node.body, scope, env), self.expr(node.orelse, scope, env)))
            )
        if isinstance(node, ast.BoolOp):
            return self.join(frozenset(self.expr(v, scope, env) for v in node.values))
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value, scope, env)
            self.store_name(node.target.id, value, scope, env)
            return value
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(node, scope, env)
        if isinstance(node, ast.Await):
            return self.expr(node.value, scope, env)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            if node.value is not None:
                value = self.expr(node.value, scope, env)
                if isinstance(scope.obj, FuncObj):
                    if isinstance(node, ast.YieldFrom):
                        value = solver.iterate(value, scope.code_owner, self.site(node))
                    solver.edge(value, solver.yields(scope.obj))
            return solver.node("sent")
        if isinstance(node, ast.BinOp):
            left = self.expr(node.left, scope, env)
            right = self.expr(node.right, scope, env)
            out = solver.node("binop")
            if isinstance(node.op, ast.Add):
                solver.edge(left, out, _containers_only, "containers")
                solver.edge(right, out, _containers_only, "containers")
            parts = normalising_sum(node)
            if parts is not None:
                solver.add(out, (self.normalisation(node, parts, scope, env),))
            return out
        if isinstance(node, ast.Starred):
            return self.expr(node.value, scope, env)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, scope, env)
        return solver.node(type(node).__name__)

    def normalisation(
        self, node: ast.BinOp, parts: NormalisingSum, scope: Scope, env: Env
    ) -> ExtCallObj:
        """``y / y.sum(d, keepdim=True)``: the one arithmetic result the model
        keeps (a probability for the rules). Its dimensions, when spelled
        differently (``torch.sum(y, dim).unsqueeze(1)``), and the function
        form's callee are kept as arguments for the question to judge."""
        args: list[int] = []
        if not same_dimension(parts.summed, parts.kept):
            dims = (parts.summed, parts.kept)
            if not all(isinstance(d, (ast.Name, ast.Constant)) for d in dims):
                args = [self.solver.node("dim"), self.solver.node("dim")]  # judged unknown
            else:
                args = [self.expr(d, scope, env) for d in dims]
        kwargs = {"sum": self.expr(parts.call.func, scope, env)} if parts.function_form else {}
        site = self.site(node)
        return self.solver.obj(  # type: ignore[return-value]
            ("normalised", site),
            lambda: ExtCallObj(self.solver.external(NORMALISED), site, args, kwargs),
        )

    def slice(self, base: int, bounds: ast.Slice, out: int, node: ast.AST) -> None:
        """``ls[1:3]``: a new list whose element 0 is ``ls[1]``; without
        constant bounds, the same elements at unknown places."""
        solver = self.solver
        lower = self.const_key(bounds.lower) if bounds.lower is not None else 0
        upper = self.const_key(bounds.upper) if bounds.upper is not None else None
        plain = (
            bounds.step is None
            and isinstance(lower, int)
            and lower >= 0
            and (upper is None or isinstance(upper, int))
        )
        result = solver.container("list", self.site(node), "slice")

        def one(obj: Obj) -> None:
            if not isinstance(obj, ContainerObj):
                if isinstance(obj, (ExtCallObj, ExtAttrObj)):
                    solver.add(out, (obj,))
                return
            solver.edge(solver.elem(obj, ALL), solver.elem(result, ALL))
            solver.edge(solver.elem(obj, "?"), solver.elem(result, "?"))
            for key in list(solver.box_keys.get(obj, ())):
                if not isinstance(key, int) or key == ALL:
                    continue
                if plain and key >= lower and (upper is None or key < upper):  # type: ignore[operator]
                    solver.edge(solver.elem(obj, key), solver.elem(result, key - lower))  # type: ignore[operator]
                elif not plain:
                    solver.edge(solver.elem(obj, key), solver.elem(result, "?"))

        solver.on(base, one)
        solver.add(out, (result,))

    def comprehension(
        self,
        node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
        scope: Scope,
        env: Env,
    ) -> int:
        solver = self.solver
        inner = dict(env)
        for gen in node.generators:
            items = solver.iterate(
                self.expr(gen.iter, scope, inner), scope.code_owner, self.site(gen.iter)
            )
            self.assign(gen.target, items, scope, inner, None)
            for test in gen.ifs:
                self.expr(test, scope, inner)
        kind = {
            ast.ListComp: "list",
            ast.SetComp: "set",
            ast.GeneratorExp: "list",
            ast.DictComp: "dict",
        }[type(node)]
        box = solver.container(kind, self.site(node))
        if isinstance(node, ast.DictComp):
            solver.edge(self.expr(node.key, scope, inner), solver.elem(box, KEYS))
            value = self.expr(node.value, scope, inner)
        else:
            value = self.expr(node.elt, scope, inner)
        solver.edge(value, solver.elem(box, ALL))
        solver.edge(value, solver.elem(box, "?"))
        return solver.holding(box)

    def call(self, node: ast.Call, scope: Scope, env: Env) -> int:
        solver = self.solver
        out = solver.node("call")
        func = node.func
        if isinstance(func, ast.Name) and func.id == "super" and "super" not in env:
            return self.super_call(node, scope, env, out)
        callee = self.expr(func, scope, env)
        args = [(self.expr(a, scope, env), isinstance(a, ast.Starred)) for a in node.args]
        kwargs = [(k.arg, self.expr(k.value, scope, env)) for k in node.keywords]
        solver.call(callee, CallSite(scope.code_owner, self.site(node), args, kwargs, out))
        return out

    def super_call(self, node: ast.Call, scope: Scope, env: Env, out: int) -> int:
        solver = self.solver
        for arg in node.args:
            self.expr(arg, scope, env)
        owner: Scope | None = scope
        while owner is not None and owner.kind != "function":
            owner = owner.parent
        if owner is None or not isinstance(owner.obj, FuncObj) or owner.parent is None:
            return out
        cls = owner.parent.obj
        func = owner.obj
        params = solver.signatures[func].positional
        if not isinstance(cls, ClassObj) or not params:
            return out
        first = solver.param(func, params[0])
        solver.on(
            first,
            lambda obj: solver.add(
                out, (solver.obj(("super", cls, obj), lambda: SuperObj(cls, obj)),)
            ),
        )
        return out


DATACLASS_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable", "attrs", "s"})


def _dataclass_decorator(dec: ast.expr) -> bool:
    """``@dataclass``, ``@dataclasses.dataclass(...)``, attrs' ``@define``:
    the class gets an ``__init__`` that stores its fields."""
    if isinstance(dec, ast.Call):
        dec = dec.func
    name = (
        dec.id if isinstance(dec, ast.Name) else dec.attr if isinstance(dec, ast.Attribute) else ""
    )
    return name in DATACLASS_DECORATORS and (name != "s" or isinstance(dec, ast.Attribute))


def _instance_attrs(node: ast.ClassDef) -> set[str]:
    known = node.__dict__.get("_tt_instance_attrs")
    if known is None:
        known = node.__dict__["_tt_instance_attrs"] = _find_instance_attrs(node)
    return known


def _find_instance_attrs(node: ast.ClassDef) -> set[str]:
    found: set[str] = set()
    for method in node.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.args.args:
            me = method.args.args[0].arg
            for sub in ast.walk(method):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == me
                ):
                    found.add(sub.attr)
    return found


def _containers_only(obj: Obj) -> tuple[Obj, ...]:
    return (obj,) if isinstance(obj, ContainerObj) else ()


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    return target
