"""The whole project's points-to model, for the rules that ask it.

Built once per project and process from the project's files (the one
being linted from its live text), and shared by every file's lint: a
``check`` of a project pays for it once. A project past ``MAX_FILES``, or
an edited buffer in a large project, gets no model: its rules answer from
the file and the index alone.
"""

from __future__ import annotations

import ast
import contextlib
import os
from collections import OrderedDict
from dataclasses import dataclass

from torchtrap.core.analysis import Analysis, analyse
from torchtrap.core.objects import Site
from torchtrap.core.program import MAX_FILE_BYTES, Program
from torchtrap.core.solver import ALL_LOADERS, HF_TRAINERS
from torchtrap.findings import Range
from torchtrap.project.index import Project
from torchtrap.project.summary import ModuleSummary, module_key

MAX_FILES = 3_000  # the model of a project this size takes seconds; past it, none
MAX_EDITED_FILES = 300  # an unsaved buffer: the model is rebuilt for it


def limit(files: int, edited_files: int) -> None:
    """Smaller limits for an editor, which lints on every keystroke: the
    model is built only for projects it can build within a keystroke's
    budget (measured: about 2 s per 100 files of real code)."""
    global MAX_FILES, MAX_EDITED_FILES, MAX_IMPORTED, _SPARE_SLOTS, MAX_TREES_BYTES
    MAX_FILES, MAX_EDITED_FILES = files, edited_files
    MAX_IMPORTED = min(MAX_IMPORTED, files)
    # An editor's index changes with every edit: what a check keeps for the
    # next file (evicted models, parsed files) would only hold old indexes.
    _SPARE_SLOTS = 0
    MAX_TREES_BYTES = 0


_MEMO: OrderedDict[object, tuple[Project | None, Analysis]] = OrderedDict()
_MEMO_SLOTS = 4
# Models evicted from ``_MEMO`` but not yet released: asked again with the
# same key (pytorch/examples' loaders' model, evicted by four one-file
# models between two loader files), the model is taken back instead of
# built again (4 s there). ``_MEMO`` itself keeps its four slots: which
# models it holds is what ``module_model`` may reuse.
_SPARE: OrderedDict[object, tuple[Project | None, Analysis]] = OrderedDict()
_SPARE_SLOTS = 4
# Keys of models refused for their size (the owner kept, so that its id is
# not reused while the entry lives).
_REFUSED: dict[object, tuple[Project | None]] = {}
_REFUSED_SLOTS = 256
_ENTRIES: dict[int, tuple[list[ModuleSummary], dict[str, tuple[str, bool]], frozenset[str]]] = {}
MAX_IMPORTED = 40  # modules a one-expression question may cost
# Source bytes a model may cover. Measured (2-core machine, loaded): about
# 10 s per MB of source, and 2-9 GB of memory past 3 MB (timm, MONAI);
# a check must stay within a few seconds of its cold time.
MAX_SOURCE_BYTES = 600_000
# Parsed files the models read, by path: ((mtime, size), tree), oldest
# first, up to this many bytes of source (a tree takes ~50x its source).
_TREES: OrderedDict[str, tuple[tuple[int, int], ast.Module]] = OrderedDict()
_TREES_BYTES = [0]
MAX_TREES_BYTES = 2 * MAX_SOURCE_BYTES
MAX_IMPORTED_BYTES = 150_000
MAX_BUILDS = 40  # one-expression models per project index (each file its own)
# (the project index the count is for, models built for it)
_BUILDS: list[tuple[Project | None, int]] = [(None, 0)]
_DISK: list[tuple[object, bool]] = [((), False)]  # the last file compared with its text
_REACHED: dict[int, tuple[Project, list[ModuleSummary]]] = {}
# Indexes whose tables are kept (an editor makes a new one per edit).
_PROJECT_SLOTS = 1
# What each module imports (and the packages above it), per index: every
# file's closure walks its neighbours' imports again (a third of TT213's
# time on timm, whose closures pass the cap).
_IMPORTS: dict[int, tuple[Project, dict[str, tuple[ModuleSummary, list[str]]]]] = {}


