"""The project view rules see as ``ctx.project``: facts from other files.

``ctx.project`` is a :class:`Project`, or None for a lone file or stdin
(rules must keep working without it: no project means "unknown", never
"no DataLoader anywhere"). Every reference is an absolute dotted name as
Python would import it ("pkg.datasets.Noisy"); :meth:`Project.resolve`
follows imports and ``__init__.py`` re-exports to where a name is defined,
and returns None for anything outside the project (third-party, dynamic):
unknown, not evidence.

Typical use in a rule::

    project = self.ctx.project              # may raise NeedsProject: let it
    if project is not None:
        ref = project.ref(self.ctx.path, view.name)        # "pkg.data.Noisy"
        for use in project.dataloaders_loading(ref, exclude_path=self.ctx.path):
            use.fact.workers, use.fact.argument("num_workers"), use.where()
        for arg in project.call_site_args("pkg.losses.bce", 0):
            arg.arg.kind, arg.where()
        project.module_class_has_layers("pkg.models.Net", {"torch.nn.Dropout"})
        project.train_mode_layers("pkg.models.Net")        # [(path, "torch.nn.Dropout", span)]
        project.module_class_output("pkg.models.Net")      # "sigmoid" / "softmax" / None
        project.probability_of("pkg.models.disc")          # calling it gives a sigmoid?
        project.function("pkg.utils.seed_worker")          # FunctionFact | None

Accessing ``ctx.project`` while ``torchtrap check`` is still indexing
raises :class:`NeedsProject`; the engine then lints that file again once
the index is complete (only files whose rules asked pay twice).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from torchtrap.facts.classes import MODULE_BASES
from torchtrap.project.passing import PassingSite
from torchtrap.project.summary import (
    UNTRACKED,
    ArgFact,
    CallSite,
    ClassFact,
    FunctionFact,
    LoaderFact,
    ModuleSummary,
    Span,
    module_key,
)
from torchtrap.project.sys_path import applies_to

T = TypeVar("T")
_MAX_DEPTH = 12  # re-export chains and import cycles
_PENDING = object()  # a resolution step under way (met again: a cycle)


class NeedsProject(Exception):
    """Raised by ``ctx.project`` while the project is still being indexed.
    Rules must not catch it."""


class _Pending:
    """The value of ``ctx.project`` during ``check``'s first pass."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()


@dataclass
class Reads:
    """What one lint read of the project (see :func:`recording`): the files
    whose summaries it consulted (``paths``, absolute), the references it
    asked the project-wide tables about (``refs``: callees of call sites,
    classes whose DataLoaders or subclasses it looked for), and whether it
    scanned every DataLoader. An editor re-lints a document when a changed
    summary is one it read, or provides one of its references: that covers
    every call-site, return and attribute edge the value layer follows,
    however many files deep, without knowing them."""

    paths: set[str] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    all_loaders: bool = False

    def concerns(self, project: Project, summary: ModuleSummary) -> bool:
        """Whether ``summary`` (a file's summary before or after a change,
        ``project`` the one it belongs to) may change what was read."""
        return self.touched(Change(project, summary))

    def touched(self, change: Change) -> bool:
        """``concerns``, for a change tested against many lints' reads (the
        closed files of a workspace): its facts are made once."""
        if change.path in self.paths:
            return True
        if self.all_loaders and change.summary.dataloaders:
            return True
        return bool(self.refs) and not self.refs.isdisjoint(change.provided)


class Change:
    """A changed summary as ``Reads.touched`` tests it."""

    def __init__(self, project: Project, summary: ModuleSummary) -> None:
        self.project = project
        self.summary = summary
        self.path = os.path.abspath(summary.path)

    @cached_property
    def provided(self) -> frozenset[str]:
        return self.project.provided(self.summary)


