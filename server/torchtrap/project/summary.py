"""What one module tells the rest of the project: plain, picklable data.

A :class:`ModuleSummary` is computed from the parse (and the shared
:class:`~torchtrap.facts.ModuleFacts`) that linting the file already paid
for; it never holds an ``ast`` node, so it can be cached on disk, sent to
worker processes and kept for thousands of files. Names in a summary are
*absolute dotted references* ("pkg.datasets.Noisy"): relative imports are
resolved here, re-exports and other files by :class:`~torchtrap.project.Project`.

Bump :data:`SUMMARY_VERSION` whenever a field changes meaning: the cache
keys on it.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.devices import Cuda, literal_cuda
from torchtrap.facts.generators import RESEED_METHODS, setattr_name
from torchtrap.facts.imports import ImportTable, canonical, dotted_name
from torchtrap.facts.index import block_statements, parent, walk
from torchtrap.facts.modules import TRAIN_MODE_LAYERS, holds_only_buffers, inert_layer
from torchtrap.facts.tensors import TENSOR_ANNOTATIONS, TensorFacts
from torchtrap.facts.workers import pins_fork
from torchtrap.findings import Range
from torchtrap.project.passing import (
    PassingSite,
    called_names,
    is_driver,
    made_by,
    passing_sites,
)
from torchtrap.project.sys_path import sys_path_folders
from torchtrap.source import SourceText

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts

# 2: ModuleSummary.pins_fork, ClassFact.train_layers; a module without a
# name refers to its own definitions by its key (module_key), not bare
# 3: returns and forward outputs follow a local name (`out = self.net(x); return out`);
# where results are kept, one call site per callee passing nothing tracked (args ());
# ModuleSummary.constants (module-level CUDA devices); FunctionFact.elements
# 4: worker_init_fn effects record the dataset methods it calls ("name()")
# 5: LoaderFact.dataset follows the reaching bindings the value layer uses
# (flow-sensitive: the binding before the use, not the first after it)
# 6: FunctionFact.annotated (the return annotation: `-> Tensor`, `-> tuple[Tensor, ...]`),
# FunctionFact.makes, ModuleSummary.passing / called
# 7: ClassFact.buffers_only (a feature extractor with constant buffers, TT104)
# 9: ModuleSummary.sys_paths (folders the module puts on sys.path)
SUMMARY_VERSION = 9

# torch.utils.data wrappers whose first argument is the dataset they wrap.
_WRAPPERS = frozenset({"Subset", "ConcatDataset", "ChainDataset", "StackDataset"})
# The DataLoader arguments a summary keeps the text of.
_KEPT_ARGUMENTS = (
    "num_workers",
    "worker_init_fn",
    "collate_fn",
    "persistent_workers",
    "generator",
    "multiprocessing_context",
)
_PROBABILITY_FUNCTIONS = {
    "torch.sigmoid": "sigmoid",
    "torch.softmax": "softmax",
    "torch.nn.functional.sigmoid": "sigmoid",
    "torch.nn.functional.softmax": "softmax",
    "torch.special.expit": "sigmoid",
    "torch.special.softmax": "softmax",
}
_PROBABILITY_METHODS = frozenset({"sigmoid", "softmax"})
_PROBABILITY_LAYERS = {"torch.nn.Sigmoid": "sigmoid", "torch.nn.Softmax": "softmax"}
_CLAMPS = frozenset({"clamp", "clip", "clamp_min"})
# The torch.nn layers a summary records (ClassFact.layers): the ones rules ask about.
_LAYER_WORDS = ("Dropout", "BatchNorm", "Sigmoid", "Softmax")
_RETURN_WORDS = ("sigmoid", "softmax", "clamp", "clip")
_SEEDS_WORKERS = ("seed_everything",)
# Call sites whose arguments are call results are kept for modules that
# mention these (a cost gate: walking every call of every module is not free).
_RESULT_WORDS = ("igmoid", "oftmax", "loss")
# The kind of an argument a summary does not track (kept where ``results``:
# a parameter's callers may disagree).
UNTRACKED = "unknown"
# References that are never project code.
_FOREIGN = ("torch.", "numpy.", "math.", "builtins.", "os.", "sys.", "typing.")


@dataclass(frozen=True)
class Span:
    """Where something is: 1-based lines, 0-based code-point columns."""

    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def of(cls, rng: Range) -> Span:
        return cls(rng.start.line, rng.start.column, rng.end.line, rng.end.column)

    def range(self) -> Range:
        return Range.of(self.line, self.col, self.end_line, self.end_col)


@dataclass(frozen=True)
class LoaderFact:
    """One ``DataLoader(...)`` call.

    ``dataset`` is the absolute reference of the class whose instance the
    DataLoader gets (through a local name, ``Subset(...)``...), None when
    not traced to a constructor call. ``direct`` is False when it is
    wrapped. ``workers`` is a :class:`~torchtrap.facts.Workers` value
    ("none", "some", "maybe"). ``arguments`` keeps the source text of the
    arguments rules read (num_workers, worker_init_fn, collate_fn, ...);
    ``refs`` their absolute references when they are names."""

    span: Span
    dataset: str | None
    dataset_text: str
    direct: bool
    workers: str
    has_splat: bool
    arguments: tuple[tuple[str, str], ...] = ()
    refs: tuple[tuple[str, str], ...] = ()
    bound_to: str | None = None  # `loader = DataLoader(...)`: the name

    def argument(self, name: str) -> str | None:
        return dict(self.arguments).get(name)

    def ref(self, name: str) -> str | None:
        return dict(self.refs).get(name)


@dataclass(frozen=True)
class ClassFact:
    """A top-level class: absolute references of its bases (None for a base
    we cannot name), its methods, the ``torch.nn`` Dropout*, BatchNorm*,
    Sigmoid and Softmax layers its ``__init__`` assigns (statement level,
    ``Sequential`` arguments included), and
    ``output`` "sigmoid"/"softmax" when every ``return`` of ``forward``
    is one (a call, or a Sigmoid/Softmax layer or Sequential ending in one).
    ``train_layers``: those of the layers whose forward depends on the mode
    (``torch.nn.Dropout*``/``BatchNorm*`` but not ``Dropout(0.0)`` nor
    ``track_running_stats=False``), each with where it is built."""

    name: str
    span: Span
    bases: tuple[str | None, ...]
    methods: tuple[str, ...]
    layers: tuple[str, ...] = ()
    output: str | None = None
    train_layers: tuple[tuple[str, Span], ...] = ()
    # Derives from nn.Module and registers only constant buffers (TT104).
    buffers_only: bool = False


@dataclass(frozen=True)
class FunctionFact:
    """A top-level function: its parameters, what every ``return`` gives
    ("sigmoid"/"softmax", "clamped": a clamp/clip; None when
    unknown or mixed), and, for a possible worker_init_fn (at most two
    parameters), the attributes it re-creates or re-seeds on ``<x>.dataset``."""

    name: str
    span: Span
    params: tuple[str, ...]
    returns: str | None = None
    rebuilds: tuple[str, ...] = ()
    # every return a tuple of the same length: each element's kind ("" unknown)
    elements: tuple[str, ...] = ()
    # The return annotation, when it names tensors: ("tensor",) for
    # ``-> Tensor``; ("tuple", "tensor", "", ...) element-wise for
    # ``-> tuple[Tensor, int]`` / ``Tuple[...]`` (not ``tuple[Tensor, ...]``).
    annotated: tuple[str, ...] = ()
    # every return is the result of calling this project name (``return
    # Net(...)``, ``model = build(cfg); return model``): a class or a factory
    makes: str | None = None


@dataclass(frozen=True)
class ArgFact:
    """One argument at a call site: its position (or keyword) and kind:
    "dataloader" (a DataLoader with the default collate, or a name bound to
    one), "dataloader:collate" (one with a collate_fn or **kwargs),
    "sigmoid"/"softmax" (visibly one), "call:<ref>" (the result of calling
    a project-looking name: ``loss(model(x), y)``; kept only in modules
    that mention sigmoid, softmax or loss), "unknown" (made by
    :meth:`Project.call_site_args` for a :class:`CallSite` without args)."""

    index: int | None
    keyword: str | None
    kind: str
    text: str
    span: Span


@dataclass(frozen=True)
class CallSite:
    """A call of ``callee`` (an absolute reference) that passes at least one
    argument a summary tracks (see :class:`ArgFact`); ``args`` empty: a call
    that passes arguments none of which is tracked (kept once per callee and
    module, in modules that keep results: a caller that may disagree)."""

    callee: str
    span: Span
    args: tuple[ArgFact, ...]


@dataclass
class ModuleSummary:
    """Everything other files may need to know about one module."""

    path: str
    module: str  # "pkg.datasets"; "" when the file is not importable
    is_package: bool  # an __init__.py
    version: int = SUMMARY_VERSION
    # local name -> absolute reference ("np" -> "numpy", "Noisy" -> "pkg.data.Noisy")
    imports: dict[str, str] = field(default_factory=dict)
    star_imports: tuple[str, ...] = ()
    # names bound at module level by an assignment (not classes/functions)
    assigned: tuple[str, ...] = ()
    classes: dict[str, ClassFact] = field(default_factory=dict)
    functions: dict[str, FunctionFact] = field(default_factory=dict)
    dataloaders: tuple[LoaderFact, ...] = ()
    call_sites: tuple[CallSite, ...] = ()
    seeds_workers: bool = False  # Lightning's seed_everything(..., workers=True)
    pins_fork: bool = False  # calls set_start_method("fork")
    # module-level `name = Callee(...)`: name -> the callee's reference
    instances: dict[str, str] = field(default_factory=dict)
    # module-level names assigned once a value other files may ask about:
    # "cuda" / "maybe-cuda" (a device: torch.device("cuda" if ok else "cpu"))
    constants: dict[str, str] = field(default_factory=dict)
    # Calls that pass a value built here, and how often each name is called
    # with an argument in the text (:mod:`torchtrap.project.passing`).
    passing: tuple[PassingSite, ...] = ()
    called: tuple[tuple[str, int], ...] = ()
    # folders the module's top level puts on sys.path (`_init_paths.py`)
    sys_paths: tuple[str, ...] = ()

    def defines(self, name: str) -> bool:
        return name in self.classes or name in self.functions or name in self.assigned


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str | None:
    """``from ..x import y`` in ``module``: the absolute module name, None
    when the import climbs above the top package."""
    if level == 0:
        return target
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    drop = level - 1
    if drop > len(parts) or (not parts and not target):
        return None
    base = parts[: len(parts) - drop]
    if not base and not target:
        return None
    return ".".join([*base, target] if target else base) or None


class _Summarizer:
    def __init__(self, tree: ast.Module, source: SourceText, summary: ModuleSummary) -> None:
        self.tree = tree
        self.top = _top_statements(tree.body)
        self.local: set[str] = set()
        self.constructed: dict[str, ast.expr] = {}
        self.source = source
        self.text = source.text
        self.s = summary
        self.key = module_key(summary)  # what its own definitions are under

    def span(self, node: ast.AST) -> Span:
        return Span.of(self.source.node_range(node))

    # -- names -----------------------------------------------------------------
    def top_level(self) -> ImportTable:
        """Module-level names; returns the module-level import table (not
        the rules' one, which also holds imports inside functions: a
        summary must not depend on whether the file was linted)."""
        s = self.s
        assigned: list[str] = []
        stars: list[str] = []
        imports = ImportTable(t for t in self.top if isinstance(t, (ast.Import, ast.ImportFrom)))
        s.imports = {name: canonical(ref) for name, ref in imports.names.items()}
        for stmt in self.top:
            if isinstance(stmt, ast.ImportFrom):
                # Relative imports and stars: what ImportTable leaves out.
                base = resolve_relative(s.module, s.is_package, stmt.level, stmt.module)
                if base is None:
                    continue
                for alias in stmt.names:
                    if alias.name == "*":
                        stars.append(base)
                    elif stmt.level:
                        s.imports[alias.asname or alias.name] = canonical(f"{base}.{alias.name}")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if (
                    len(targets) == 1
                    and isinstance(targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Call)
                ):
                    self.constructed[targets[0].id] = stmt.value.func
                stack: list[ast.expr] = list(targets)
                while stack:
                    target = stack.pop()
                    if isinstance(target, ast.Name):
                        assigned.append(target.id)
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        stack.extend(target.elts)
                    elif isinstance(target, ast.Starred):
                        stack.append(target.value)
        s.assigned = tuple(dict.fromkeys(assigned))
        s.star_imports = tuple(stars)
        if "cuda" in self.text:
            self._constants(imports, Counter(assigned))
        return imports

    def _constants(self, imports: ImportTable, assigned: Counter[str]) -> None:
        for stmt in self.top:
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            if not isinstance(target, ast.Name) or assigned[target.id] != 1:
                continue
            cuda = literal_cuda(stmt.value, imports)
            if cuda is Cuda.YES:
                self.s.constants[target.id] = "cuda"
            elif cuda is Cuda.MAYBE:
                self.s.constants[target.id] = "maybe-cuda"

    def ref(self, node: ast.AST) -> str | None:
        """The absolute reference of a name or dotted attribute."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.s.imports.get(head)
        if base is None:
            if head in self.local or head in self.s.assigned:
                base = f"{self.key}.{head}"
            else:
                return None
        return canonical(f"{base}.{rest}" if rest else base)

    def instances(self) -> None:
        """``model = Net()`` at module level: "model" -> the class's reference."""
        for name, func in self.constructed.items():
            ref = self.ref(func)
            if ref is not None and not ref.startswith(_FOREIGN):
                self.s.instances[name] = ref

    # -- classes and functions -------------------------------------------------
    def definitions(self, imports: ImportTable) -> None:
        # Cheap text gates first: most classes build no layer a rule asks
        # about, most functions return no probability or reseed no dataset.
        layer_words = tuple(w for w in _LAYER_WORDS if w in self.text)
        return_words = tuple(w for w in _RETURN_WORDS if w in self.text)
        worker_init = "get_worker_info" in self.text
        defs = [
            stmt
            for stmt in self.top
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        # Bases need every top-level name known first (a base defined below).
        self.local = {stmt.name for stmt in defs}
        for stmt in defs:
            if isinstance(stmt, ast.ClassDef):
                layers, output, train_layers = (
                    self._layers(stmt, imports)
                    if layer_words and self._mentions(stmt, layer_words)
                    else ((), None, ())
                )
                self.s.classes[stmt.name] = ClassFact(
                    stmt.name,
                    _def_span(stmt),
                    tuple(self.ref(b) for b in stmt.bases),
                    tuple(
                        b.name
                        for b in stmt.body
                        if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
                    ),
                    layers,
                    output,
                    train_layers,
                    holds_only_buffers(stmt, self.ref),
                )
            else:
                params = tuple(a.arg for a in _params(stmt))
                # A worker_init_fn takes the worker id: only such functions
                # that use get_worker_info() are read expression-deep.
                rebuilds = (
                    _worker_init_effects(stmt)
                    if worker_init
                    and len(params) <= 2
                    and self._mentions(stmt, ("get_worker_info",))
                    else ()
                )
                returns, elements = (
                    _returns(stmt, imports)
                    if return_words and self._mentions(stmt, return_words)
                    else (None, ())
                )
                annotated = (
                    return_annotation(stmt.returns, imports) if stmt.returns is not None else ()
                )
                self.s.functions[stmt.name] = FunctionFact(
                    stmt.name,
                    _def_span(stmt),
                    params,
                    returns,
                    rebuilds,
                    elements,
                    annotated,
                    self._makes(stmt),
                )

    def _makes(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The project name every ``return`` calls (a class or a factory).
        Only returns directly in the body are read: a function whose text
        holds the word ``return`` more often after its docstring (a nested
        return, a nested function, a comment) is not followed (cheap: no walk)."""
        returns = [s.value for s in fn.body if isinstance(s, ast.Return)]
        if not returns or not all(isinstance(r, (ast.Call, ast.Name)) for r in returns):
            return None
        body = fn.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring ("Returns a model ...") does not count
        if not body:
            return None
        # The lines from the body's first statement to the function's last
        # ("return" never spans a line break: no line offsets needed).
        lines = self.source.lines[body[0].lineno - 1 : fn.end_lineno or fn.lineno]
        if "\n".join(lines).count("return") != len(returns):
            return None
        assigned = _assigned_names(fn) if any(isinstance(r, ast.Name) for r in returns) else {}
        found: set[str | None] = set()
        for value in returns:
            value = _follow(value, assigned)
            found.add(made_by(value, self.ref, _maybe_project) if value is not None else None)
            if None in found or len(found) > 1:
                return None
        return found.pop() if found else None

    def passing(self, facts: ModuleFacts | None) -> None:
        """Call sites passing values built here (see :mod:`torchtrap.project.passing`)."""
        calls = facts.index.of(ast.Call) if facts is not None else walk(self.tree)
        self.s.called = called_names(calls)
        if not is_driver(self.text):
            return
        counts = Counter(self.s.assigned)
        instances = {
            t.id: stmt.value
            for stmt in self.top
            if isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(t := stmt.targets[0], ast.Name)
            and counts[t.id] == 1
            and isinstance(stmt.value, ast.Call)
        }
        self.s.passing = passing_sites(
            self.tree, self.source.lines, self.ref, instances, _maybe_project
        )

    def _layers(
        self, cls: ast.ClassDef, imports: ImportTable
    ) -> tuple[tuple[str, ...], str | None, tuple[tuple[str, Span], ...]]:
        """Statement-level only (``self.x = nn.Dropout(...)``, a
        ``Sequential``'s layers, ``return ...`` in ``forward``): walking
        every expression of every class would cost more than the parse."""
        layers: list[str] = []
        train_layers: list[tuple[str, Span]] = []

        def add(qual: str, call: ast.Call) -> None:
            layers.append(qual)
            head, _, last = qual.rpartition(".")
            if head == "torch.nn" and last in TRAIN_MODE_LAYERS and not inert_layer(last, call):
                train_layers.append((qual, self.span(call)))

        by_attr: dict[str, str] = {}
        last_of_sequential: dict[str, str] = {}
        methods = {b.name: b for b in cls.body if isinstance(b, ast.FunctionDef)}
        init = methods.get("__init__")
        for stmt in block_statements(init.body) if init is not None else ():
            if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
                continue
            call = stmt.value
            qual = imports.qualname(call.func) or ""
            if _is_layer(qual):
                add(qual, call)
            last = ""
            if qual == "torch.nn.Sequential":
                for arg in call.args:
                    if isinstance(arg, ast.Call):
                        last = imports.qualname(arg.func) or ""
                        if _is_layer(last):
                            add(last, arg)
            for target in stmt.targets:
                if isinstance(target, ast.Attribute):
                    by_attr[target.attr] = qual
                    if last:
                        last_of_sequential[target.attr] = last
        output = None
        forward = methods.get("forward")
        if forward is not None:
            returns = [r for r in _return_values(forward) if r is not None]
            kinds = {_probability_kind(r, imports, by_attr, last_of_sequential) for r in returns}
            if len(kinds) == 1:
                output = kinds.pop()
        return tuple(dict.fromkeys(layers)), output, tuple(train_layers)

    def _mentions(self, node: ast.stmt, words: tuple[str, ...]) -> bool:
        text = "\n".join(self.source.lines[node.lineno - 1 : node.end_lineno or node.lineno])
        return any(word in text for word in words)

    # -- DataLoaders and call sites -------------------------------------------
    def loaders(self, facts: ModuleFacts) -> None:
        self._tensors = TensorFacts(facts)
        self.s.dataloaders = tuple(self._loader(call) for call in facts.dataloaders)

    def _loader(self, call: DataLoaderCall) -> LoaderFact:
        dataset, direct = None, True
        expr = call.dataset_expr
        if expr is not None:
            value: ast.expr = expr
            at: ast.AST = call.node
            for _ in range(4):
                value, at = self._bound(value, at)
                if not isinstance(value, ast.Call):
                    break
                name = dotted_name(value.func) or ""
                if name.rsplit(".", 1)[-1] in _WRAPPERS and value.args:
                    value, direct = value.args[0], False
                    continue
                dataset = self.ref(value.func)
                if dataset is None and isinstance(value.func, ast.Attribute):
                    # MyDataset.from_files(...): a classmethod constructor
                    owner = self.ref(value.func.value)
                    if owner is not None and value.func.value is not None:
                        head = dotted_name(value.func.value) or ""
                        if head.rsplit(".", 1)[-1][:1].isupper():
                            dataset = owner
                break
        arguments = tuple(
            (name, ast.unparse(call.workers_expr or call.arguments[name]))
            if name == "num_workers"
            else (name, ast.unparse(call.arguments[name]))
            for name in _KEPT_ARGUMENTS
            if name in call.arguments
        )
        refs = tuple(
            (name, ref)
            for name in ("worker_init_fn", "collate_fn")
            if name in call.arguments and (ref := self.ref(call.arguments[name])) is not None
        )
        bound_to = None
        stmt = parent(call.node)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                bound_to = target.id
        return LoaderFact(
            self.span(call.node),
            dataset,
            ast.unparse(expr) if expr is not None else "",
            direct,
            call.workers.value,
            call.has_splat,
            arguments,
            refs,
            bound_to,
        )

    def _bound(self, expr: ast.expr, at: ast.AST) -> tuple[ast.expr, ast.AST]:
        """The value a name (or ``self.x``) holds at ``at``, from the
        reaching bindings the value layer uses; a name not bound before it
        in its scope, the module's one binding; else the name itself."""
        tensors = self._tensors
        if isinstance(expr, ast.Name):
            reach = tensors.reaching(expr.id, at)
            if reach is None:
                events = tensors.table(self.tree).bindings.get(expr.id, [])
                if len(events) == 1 and events[0].value is not None:
                    return events[0].value, events[0].stmt
                return expr, at
            # The latest binding before the use (``if mapper: ds = MapDataset(ds, mapper)``
            # links MapDataset: the index records what a DataLoader may get; the
            # rules' own judgement says how sure it is).
            latest = reach.bindings[0]
            if latest.value is not None and not latest.path:
                return latest.value, latest.stmt
            return expr, at
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
        ):
            stored = [
                v
                for v in tensors.self_attribute_values(at).get(expr.attr, [])
                if not (isinstance(v, ast.Constant) and v.value is None)
            ]
            if len(stored) == 1 and isinstance(stored[0], ast.expr):
                return stored[0], stored[0]
        return expr, at

    def call_sites(self, facts: ModuleFacts, imports: ImportTable, results: bool) -> None:
        """Calls that pass a DataLoader, a sigmoid/softmax, or (``results``)
        the result of calling a project name (``f(g(x))``: "call:<ref>")."""
        loaders = {
            id(c.node): fact for c, fact in zip(facts.dataloaders, self.s.dataloaders, strict=False)
        }
        names = {fact.bound_to: fact for fact in self.s.dataloaders if fact.bound_to}
        sites: list[CallSite] = []
        untracked: set[str] = set()
        # Imports and definitions are known by now: a callee's reference
        # depends on its dotted name only (most calls repeat a few names).
        refs: dict[str, str | None] = {}
        for call in facts.index.of(ast.Call):
            if id(call) in loaders:
                continue
            args: list[ArgFact] = []
            for i, arg in enumerate(call.args):
                kind = self._arg_kind(arg, names, loaders, imports, results)
                if kind:
                    args.append(ArgFact(i, None, kind, ast.unparse(arg), self.span(arg)))
            for kw in call.keywords:
                kind = (
                    self._arg_kind(kw.value, names, loaders, imports, results) if kw.arg else None
                )
                if kind:
                    args.append(ArgFact(None, kw.arg, kind, ast.unparse(kw.value), self.span(kw)))
            if not args and not (results and (call.args or call.keywords)):
                continue
            dotted = dotted_name(call.func)
            if dotted is None:
                continue
            callee = refs.get(dotted, "")
            if callee == "":
                callee = refs[dotted] = self.ref(call.func)
            if callee is None:
                continue
            if args:
                sites.append(CallSite(callee, self.span(call), tuple(args)))
            elif callee not in untracked and _maybe_project(callee):
                # A caller that passes nothing tracked (once per callee): a
                # parameter's callers may disagree (one passes a sigmoid, this
                # one an unknown value).
                untracked.add(callee)
                sites.append(CallSite(callee, _def_span(call), ()))
        self.s.call_sites = tuple(sites)

    def _arg_kind(
        self,
        arg: ast.expr,
        names: dict[str, LoaderFact],
        loaders: dict[int, LoaderFact],
        imports: ImportTable,
        results: bool,
    ) -> str | None:
        loader = (
            names.get(arg.id)
            if isinstance(arg, ast.Name)
            else loaders.get(id(arg))
            if isinstance(arg, ast.Call)
            else None
        )
        if loader is not None:
            custom = loader.has_splat or loader.argument("collate_fn") not in (None, "None")
            return "dataloader:collate" if custom else "dataloader"
        if not results or not isinstance(arg, ast.Call):
            return None
        kind = _probability_kind(arg, imports)
        if kind is not None:
            return kind
        ref = self.ref(arg.func)
        if ref is not None and not ref.startswith(_FOREIGN):
            return f"call:{ref}"
        return None


def _maybe_project(ref: str) -> bool:
    """Not torch, numpy, the standard library...: a name the project may define."""
    head = ref.partition(".")[0]
    return not ref.startswith(_FOREIGN) and head not in sys.stdlib_module_names


def _top_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, looking into ``if``/``try`` blocks (guarded
    imports, ``if TYPE_CHECKING``) but not into functions or classes."""
    out: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        if isinstance(stmt, ast.If):
            stack.extend(reversed(stmt.body + stmt.orelse))
        elif isinstance(stmt, ast.Try):
            blocks = stmt.body + [s for h in stmt.handlers for s in h.body]
            stack.extend(reversed(blocks + stmt.orelse + stmt.finalbody))
    return out


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    return [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]


def _probability_kind(
    expr: ast.expr,
    imports: ImportTable,
    by_attr: dict[str, str] | None = None,
    last_of_sequential: dict[str, str] | None = None,
) -> str | None:
    """ "sigmoid"/"softmax" when ``expr`` is visibly one (a call, a method,
    a ``self.<layer>(...)`` of an nn.Sigmoid/nn.Softmax or a Sequential
    ending in one); None otherwise."""
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    qual = imports.qualname(func)
    if qual in _PROBABILITY_FUNCTIONS:
        return _PROBABILITY_FUNCTIONS[qual]
    if isinstance(func, ast.Attribute):
        if qual is None and func.attr in _PROBABILITY_METHODS and not expr.args[1:]:
            if not isinstance(func.value, ast.Name) or func.value.id not in imports.names:
                return func.attr
            return None
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            layer = (by_attr or {}).get(func.attr, "")
            if layer in _PROBABILITY_LAYERS:
                return _PROBABILITY_LAYERS[layer]
            return _PROBABILITY_LAYERS.get((last_of_sequential or {}).get(func.attr, ""))
    return None


def _def_span(node: ast.stmt | ast.expr) -> Span:
    """A class's or function's span without the code-point conversion:
    only its lines are ever shown, and a ``def`` starts at its indentation."""
    return Span(
        node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0
    )


def _is_layer(qual: str) -> bool:
    return qual.startswith("torch.nn.") and any(w in qual for w in _LAYER_WORDS)


def _assigned_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr | None]]:
    """The values each local name is bound to in the function (None: bound
    otherwise, by a loop, ``with``, unpacking or an augmented assignment)."""
    assigned: dict[str, list[ast.expr | None]] = {}
    for stmt in block_statements(fn.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    value = None if isinstance(stmt, ast.AugAssign) else stmt.value
                    assigned.setdefault(target.id, []).append(value)
                else:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            assigned.setdefault(node.id, []).append(None)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            bound = (
                [stmt.target]
                if isinstance(stmt, (ast.For, ast.AsyncFor))
                else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            )
            for target in bound:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        assigned.setdefault(node.id, []).append(None)
    return assigned


def _follow(value: ast.expr | None, assigned: dict[str, list[ast.expr | None]]) -> ast.expr | None:
    """A local name assigned once stands for its value (one step)."""
    if isinstance(value, ast.Name) and len(assigned.get(value.id, ())) == 1:
        return assigned[value.id][0]
    return value


def _return_values(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    assigned: dict[str, list[ast.expr | None]] | None = None,
) -> list[ast.expr | None]:
    """What each ``return`` gives, through a local name assigned once in
    the function (``out = self.net(x); return out``); a name assigned more
    than once, or bound otherwise (a loop, ``with``), stays the name."""
    if assigned is None:
        assigned = _assigned_names(fn)
    return [
        _follow(stmt.value, assigned)
        for stmt in block_statements(fn.body)
        if isinstance(stmt, ast.Return)
    ]


def _returns(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, imports: ImportTable
) -> tuple[str | None, tuple[str, ...]]:
    """(what every return gives, or element-wise when every return is a
    tuple of the same length: "sigmoid"/"softmax" or "" per element)."""
    assigned = _assigned_names(fn)
    values = _return_values(fn, assigned)
    if not values or any(v is None for v in values):
        return None, ()
    kinds = {_probability_kind(v, imports) for v in values if v is not None}
    if len(kinds) == 1 and None not in kinds:
        return kinds.pop(), ()
    if all(
        isinstance(v, ast.Call)
        and (
            (isinstance(v.func, ast.Attribute) and v.func.attr in _CLAMPS)
            or (imports.qualname(v.func) or "").rsplit(".", 1)[-1] in _CLAMPS
        )
        for v in values
    ):
        return "clamped", ()
    tuples = [v for v in values if isinstance(v, ast.Tuple)]
    if len(tuples) == len(values) and len({len(t.elts) for t in tuples}) == 1:
        columns = zip(*(t.elts for t in tuples), strict=True)
        elements = []
        for column in columns:
            found = {_probability_kind(_follow(e, assigned) or e, imports) for e in column}
            kind = found.pop() if len(found) == 1 else None
            elements.append(kind or "")
        if any(elements):
            return None, tuple(elements)
    return None, ()


_TUPLES = frozenset({"tuple", "typing.Tuple", "builtins.tuple"})


def return_annotation(annotation: ast.expr, imports: ImportTable) -> tuple[str, ...]:
    """What a return annotation says the function gives (see
    :attr:`FunctionFact.annotated`): ("tensor",), ("tuple", kind per
    element), or () when it names no tensor (``Optional[Tensor]``, a
    variadic ``tuple[Tensor, ...]``, anything else)."""
    parsed = _unquoted(annotation)
    if parsed is None:
        return ()
    annotation = parsed
    if _names_tensor(annotation, imports):
        return ("tensor",)
    if not isinstance(annotation, ast.Subscript):
        return ()
    head = annotation.value
    qual = imports.qualname(head) or (head.id if isinstance(head, ast.Name) else None)
    if qual not in _TUPLES or not isinstance(annotation.slice, ast.Tuple):
        return ()
    elements = annotation.slice.elts
    if any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elements):
        return ()
    kinds = tuple(
        "tensor" if (e := _unquoted(element)) is not None and _names_tensor(e, imports) else ""
        for element in elements
    )
    return ("tuple", *kinds) if any(kinds) else ()


def _unquoted(annotation: ast.expr) -> ast.expr | None:
    """A string annotation (``-> "torch.Tensor"``) parsed; None if it does not parse."""
    if not (isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)):
        return annotation
    if len(annotation.value) > 200:
        return None
    try:
        parsed = ast.parse(annotation.value.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    return parsed.body


def _names_tensor(annotation: ast.expr, imports: ImportTable) -> bool:
    return imports.qualname(annotation) in TENSOR_ANNOTATIONS


def _worker_init_effects(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """The attributes a possible worker_init_fn re-creates or re-seeds on
    ``<x>.dataset.<attr>`` (or ``setattr(<x>, "attr", ...)``), and as
    ``"name()"`` the methods it calls on ``<x>.dataset``."""
    rebuilt: list[str] = []
    for node in walk(fn):
        if isinstance(node, ast.Attribute) and _on_dataset(node.value):
            if isinstance(node.ctx, ast.Store):
                rebuilt.append(node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in RESEED_METHODS
                and isinstance(func.value, ast.Attribute)
                and _on_dataset(func.value.value)
            ):
                rebuilt.append(func.value.attr)
            elif isinstance(func, ast.Attribute) and _on_dataset(func.value):
                # `info.dataset.init_worker()`: the dataset's own method runs in
                # the worker; recorded as "init_worker()" for the rules to read.
                rebuilt.append(f"{func.attr}()")
            elif (name := setattr_name(node)) is not None:
                rebuilt.append(name)
    return tuple(dict.fromkeys(rebuilt))


def _on_dataset(node: ast.AST) -> bool:
    """``info.dataset`` / ``get_worker_info().dataset`` / a name ``dataset``."""
    if isinstance(node, ast.Attribute) and node.attr == "dataset":
        return True
    return isinstance(node, ast.Name) and node.id in ("dataset", "ds")


def summarize(
    tree: ast.Module,
    source: SourceText,
    path: str,
    module: str,
    is_package: bool,
    facts: ModuleFacts | None = None,
) -> ModuleSummary:
    """The summary of one parsed module. ``facts`` is the lint's own
    :class:`ModuleFacts` when it has one; without it the summary builds one
    only when the module mentions a DataLoader (the one fact that needs a
    walk over the whole tree)."""
    from torchtrap.facts import ModuleFacts

    summary = ModuleSummary(path, module, is_package)
    text = source.text
    work = _Summarizer(tree, source, summary)
    imports = work.top_level()
    work.definitions(imports)
    results = any(word in text for word in _RESULT_WORDS)
    if "DataLoader" in text or results:
        if facts is None:
            facts = ModuleFacts(tree)
        if "DataLoader" in text:
            work.loaders(facts)
        if summary.dataloaders or results:
            work.call_sites(facts, imports, results)
    work.instances()
    work.passing(facts)
    if "sys.path" in text:
        summary.sys_paths = sys_path_folders(tree, path)
    if "set_start_method" in text:
        summary.pins_fork = pins_fork(facts if facts is not None else ModuleFacts(tree))
    if "workers=True" in text and any(word in text for word in _SEEDS_WORKERS):
        calls = facts.index.of(ast.Call) if facts is not None else None
        summary.seeds_workers = _seeds_workers(calls or walk(tree), imports)
    return summary


def _seeds_workers(nodes: Iterable[ast.AST], imports: ImportTable) -> bool:
    for node in nodes:
        if isinstance(node, ast.Call):
            qual = imports.qualname(node.func) or ""
            if qual.rsplit(".", 1)[-1] == "seed_everything":
                workers = next((k.value for k in node.keywords if k.arg == "workers"), None)
                if isinstance(workers, ast.Constant) and workers.value is True:
                    return True
    return False


def module_key(summary: ModuleSummary) -> str:
    """The module name, or a stable dot-free key for a file that is not
    importable (a notebook, a script in a folder with a dash in its name):
    its own definitions are ``<key>.name``, and no import can name it."""
    if summary.module:
        return summary.module
    return "@" + hashlib.sha1(os.path.abspath(summary.path).encode()).hexdigest()[:12]