@dataclass
class Model:
    analysis: Analysis
    module: str  # the linted file's module name in the model

    def expressions(self, module: str) -> dict[tuple[int, int], list[ast.expr]]:
        """The module's expressions by start position, made once per model
        (findings and their related rows look them up by position: the
        model may have parsed a file the linter parsed too)."""
        key = ("positions", module)
        index = self.analysis.memo.get(key)
        if index is None:
            index = self.analysis.memo[key] = {}
            found = self.analysis.solver.program.modules.get(module)
            for node in ast.walk(found.tree) if found is not None else ():
                if isinstance(node, ast.expr):
                    index.setdefault((node.lineno, node.col_offset), []).append(node)
        return index

    def twin(self, node: ast.expr) -> ast.expr | None:
        """The model's node for ``node`` of the linted file: same place, type and end."""
        for other in self.expressions(self.module).get((node.lineno, node.col_offset), ()):
            same_end = (other.end_lineno, other.end_col_offset) == (
                node.end_lineno,
                node.end_col_offset,
            )
            if type(other) is type(node) and same_end:
                return other
        return None

    def where(self, module: str, line: int, col: int) -> tuple[str, Range] | None:
        """The path and range of the widest expression that starts at a site."""
        found = self.analysis.solver.program.modules.get(module)
        if found is None:
            return None
        starting = self.expressions(module).get((line, col))
        if not starting:
            return found.obj.path, Range.of(line, col, line, col)
        best = max(starting, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
        end_line = best.end_lineno or line
        end_col = best.end_col_offset if best.end_col_offset is not None else col
        return found.obj.path, Range.of(line, col, end_line, end_col)

    def calls_to(self, site: Site) -> list[tuple[str, Range, str]]:
        """The calls a value made at ``site`` came out of, outermost first:
        (path, range of the call, ``net.pi()``), for the value paths that
        findings show (the model analyses a small function once per call
        site, and the object remembers which)."""
        rows = []
        for call in site.ctx:
            module = self.analysis.solver.program.modules.get(call.module)
            starting = self.expressions(call.module).get((call.line, call.col), ())
            # `f(x).g(y)`: both calls start here; the site is the innermost.
            calls = [n for n in starting if isinstance(n, ast.Call)]
            if module is None or not calls:
                continue
            node = min(calls, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
            rng = Range.of(
                node.lineno,
                node.col_offset,
                node.end_lineno or node.lineno,
                node.end_col_offset if node.end_col_offset is not None else node.col_offset,
            )
            func = ast.unparse(node.func)
            rows.append((module.obj.path, rng, f"`{func}()`" if len(func) <= 40 else "the call"))
        return rows


def program_model(project: Project | None, path: str, text: str, tree: ast.Module) -> Model | None:
    """The model the worker rules ask: the modules that build DataLoaders
    and what they import, in the project the file at ``path`` (now holding
    ``text``, parsed as ``tree``) belongs to, or the file alone without a
    project; None when too large or when this file builds no DataLoader."""
    this = os.path.abspath(path)
    own = project.summary(this) if project is not None else None
    if own is not None and not _builds_loaders(own):
        return None  # no DataLoader here: nothing for the model to answer
    return _model(project, this, text, tree, _reached(project, this), MAX_FILES, MAX_SOURCE_BYTES)


def reached_model(project: Project | None, path: str, text: str, tree: ast.Module) -> Model | None:
    """The loaders' model asked from a file that may build none (a
    dataset's, a helper's): the same model as the loaders' files get when
    this file is one they reach, None otherwise (nothing is built for a
    file no loader reaches)."""
    if project is None or not path.endswith(".py"):
        return None  # a notebook: no loader imports it (and each is a project of its own)
    this = os.path.abspath(path)
    if project.summary(this) is None:
        return None
    reached = _reached(project, this)
    if this not in _entries(reached)[0]:
        return None
    return _model(project, this, text, tree, reached, MAX_FILES, MAX_SOURCE_BYTES)


def module_model(project: Project | None, path: str, text: str, tree: ast.Module) -> Model | None:
    """A model of this file and what it imports (transitively), for a
    question about one of its expressions (what a module's ``forward``
    returns); the loaders' model when it already holds the file. None past
    ``MAX_IMPORTED`` modules: a question about one expression is not worth a
    whole-program pass."""
    this = os.path.abspath(path)
    for owner, analysis in _MEMO.values():
        if owner is not project or owner is None:
            continue
        module = next(
            (m for m in analysis.solver.program.modules.values() if m.obj.path == this), None
        )
        if module is not None and _same_as_disk(this, text):
            return Model(analysis, module.obj.name)
    if project is None:
        return _one_expression_model(project, this, text, tree)
    # Past the one-expression bounds, the loaders' model where it holds the
    # file: the same model the worker rules build, so that a finding does not
    # depend on whether they were selected (`--select TT220` alone).
    return _one_expression_model(project, this, text, tree) or reached_model(
        project, path, text, tree
    )


def _one_expression_model(
    project: Project | None, this: str, text: str, tree: ast.Module
) -> Model | None:
    if _BUILDS[0][0] is not project:
        _BUILDS[0] = (project, 0)  # a new check, or the editor's index changed
    if _BUILDS[0][1] >= MAX_BUILDS:
        return None  # a large project with many such questions: not worth a pass each
    if project is None:
        return _model(project, this, text, tree, [], MAX_IMPORTED, MAX_IMPORTED_BYTES)
    own = project.summary(this)
    reached = _closure(project, [own], MAX_IMPORTED) if own is not None else []
    if len(reached) > MAX_IMPORTED:
        return None
    if own is not None:
        # The files that import this one call its functions and set its
        # objects' attributes (`model.add_loss_op(nn.NLLLoss())` in train.py):
        # with them when the bound allows, else this file's closure alone.
        wider = _closure(project, [own, *_importers(project, own)], MAX_IMPORTED)
        if len(wider) <= MAX_IMPORTED:
            reached = wider
    return _model(project, this, text, tree, reached, MAX_IMPORTED, MAX_IMPORTED_BYTES)


def _model(
    project: Project | None,
    this: str,
    text: str,
    tree: ast.Module,
    reached: list[ModuleSummary],
    most: int,
    most_bytes: int,
) -> Model | None:
    entries, paths = _entries(reached)
    if this not in entries:
        entries = dict(entries)
        entries[this] = (_stem(this), False)
        paths = frozenset(entries)
    if len(entries) > most:
        return None
    edited = not _same_as_disk(this, text)
    # One model per project index: `check` lints every file against the same
    # one, an editor makes a new one when a file changes. The index is kept
    # with the model so that its id is not reused while the entry lives.
    # A file alone (no index, or an index of this one file, made anew on
    # every lint) is known by its text; a project by its index.
    alone = project is None or len(entries) == 1
    owner = None if alone else project
    # An editor's open documents: the model reads their text, not the disk.
    texts = {p: t for p, t in (project.texts.items() if project else ()) if p in entries}
    texts.pop(this, None)
    key = (
        id(owner),
        this if alone else paths,
        hash(text) if edited or alone else None,
        tuple(sorted((p, hash(t)) for p, t in texts.items())),
    )
    found = _MEMO.get(key)
    if found is None or found[0] is not owner:
        refused = _REFUSED.get((key, most_bytes))
        if refused is not None and refused[0] is owner:
            return None  # past a cap when last asked: sizing it again stats every file
        # Sized only when built: every file of a project asks the same
        # model, and a stat of each of its files per lint added up (466
        # files of Diffusion-LM asked it: 0.05 s each)
        if _source_bytes(entries, this, text) > most_bytes or (
            edited and len(entries) > MAX_EDITED_FILES
        ):
            if len(_REFUSED) >= _REFUSED_SLOTS or any(o[0] is not owner for o in _REFUSED.values()):
                _REFUSED.clear()  # one index at a time: an editor's newest
            _REFUSED[(key, most_bytes)] = (owner,)
            return None
        _BUILDS[0] = (_BUILDS[0][0], _BUILDS[0][1] + 1)
        spare = _SPARE.pop(key, None)
        if spare is not None and spare[0] is owner:
            found = spare  # evicted, not yet released: the same inputs, the same model
        else:
            found = (owner, analyse(_load(entries, this, tree, texts)))
        _MEMO[key] = found
        analysis = found[1]
        while len(_MEMO) > _MEMO_SLOTS:
            evicted_key, evicted = _MEMO.popitem(last=False)
            _SPARE[evicted_key] = evicted
            while len(_SPARE) > _SPARE_SLOTS:
                _SPARE.popitem(last=False)[1][1].solver.release()
    else:
        _MEMO.move_to_end(key)
        analysis = found[1]
    if not analysis.solver.complete:
        return None  # stopped at its budget: what it holds is partial, no evidence
    return Model(analysis, entries[this][0])


def _entries(reached: list[ModuleSummary]) -> tuple[dict[str, tuple[str, bool]], frozenset[str]]:
    """The model's files (absolute path: module name, is a package) for
    ``reached``, made once per list: every file of a project asks the
    loaders' model with the same list (Lightning: a tenth of its check
    went to these paths and the key made of them)."""
    memo = _ENTRIES.get(id(reached))
    if memo is not None and memo[0] is reached:
        return memo[1], memo[2]
    entries: dict[str, tuple[str, bool]] = {}
    for summary in reached:
        where = os.path.abspath(summary.path)
        entries[where] = (summary.module or _stem(where), summary.is_package)
    paths = frozenset(entries)
    # Kept for the loaders' lists only (`_reached`'s, one per index kept);
    # a one-expression model's list is made anew on every ask.
    if any(known[1] is reached for known in _REACHED.values()):
        if len(_ENTRIES) >= _PROJECT_SLOTS:
            _ENTRIES.clear()
        _ENTRIES[id(reached)] = (reached, entries, paths)
    return entries, paths


def _builds_loaders(summary: ModuleSummary) -> bool:
    """A module that builds DataLoaders: by hand, through a Hugging Face
    ``Trainer`` it imports (which builds them from its datasets), or as a
    ``DataLoader`` subclass (whose ``super().__init__(dataset, ...)`` does)."""
    return (
        bool(summary.dataloaders)
        or any(ref in HF_TRAINERS for ref in summary.imports.values())
        or any(base in ALL_LOADERS for cls in summary.classes.values() for base in cls.bases)
    )


def _reached(project: Project | None, this: str) -> list[ModuleSummary]:
    """The modules the program's DataLoaders can reach: every module that
    builds one, this file, and what they import, transitively (with the
    packages above each). The rest of the project cannot change what a
    loader receives, and skipping it keeps the model small."""
    if project is None:
        return []
    memo = _REACHED.get(id(project))
    if memo is not None and memo[0] is project:
        return memo[1]
    builders = [s for s in project if _builds_loaders(s)]
    found = _closure(project, builders)
    # The modules that import a loader's module call its helpers
    # (``load_data(ids, load_embedding())`` in the training script): what
    # they pass is what the workers get. Taken when the model stays within
    # its bounds, else the loaders' own closure as before.
    keys = {module_key(s) for s in builders}
    callers = [s for s in project if keys.intersection(_imports(project, s))] if keys else []
    if callers:
        # the callers and what they import directly (the helper that makes
        # what they pass), not their whole closure (their models, trainers)
        seen = {s.path for s in found}
        wider = list(found)
        for summary in callers + [
            project.modules[n] for c in callers for n in _imports(project, c)
        ]:
            if summary.path not in seen:
                seen.add(summary.path)
                wider.append(summary)
        sizes = {os.path.abspath(s.path): ("", False) for s in wider}
        if len(wider) <= MAX_FILES and _source_bytes(sizes, "", "") <= MAX_SOURCE_BYTES:
            found = wider
    if len(_REACHED) >= _PROJECT_SLOTS:
        _REACHED.clear()  # one project at a time: check has one, an editor's newest
    _REACHED[id(project)] = (project, found)
    return found


def _closure(
    project: Project, roots: list[ModuleSummary], limit: int | None = None
) -> list[ModuleSummary]:
    """``roots`` and the project modules they import, transitively, with
    the packages above each (stopping past ``limit`` modules)."""
    seen: dict[str, ModuleSummary] = {}
    stack = list(roots)
    while stack and (limit is None or len(seen) <= limit):
        summary = stack.pop()
        if summary.path in seen:
            continue
        seen[summary.path] = summary
        stack.extend(project.modules[n] for n in _imports(project, summary))
    return list(seen.values())


def _importers(project: Project, summary: ModuleSummary) -> list[ModuleSummary]:
    """The project modules that import ``summary``'s module directly."""
    name = summary.module
    if not name:
        return []
    return [s for s in project if s.path != summary.path and name in _imports(project, s)]


def _imports(project: Project, summary: ModuleSummary) -> list[str]:
    """The project modules ``summary`` imports, and the packages above it."""
    memo = _IMPORTS.get(id(project))
    if memo is None or memo[0] is not project:
        if len(_IMPORTS) >= _PROJECT_SLOTS:
            _IMPORTS.clear()  # one project at a time
        memo = _IMPORTS[id(project)] = (project, {})
    known = memo[1].get(summary.path)
    if known is not None and known[0] is summary:
        return known[1]
    names = set(project.imported_modules(summary))
    parts = summary.module.split(".") if summary.module else []
    names.update(".".join(parts[:i]) for i in range(1, len(parts)))
    found = sorted(n for n in names if n in project.modules)
    memo[1][summary.path] = (summary, found)
    return found


def _source_bytes(entries: dict[str, tuple[str, bool]], this: str, text: str) -> int:
    total = len(text)
    for path in entries:
        if path != this:
            with contextlib.suppress(OSError):
                total += os.path.getsize(path)
    return total


def _stem(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem if stem.isidentifier() else "__main__"


def _same_as_disk(path: str, text: str) -> bool:
    """Whether the file on disk holds ``text``; read again only when the
    file or the text changed (every rule that asks a model asks this)."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    key = (path, stat.st_mtime_ns, stat.st_size, hash(text))
    if _DISK[0][0] != key:
        try:
            # utf-8-sig: the linter's text has no byte-order mark (NVlabs'
            # files start with one; read as "edited", each built a model)
            with open(path, encoding="utf-8-sig", newline="") as handle:
                same = handle.read() == text
        except (OSError, UnicodeDecodeError, ValueError):
            same = False
        _DISK[0] = (key, same)
    return _DISK[0][1]


def _parsed(path: str) -> ast.Module | None:
    """The file's tree as on disk, None past ``MAX_FILE_BYTES``; kept while
    the file is unchanged, for the next model over it (a check of
    detectron2 builds eight, over the same few dozen files, each parsing
    them again). The trees are read-only to the model, and what it learns
    of their syntax is kept on them (``core.scopes.scope_of``)."""
    stat = os.stat(path)
    if stat.st_size > MAX_FILE_BYTES:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    found = _TREES.get(path)
    if found is not None and found[0] == key:
        _TREES.move_to_end(path)
        return found[1]
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), filename=path)
    _TREES[path] = (key, tree)
    _TREES_BYTES[0] += stat.st_size - (found[0][1] if found is not None else 0)
    while _TREES_BYTES[0] > MAX_TREES_BYTES and len(_TREES) > 1:
        _, ((_, size), _) = _TREES.popitem(last=False)
        _TREES_BYTES[0] -= size
    return tree


def _load(
    entries: dict[str, tuple[str, bool]], this: str, tree: ast.Module, texts: dict[str, str]
) -> Program:
    program = Program()
    for path, (name, package) in sorted(entries.items()):
        if path == this:
            program.add(name, path, package, tree)
            continue
        try:
            if path in texts:  # an open document: its text, not the disk's
                program.add(name, path, package, ast.parse(texts[path], filename=path))
                continue
            parsed = _parsed(path)
            if parsed is not None:
                program.add(name, path, package, parsed)
        except (OSError, SyntaxError, ValueError, RecursionError) as error:
            program.skipped.append((path, f"{type(error).__name__}: {error}"))
    return program