_READS: contextvars.ContextVar[Reads | None] = contextvars.ContextVar(
    "torchtrap_reads", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[Reads]:
    """Record what the project's queries read in this thread (a lint)."""
    reads = Reads()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def _read(summary: ModuleSummary | None) -> None:
    reads = _READS.get()
    if reads is not None and summary is not None:
        reads.paths.add(os.path.abspath(summary.path))


def _asked(ref: str) -> None:
    reads = _READS.get()
    if reads is not None:
        reads.refs.add(ref)


@dataclass(frozen=True)
class ProjectLoader:
    """A DataLoader call somewhere in the project."""

    path: str
    fact: LoaderFact

    def where(self, folder: str | None = None) -> str:
        """``train.py:31``, relative to ``folder`` (e.g. ``Project.root``)."""
        return location(self.path, self.fact.span, folder)


@dataclass(frozen=True)
class ProjectArg:
    """An argument at a call site somewhere in the project."""

    path: str
    site: CallSite
    arg: ArgFact

    def where(self, folder: str | None = None) -> str:
        return location(self.path, self.arg.span, folder)


def location(path: str, span: Span, folder: str | None = None) -> str:
    """``train.py:31``: the path relative to ``folder``."""
    shown = path
    if folder:
        try:
            shown = os.path.relpath(os.path.abspath(path), folder)
        except ValueError:  # another drive on Windows
            shown = path
    return f"{shown.replace(os.sep, '/')}:{span.line}"


class Project:
    """Summaries of every indexed module and the queries rules ask of them."""

    def __init__(
        self, summaries: Iterable[ModuleSummary], texts: Mapping[str, str] | None = None
    ) -> None:
        # An editor's open documents (absolute path -> text): what the
        # whole-program model reads for them instead of the disk.
        self.texts: Mapping[str, str] = texts or {}
        self._by_path: dict[str, ModuleSummary] = {}
        self.modules: dict[str, ModuleSummary] = {}
        # with_file(): the project this one extends, and the file it adds
        self._base: Project | None = None
        self._added: ModuleSummary | None = None
        # provided(): id(summary) -> (summary, its references), made once per
        # project (an editor asks for each open document about the same one)
        self._provided: dict[int, tuple[ModuleSummary, frozenset[str]]] = {}
        for summary in sorted(summaries, key=lambda s: s.path):
            self._by_path[os.path.abspath(summary.path)] = summary
            self.modules.setdefault(module_key(summary), summary)

    @cached_property
    def root(self) -> str:
        """The deepest folder holding every indexed file (for short paths
        in messages: ``train.py:31``, ``scripts/train.py:4``)."""
        folders = {os.path.dirname(p) for p in self._by_path}
        try:
            return os.path.commonpath(sorted(folders)) if folders else ""
        except ValueError:  # paths on different drives
            return ""

    def updated(self, path: str, summary: ModuleSummary | None) -> Project:
        """A new project with the file at ``path`` summarised anew (None:
        removed). For an editor: the old project stays valid for readers."""
        key = os.path.abspath(path)
        rest = [s for p, s in self._by_path.items() if p != key]
        return Project(rest + ([summary] if summary is not None else []), self.texts)

    def with_file(self, summary: ModuleSummary) -> Project:
        """This project plus a file no import names (a notebook, or any file
        under its ``module_key``): its own names resolve, and the tables the
        project built over every module are reused with this file's entries
        added, not rebuilt (an editor lints a notebook on each keystroke;
        rebuilding them took ~30 ms on a 630-module project)."""
        overlay = Project((), self.texts)
        overlay._by_path = {**self._by_path, os.path.abspath(summary.path): summary}
        overlay.modules = {**self.modules, module_key(summary): summary}
        overlay._base, overlay._added = self, summary
        return overlay

    def _table(
        self, name: str, entries: Callable[[ModuleSummary], Iterable[tuple[str, T]]]
    ) -> dict[str, list[T]]:
        """A table over every module: ``entries(summary)`` gives a module's
        (key, value) pairs, in path order. For a :meth:`with_file` project,
        the base's table (built there once) plus the added file's entries."""
        token = _READS.set(None)  # building reads every module: what is looked up counts
        try:
            if self._base is None or self._added is None:
                found: dict[str, list[T]] = {}
                for summary in self:
                    for key, value in entries(summary):
                        found.setdefault(key, []).append(value)
                return found
            base: dict[str, list[T]] = getattr(self._base, name)
            table = dict(base)
            for key, value in entries(self._added):
                table[key] = [*table.get(key, ()), value]
            return table
        finally:
            _READS.reset(token)

    def __len__(self) -> int:
        return len(self._by_path)

    def __iter__(self) -> Iterator[ModuleSummary]:
        return iter(self._by_path.values())

    # -- modules and names -----------------------------------------------------
    def summary(self, path: str) -> ModuleSummary | None:
        """The summary of the file at ``path``."""
        found = self._by_path.get(os.path.abspath(path))
        _read(found)
        return found

    def ref(self, path: str, name: str) -> str | None:
        """The absolute reference of a module-level ``name`` (dotted names
        allowed: ``data.Noisy``) as the file at ``path`` sees it, resolved
        to where it is defined; None when unknown."""
        summary = self.summary(path)
        if summary is None:
            return None
        head, _, rest = name.partition(".")
        if summary.defines(head):
            base = f"{module_key(summary)}.{head}"
        elif head in summary.imports:
            base = summary.imports[head]
        else:
            return None
        return self.resolve(f"{base}.{rest}" if rest else base, path)

    def resolve(self, ref: str, importer: str | None = None, _depth: int = 0) -> str | None:
        """Where ``ref`` is defined ("pkg.Noisy" → "pkg.data.Noisy" through
        ``pkg/__init__.py``'s ``from .data import Noisy``); a module resolves
        to itself. None for anything the project does not define."""
        if _depth == 0 and _READS.get() is None:
            # Nothing records what is read (``check``, building a table): the
            # answer is remembered (a file's call sites repeat a few callees).
            memo = self.__dict__.get("_resolved")
            if memo is None:
                memo = self.__dict__["_resolved"] = {}
            key = (ref, importer)
            if key in memo:
                return memo[key]
            found = memo[key] = self._resolve(ref, importer, 0, {})
            return found
        return self._resolve(ref, importer, _depth, {})

    def _step(
        self, ref: str, importer: str, depth: int, local: dict[tuple[str, str], object]
    ) -> str | None:
        """One step of a resolution, each (name, importer) resolved once per
        question: star imports re-exported through star imports (fairseq)
        otherwise branch at every step, exponentially. A name met again while
        it is being resolved is a cycle: unknown on that path."""
        key = (ref, importer)
        if key in local:
            found = local[key]
            return None if found is _PENDING else found  # type: ignore[return-value]
        local[key] = _PENDING
        answer = self._resolve(ref, importer, depth, local)
        local[key] = answer
        return answer

    def _resolve(
        self, ref: str, importer: str | None, _depth: int, local: dict[tuple[str, str], object]
    ) -> str | None:
        if _depth > _MAX_DEPTH:
            return None  # an import cycle
        parts = ref.split(".")
        for i in range(len(parts), 0, -1):
            summary = self._module(".".join(parts[:i]), importer)
            if summary is None:
                continue
            rest = parts[i:]
            key = module_key(summary)
            if not rest:
                return key
            name = rest[0]
            tail = "." + ".".join(rest[1:]) if rest[1:] else ""
            if summary.defines(name):
                return f"{key}.{name}{tail}"
            if name in summary.imports:
                target = summary.imports[name] + tail
                if target == ref:
                    return None
                return self._step(target, summary.path, _depth + 1, local)
            for star in summary.star_imports:
                if self._module(star, summary.path) is None:
                    # `from x import *` names a module: one the project does
                    # not have exports nothing known. (Resolving `x.name` by
                    # its longest known prefix instead grew the name at every
                    # step and branched over every star import: fairseq's
                    # MMPT processors took 22 GB.)
                    continue
                found = self._step(f"{star}.{'.'.join(rest)}", summary.path, _depth + 1, local)
                if found is not None:
                    return found
            return None
        return None

    def _module(self, name: str, importer: str | None) -> ModuleSummary | None:
        found = self.modules.get(name)
        if found is not None or importer is None:
            _read(found)
            return found
        # A script's own folder is on sys.path: `from model import Net` next to it.
        # Remembered per (name, importer): resolving every call site of the
        # project asks the same few names from each file, most of them
        # not project modules ("torch.nn"). The summaries do not change.
        memo = self.__dict__.get("_beside_memo")
        if memo is None:
            memo = self.__dict__["_beside_memo"] = {}
        key = (name, importer)
        if key in memo:
            found, adder = memo[key]
        else:
            found, adder = memo[key] = self._beside(name, importer)
        _read(found)
        _read(adder)  # a folder put on sys.path: the answer depends on that file too
        return found

    def _beside(
        self, name: str, importer: str
    ) -> tuple[ModuleSummary | None, ModuleSummary | None]:
        """The module ``name`` beside ``importer`` (in its folder or above),
        else under a folder a script puts on ``sys.path``; with that script."""
        rel = name.replace(".", os.sep)
        # A name's files are its first part's file or folder: where the
        # folder holds no such entry, the three candidates need not be joined
        # (most names are libraries', `torch.nn`, asked at every level up to /).
        first = name.partition(".")[0]
        entries = self._entries() if first else None
        # A dotted name may also start at a folder above the script: run as
        # `python -m src.train` from the repository, `src/train.py` imports
        # `src.data.sets` although `src` is a source root. A single name is
        # left to the script's own folder (`utils` above it is a guess).
        folders = self._ancestors(importer)
        for folder in folders if "." in name else folders[:1]:
            if entries is not None and first not in entries.get(folder, ()):
                continue
            for candidate in (f"{rel}.py", os.path.join(rel, "__init__.py"), f"{rel}.pyi"):
                found = self._by_path.get(os.path.join(folder, candidate))
                if found is not None:
                    return found, None
        # A folder a script puts on sys.path by a literal path (`_init_paths`)
        for adder, extra in self.sys_paths:
            if not applies_to(adder.path, importer):
                continue
            for candidate in (f"{rel}.py", os.path.join(rel, "__init__.py"), f"{rel}.pyi"):
                found = self._by_path.get(os.path.join(extra, candidate))
                if found is not None:
                    return found, adder
        return None, None

    @cached_property
    def sys_paths(self) -> tuple[tuple[ModuleSummary, str], ...]:
        """Each module that puts folders on ``sys.path`` by a path its text
        fixes (``project.sys_path``), with each folder."""
        return tuple(
            (summary, folder) for summary in self._by_path.values() for folder in summary.sys_paths
        )

    def _ancestors(self, importer: str) -> tuple[str, ...]:
        """The importer's folder and every folder above it, nearest first
        (made once per importer: each of its imports climbs them)."""
        memo = self.__dict__.get("_ancestors_memo")
        if memo is None:
            memo = self.__dict__["_ancestors_memo"] = {}
        found = memo.get(importer)
        if found is None:
            folder = os.path.dirname(os.path.abspath(importer))
            chain = [folder]
            while (parent := os.path.dirname(folder)) != folder:
                chain.append(parent)
                folder = parent
            found = memo[importer] = tuple(chain)
        return found

    def _entries(self) -> dict[str, set[str]]:
        """Each folder above an indexed file: the names in it that lead to
        one (a file's stem, a folder's name)."""
        memo = self.__dict__.get("_entries_memo")
        if memo is None or memo[0] is not self._by_path or memo[1] != len(self._by_path):
            entries: dict[str, set[str]] = {}
            for path in self._by_path:
                folder, name = os.path.split(path)
                name = os.path.splitext(name)[0]
                while True:
                    known = entries.setdefault(folder, set())
                    if name in known:
                        break
                    known.add(name)
                    parent, name = os.path.split(folder)
                    if parent == folder or not name:
                        break
                    folder = parent
            memo = self.__dict__["_entries_memo"] = (self._by_path, len(self._by_path), entries)
        return memo[2]

    def imported_modules(self, summary: ModuleSummary) -> frozenset[str]:
        """The project modules ``summary`` imports at its top level (module
        keys): each import's module, and the module defining what it names
        when that is reached through a re-export. Third-party imports are
        not in the project and not in the set."""
        found: set[str] = set()
        for ref in (*summary.imports.values(), *summary.star_imports):
            parts = ref.split(".")
            for i in range(len(parts), 0, -1):
                module = self._module(".".join(parts[:i]), summary.path)
                if module is not None:
                    found.add(module_key(module))
                    break
            else:
                continue  # not a project module: nothing to resolve either
            resolved = self.resolve(ref, summary.path)
            if resolved is not None:
                home = resolved if resolved in self.modules else resolved.rpartition(".")[0]
                while home and home not in self.modules:
                    home = home.rpartition(".")[0]  # a name's attribute: "m.Cls.attr"
                if home:
                    found.add(home)
        found.discard(module_key(summary))
        return frozenset(found)

    def _split(self, ref: str) -> tuple[ModuleSummary, str] | None:
        module, _, name = ref.rpartition(".")
        summary = self.modules.get(module)
        _read(summary)
        return (summary, name) if summary is not None else None

    def definition(self, ref: str) -> tuple[str, Span] | None:
        """(path, span) of the class, function or module-level name ``ref``
        (resolved) is defined at; None when not in the project."""
        found = self._split(ref)
        if found is None:
            return None
        summary, name = found
        fact = summary.functions.get(name) or summary.classes.get(name)
        if fact is not None:
            return summary.path, fact.span
        return (summary.path, Span(1, 0, 1, 0)) if summary.defines(name) else None

    # -- classes and functions -------------------------------------------------
    def class_fact(self, ref: str) -> tuple[ModuleSummary, ClassFact] | None:
        """The class a resolved reference names, with its module's summary."""
        found = self._split(ref)
        if found is None or found[1] not in found[0].classes:
            return None
        return found[0], found[0].classes[found[1]]

    def function(self, ref: str) -> FunctionFact | None:
        """The top-level function a resolved reference names."""
        found = self._split(ref)
        return found[0].functions.get(found[1]) if found is not None else None

    def bases(self, ref: str) -> list[str | None]:
        """A class's bases, resolved where the project defines them (third-
        party bases stay as imported: "torch.utils.data.Dataset"; None for a
        base we cannot name)."""
        found = self.class_fact(ref)
        if found is None:
            return []
        summary, fact = found
        return [self.resolve(b, summary.path) or b if b else None for b in fact.bases]

    def derives_from(self, ref: str, qualnames: Iterable[str]) -> bool | None:
        """True when the class derives from one of ``qualnames`` through
        project classes; None when a base is unknown and it does not."""
        wanted = set(qualnames)
        unknown = False
        seen: set[str] = set()
        todo = [ref]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for base in self.bases(current):
                if base is None:
                    unknown = True
                elif base in wanted:
                    return True
                elif self.class_fact(base) is not None:
                    todo.append(base)
                else:
                    unknown = True
        return None if unknown else False

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        def entries(summary: ModuleSummary) -> Iterator[tuple[str, str]]:
            key = module_key(summary)
            for name in summary.classes:
                ref = f"{key}.{name}"
                for base in self.bases(ref):
                    if base is not None:
                        yield base, ref

        return self._table("_children", entries)

    def subclasses(self, ref: str) -> set[str]:
        """``ref`` and every project class deriving from it."""
        found = {ref}
        todo = [ref]
        while todo:
            for child in self._children.get(todo.pop(), ()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        for each in found:
            _asked(each)  # a new DataLoader of a subclass, a new subclass of one
        return found

    def _lineage(self, ref: str) -> Iterator[tuple[ModuleSummary, ClassFact]]:
        """The class and its project bases, nearest first, each once."""
        seen: set[str] = set()
        todo = [ref]
        while todo:
            current = todo.pop(0)
            found = self.class_fact(current)
            if found is None or current in seen:
                continue
            seen.add(current)
            yield found
            todo.extend(b for b in self.bases(current) if b)

    def module_class_has_layers(self, ref: str, qualnames: Iterable[str]) -> bool | None:
        """Whether the module class (or a project base) builds one of the
        ``torch.nn`` layers in ``qualnames`` in ``__init__``; None when the
        class is not in the project."""
        wanted = set(qualnames)
        if self.class_fact(ref) is None:
            return None
        return any(wanted & set(fact.layers) for _, fact in self._lineage(ref))

    def train_mode_layers(self, ref: str) -> list[tuple[str, str, Span]] | None:
        """(path, qualname, span) of the ``torch.nn`` Dropout/BatchNorm layers
        whose forward depends on the mode that the module class builds in
        ``__init__`` (see ``ClassFact.train_layers``); when it builds none,
        those of its project bases, nearest first. None when the class is
        not in the project or not known to derive from ``torch.nn.Module``
        (a third-party base, a plain class): unknown, not "none"."""
        if self.class_fact(ref) is None or not self.derives_from(ref, MODULE_BASES):
            return None
        for summary, fact in self._lineage(ref):
            if fact.train_layers:
                return [(summary.path, qual, span) for qual, span in fact.train_layers]
        return []

    def module_class_output(self, ref: str) -> str | None:
        """ "sigmoid"/"softmax" when the module class's ``forward`` ends in
        one (also through a project base's ``forward``); None when not or
        unknown."""
        for _, fact in self._lineage(ref):
            if "forward" in fact.methods:
                return fact.output
        return None

    def probability_of(self, ref: str, importer: str | None = None) -> str | None:
        """ "sigmoid"/"softmax" when calling what ``ref`` names gives one: a
        function whose every ``return`` is one, a module class ending in
        one, or a module-level instance of such a class; None otherwise."""
        resolved = self.resolve(ref, importer)
        if resolved is None:
            return None
        function = self.function(resolved)
        if function is not None:
            return function.returns if function.returns in ("sigmoid", "softmax") else None
        if self.class_fact(resolved) is not None:
            return None  # calling the class builds the module, not its output
        found = self._split(resolved)
        if found is not None and found[1] in found[0].instances:
            cls = self.resolve(found[0].instances[found[1]], found[0].path)
            return self.module_class_output(cls) if cls is not None else None
        return None

    def constant(self, ref: str) -> str | None:
        """What a module-level name of the project holds, when its summary
        records it (``ModuleSummary.constants``: "cuda", "maybe-cuda")."""
        resolved = self.resolve(ref)
        found = self._split(resolved) if resolved is not None else None
        return found[0].constants.get(found[1]) if found is not None else None

    def returned_elements(self, ref: str) -> tuple[str, ...]:
        """Element-wise kinds of what a project function returns when every
        ``return`` is a tuple ("softmax", "sigmoid", "" for unknown); () when not."""
        resolved = self.resolve(ref)
        function = self.function(resolved) if resolved is not None else None
        return function.elements if function is not None else ()

    def return_annotation(self, ref: str) -> tuple[str, ...]:
        """What a project function's return annotation says it gives
        (:attr:`~torchtrap.project.summary.FunctionFact.annotated`); () when
        not a function or nothing is known."""
        resolved = self.resolve(ref)
        function = self.function(resolved) if resolved is not None else None
        return function.annotated if function is not None else ()

    def arg_probability(self, arg: ProjectArg) -> str | None:
        """ "sigmoid"/"softmax" when the argument at a call site is one."""
        kind = arg.arg.kind
        if kind in ("sigmoid", "softmax"):
            return kind
        if kind.startswith("call:"):
            return self.probability_of(kind[5:], arg.path)
        return None

    # -- DataLoaders and call sites ------------------------------------------
    def dataloaders(self) -> Iterator[ProjectLoader]:
        reads = _READS.get()
        if reads is not None:
            reads.all_loaders = True
        for summary in self:
            for fact in summary.dataloaders:
                yield ProjectLoader(summary.path, fact)

    @cached_property
    def _loaders_by_dataset(self) -> dict[str, list[ProjectLoader]]:
        def entries(summary: ModuleSummary) -> Iterator[tuple[str, ProjectLoader]]:
            for fact in summary.dataloaders:
                ref = self.resolve(fact.dataset, summary.path) if fact.dataset else None
                if ref is not None:
                    yield ref, ProjectLoader(summary.path, fact)

        return self._table("_loaders_by_dataset", entries)

    def dataloaders_loading(
        self, class_ref: str, *, exclude_path: str | None = None
    ) -> list[ProjectLoader]:
        """DataLoaders anywhere in the project that get an instance of the
        class (or of a project subclass), in path and line order."""
        excluded = os.path.abspath(exclude_path) if exclude_path else None
        out = [
            use
            for ref in self.subclasses(class_ref)
            for use in self._loaders_by_dataset.get(ref, ())
            if excluded is None or os.path.abspath(use.path) != excluded
        ]
        for use in out:
            _read(self._by_path.get(os.path.abspath(use.path)))
        return sorted(out, key=lambda u: (u.path, u.fact.span.line, u.fact.span.col))

    @cached_property
    def _sites_by_callee(self) -> dict[str, list[tuple[str, CallSite]]]:
        def entries(summary: ModuleSummary) -> Iterator[tuple[str, tuple[str, CallSite]]]:
            for site in summary.call_sites:
                ref = self.resolve(site.callee, summary.path)
                if ref is not None:
                    yield ref, (summary.path, site)

        return self._table("_sites_by_callee", entries)

    def call_site_args(
        self, func_ref: str, index: int | None = None, keyword: str | None = None
    ) -> list[ProjectArg]:
        """The tracked arguments (see :class:`ArgFact`; today DataLoaders)
        passed to ``func_ref``'s parameter at position ``index`` or named
        ``keyword`` at every call site in the project."""
        out: list[ProjectArg] = []
        _asked(func_ref)
        for path, site in self._sites_by_callee.get(func_ref, ()):
            _read(self._by_path.get(os.path.abspath(path)))
            if not site.args:  # a caller passing nothing tracked
                unknown = ArgFact(index, keyword, UNTRACKED, "", site.span)
                out.append(ProjectArg(path, site, unknown))
                continue
            for arg in site.args:
                if (index is not None and arg.index == index) or (
                    keyword is not None and arg.keyword == keyword
                ):
                    out.append(ProjectArg(path, site, arg))
        return out

    # -- values passed to parameters (project.passing) -------------------------
    @cached_property
    def _passing_by_callee(self) -> dict[str, list[tuple[str, PassingSite]]]:
        def entries(summary: ModuleSummary) -> Iterator[tuple[str, tuple[str, PassingSite]]]:
            for site in summary.passing:
                ref = self.resolve(site.callee, summary.path)
                if ref is not None:
                    yield ref, (summary.path, site)

        return self._table("_passing_by_callee", entries)

    @cached_property
    def _called(self) -> dict[str, list[int]]:
        def entries(summary: ModuleSummary) -> Iterator[tuple[str, int]]:
            yield from summary.called

        return self._table("_called", entries)

    def passed_values(
        self, func_ref: str, index: int | None, keyword: str | None, _depth: int = 0
    ) -> list[tuple[str, PassingSite, str]] | None:
        """What every call site in the project passes to ``func_ref``'s
        parameter at ``index`` (counted after ``self`` for a method) or
        named ``keyword``: (path, site, the reference of the project name
        whose call built it). None (unknown, never a guess) when there is
        no such site, when some site passes anything else, and when the
        function's name is called (with an argument) anywhere in the project
        text more often than the kept sites call it: another caller, a
        method of the same name on another class, a call inside an
        expression. A site passing its own caller's parameter (``fit(model)``
        calling ``evaluate(model, loader)``) holds what ``fit``'s call sites
        pass, at most three callers up."""
        name = func_ref.rpartition(".")[2]
        sites = self._passing_by_callee.get(func_ref, ())
        if not sites or sum(self._called.get(name, ())) != len(sites):
            return None
        found: list[tuple[str, PassingSite, str]] = []
        for path, site in sites:
            arg = next(
                (
                    a
                    for a in site.args
                    if (index is not None and a.index == index)
                    or (keyword is not None and a.keyword == keyword)
                ),
                None,
            )
            if arg is None:
                if site.splat:
                    return None  # *args/**kwargs may pass it
                continue  # not passed: the parameter's default
            if arg.origin.startswith("param:") and _depth < 3:
                upper = self._param_values(path, arg.origin[6:], _depth + 1)
                if upper is None:
                    return None
                found.extend(upper)
                continue
            if not arg.origin.startswith("make:"):
                return None
            found.append((path, site, arg.origin[5:]))
        return found or None

    def _param_values(
        self, path: str, handle: str, depth: int
    ) -> list[tuple[str, PassingSite, str]] | None:
        """What the callers pass to the parameter ``handle``
        (``<qual>:<index>:<name>``, from :mod:`torchtrap.project.passing`)
        of a function or method defined in the file at ``path``."""
        qual, position, keyword = handle.split(":", 2)
        head, _, method = qual.partition(".")
        base = self.ref(path, head)
        if base is None:
            return None
        index = int(position) if position else None
        if method and index is not None:
            index -= 1  # counted after ``self``, as the call sites count
        ref = f"{base}.{method}" if method else base
        return self.passed_values(ref, index, keyword, depth)

    def made_class(self, ref: str, importer: str | None = None, _depth: int = 0) -> str | None:
        """The project class whose instance calling ``ref`` gives: the class
        itself, or what a factory function returns (``vgg16_bn`` → ``_vgg`` →
        ``VGG``), at most four factories deep; None when unknown."""
        resolved = self.resolve(ref, importer)
        if resolved is None or _depth > 4:
            return None
        if self.class_fact(resolved) is not None:
            return resolved
        function = self.function(resolved)
        if function is None or function.makes is None:
            return None
        found = self._split(resolved)
        where = found[0].path if found is not None else None
        return self.made_class(function.makes, where, _depth + 1)

    def call_sites(self, func_ref: str) -> list[tuple[str, CallSite]]:
        """Every call site of ``func_ref`` that passes a tracked argument."""
        _asked(func_ref)
        found = list(self._sites_by_callee.get(func_ref, ()))
        for path, _ in found:
            _read(self._by_path.get(os.path.abspath(path)))
        return found

    def provided(self, summary: ModuleSummary) -> frozenset[str]:
        """The references ``summary`` answers table queries for: what it
        defines, the callees of its call sites, the classes its DataLoaders
        load and its classes' bases (resolved in this project). Made once
        per summary (a project does not change)."""
        hit = self._provided.get(id(summary))
        if hit is not None and hit[0] is summary:
            return hit[1]
        found = frozenset(self._provides(summary))
        self._provided[id(summary)] = (summary, found)
        return found

    def _provides(self, summary: ModuleSummary) -> set[str]:
        token = _READS.set(None)
        try:
            key = module_key(summary)
            found = {f"{key}.{name}" for name in (*summary.functions, *summary.classes)}
            found.update(f"{key}.{name}" for name in summary.assigned)
            for site in summary.call_sites:
                found.add(self.resolve(site.callee, summary.path) or site.callee)
            for fact in summary.dataloaders:
                if fact.dataset:
                    found.add(self.resolve(fact.dataset, summary.path) or fact.dataset)
            for name in summary.classes:
                found.update(b for b in self.bases(f"{key}.{name}") if b)
            return found
        finally:
            _READS.reset(token)

    # -- identity --------------------------------------------------------------
    @cached_property
    def digest(self) -> str:
        """Changes whenever any summary changes (cache key of findings that
        depend on other files)."""
        h = hashlib.blake2b(digest_size=16)
        for summary in self:
            # repr, not pickle: pickle's bytes depend on object identity
            # (memo), and a summary read from the cache must hash the same.
            h.update(repr(summary).encode("utf-8", "replace"))
        return h.hexdigest()
