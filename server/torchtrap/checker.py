"""``torchtrap check`` with the project index: two passes over the files.

1. Index: each checked file is parsed once, linted with the project still
   PENDING and summarised from that same parse; the other importable
   modules of its project root are summarised only. Files whose rules did
   not ask for the project are done.
2. Lint again, with the complete project, only the files whose rules
   asked for it (``NeedsProject``).

Both passes run in a process pool with ``-j N``; results keep the order of
the files, and the project is built from summaries sorted by path, so the
output does not depend on N. Unchanged files come from the cache
(``torchtrap.project.cache``) without being parsed.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from torchtrap.config import Config
from torchtrap.discovery import ConfigLookup
from torchtrap.output import FileReport, hide_hints
from torchtrap.project.build import MAX_PROJECT_FILES, layout_for, project_files
from torchtrap.project.cache import Cache, Entry, entry_key, rules_key
from torchtrap.project.index import PENDING, Project
from torchtrap.project.layout import module_name
from torchtrap.project.summary import ModuleSummary

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from torchtrap.engine import Parsed

# Below this many files a process pool costs more than it saves.
PARALLEL_MIN_FILES = 24

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Item:
    """One file of a project: checked (linted and reported) or indexed only."""

    path: str
    config: Config
    root: str
    module: tuple[str, bool]
    checked: bool
    data: bytes | None = None
    key: str = ""
    summary: ModuleSummary | None = None
    report: FileReport | None = None  # final (pass 1 or cache)
    needs_project: bool = False
    # Without a process pool: pass 1's parse (engine.Parsed) of a file that
    # needs the project, for pass 2's lint; dropped once used.
    parsed: Parsed | None = None


@dataclass
class Options:
    fix: bool = False
    unsafe: bool = False
    diff: bool = False
    jobs: int = 1
    cache: Cache | None = None
    progress: Callable[[int, int], None] | None = None
    warnings: list[str] = field(default_factory=list)


# -- worker side -------------------------------------------------------------


def _first_pass(item: Item) -> tuple[ModuleSummary | None, FileReport | None, bool]:
    """(summary, final report or None, needs the project)."""
    summary, report, needs, _ = _first_pass_keeping(item)
    return summary, report, needs


def _first_pass_keeping(
    item: Item,
) -> tuple[ModuleSummary | None, FileReport | None, bool, Parsed | None]:
    """:func:`_first_pass`, and the parse of a file that needs the project
    (None otherwise). In-process only: a tree does not
    come back from a worker cheaply."""
    from torchtrap.engine import analyse

    assert item.data is not None
    if not item.checked:
        from torchtrap.project.build import summarize_source

        return summarize_source(item.data, item.path, item.module), None, False, None
    result = analyse(item.data, item.path, item.config, project=PENDING, module=item.module)
    if result.needs_project:
        return result.summary, None, True, result.parsed
    report = FileReport(item.path, [f.detached(item.config.fix_edits) for f in result.findings])
    return result.summary, report, False, None


_PROJECTS: dict[str, dict[str, Project]] = {}


def _load_projects(file: str) -> dict[str, Project]:
    if file not in _PROJECTS:
        _PROJECTS.clear()
        with open(file, "rb") as f:
            _PROJECTS[file] = pickle.load(f)
    return _PROJECTS[file]


def _second_pass(task: tuple[str, Config, str, str, bool, bool, bool]) -> FileReport:
    path, config, root, projects_file, fix, unsafe, diff = task
    project = _load_projects(projects_file).get(root) if projects_file else None
    return check_file((path, config, None, fix, unsafe, diff), project)


# -- driver ------------------------------------------------------------------


def _map(
    pool: Executor | None, fn: Callable[[T], R], items: list[T], chunksize: int = 8
) -> Iterator[R]:
    if pool is None:
        return map(fn, items)
    return pool.map(fn, items, chunksize=chunksize)


def project_items(
    files: list[Path],
    configs: ConfigLookup,
    arg_roots: dict[Path, Path],
    warn: Callable[[str], None],
    walked: set[Path] = frozenset(),  # type: ignore[assignment]
) -> list[Item]:
    """The checked files, then the other modules of their project roots
    (not walked again when the root was walked as a checked folder)."""
    items: list[Item] = []
    checked: set[str] = set()
    roots: dict[str, Config] = {}
    folder_configs: dict[str, Config] = {}
    layouts: dict[tuple[str, int], tuple[str, list[Path]]] = {}

    def config_of(folder: str) -> Config:
        if folder not in folder_configs:
            folder_configs[folder] = configs(Path(folder))
        return folder_configs[folder]

    def layout_of(path: str, config: Config, fallback: Path | None) -> tuple[str, list[Path]]:
        # One layout per folder: pathlib per file costs more than the cache saves.
        key = (os.path.dirname(path), id(config))
        if key not in layouts:
            root, sources = file_layout(Path(path), config, fallback)
            layouts[key] = (str(root), sources)
        return layouts[key]

    for file in files:
        path = os.path.abspath(file)
        config = config_of(os.path.dirname(path))
        root, sources = layout_of(path, config, arg_roots.get(file))
        module = module_name(path, sources) if not path.endswith(".ipynb") else ("", False)
        items.append(Item(str(file), config, root, module, True))
        checked.add(path)
        roots.setdefault(root, config)
    for root_name, config in sorted(roots.items()):
        if Path(root_name) in walked:
            continue
        count = 0
        for extra in project_files(Path(root_name), config, MAX_PROJECT_FILES + 1):
            count += 1
            if count > MAX_PROJECT_FILES:
                warn(
                    f"{root_name}: more than {MAX_PROJECT_FILES:,} modules; "
                    "only the first ones are indexed"
                )
                break
            path = os.path.abspath(extra)
            if path in checked:
                continue
            checked.add(path)
            extra_config = config_of(os.path.dirname(path))
            _, sources = layout_of(path, extra_config, Path(root_name))
            module = module_name(path, sources)
            items.append(Item(str(extra), extra_config, root_name, module, False))
    return items


def file_layout(path: Path, config: Config, fallback: Path | None) -> tuple[Path, list[Path]]:
    root, sources = layout_for(path, config)
    if config.root is None and fallback is not None and root == path.parent:
        # No marker above the file: the folder named on the command line.
        from torchtrap.project.layout import find_root, source_roots

        if find_root(path) is None:
            return fallback, source_roots(fallback)
    return root, sources


def run(items: list[Item], options: Options) -> list[FileReport]:
    """Reports for the checked items, in their order."""
    from torchtrap.engine import unreadable_finding

    cache = options.cache
    fix_mode = options.fix or options.diff
    rules = rules_key()
    unreadable = 0
    for item in items:
        if item.path.endswith(".ipynb"):
            continue  # notebooks are linted alone, in pass 2
        try:
            item.data = Path(item.path).read_bytes()
        except OSError as err:
            if item.checked:
                item.report = FileReport(
                    item.path,
                    [unreadable_finding(item.path, f"cannot read file: {err.strerror or err}")],
                )
            else:
                unreadable += 1
            continue
        item.key = entry_key(item.data, item.config, item.module, rules)
        entry = cache.get(os.path.abspath(item.path), item.key) if cache else None
        if entry is None:
            continue
        item.summary = entry.summary
        if not item.checked or fix_mode:
            continue
        if entry.findings is not None:
            item.report = FileReport(item.path, list(entry.findings))
        elif entry.project_digest is not None:
            item.needs_project = True
        else:
            item.summary = None  # indexed, never linted: lint it now
    if unreadable:
        options.warnings.append(
            f"{unreadable} {'module' if unreadable == 1 else 'modules'} of the project "
            "could not be read while indexing (deleted or unreadable); skipped"
        )
    todo = [
        i
        for i in items
        if i.data is not None and i.report is None and not i.needs_project and i.summary is None
    ]

    jobs = options.jobs
    pool: Executor | None = None
    total_work = len(todo) + sum(1 for i in items if i.checked)
    if jobs > 1 and total_work >= PARALLEL_MIN_FILES:
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=jobs)
    # Syntax trees are freed by reference counting; the collector's passes
    # find next to nothing (541 objects in a cold check of the four bench
    # corpora) but walked every tree kept for the second pass (two thirds of
    # the files) twice: 15% of a cold run at the default threshold, 6% at
    # 500,000 (2026-12-07), none with the collector off; peak memory the
    # same (570 MB). Models break their own cycles (`Solver.release`), and
    # the whole-program models' objects are not walked after their build.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _pass_one(todo, pool, options)
        return _pass_two(items, pool, options)
    finally:
        if enabled:
            gc.enable()
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _pass_one(todo: list[Item], pool: Executor | None, options: Options) -> None:
    fix_mode = options.fix or options.diff
    work = [
        Item(i.path, i.config, i.root, i.module, i.checked and not fix_mode, i.data) for i in todo
    ]
    cache = options.cache
    progress = options.progress
    results: Iterable[tuple[ModuleSummary | None, FileReport | None, bool, Parsed | None]]
    if pool is None:
        results = map(_first_pass_keeping, work)
    else:
        results = (result + (None,) for result in _map(pool, _first_pass, work))
    for i, (item, (summary, report, needs, parsed)) in enumerate(
        zip(todo, results, strict=True), 1
    ):
        if progress is not None and (i % 50 == 0 or i == len(todo)):
            progress(i, len(todo))
        item.summary = summary
        if fix_mode or not item.checked:
            if cache is not None:
                cache.put(os.path.abspath(item.path), Entry(item.key, summary, None))
            continue
        item.report = report
        item.needs_project = needs
        item.parsed = parsed
        if cache is not None:
            cache.put(
                os.path.abspath(item.path),
                Entry(item.key, summary, report.findings if report is not None else None),
            )


def _pass_two(items: list[Item], pool: Executor | None, options: Options) -> list[FileReport]:
    fix_mode = options.fix or options.diff
    projects: dict[str, Project] = {}
    by_root: dict[str, list[ModuleSummary]] = {}
    for item in items:
        if item.summary is not None:
            by_root.setdefault(item.root, []).append(item.summary)
    for root, summaries in by_root.items():
        projects[root] = Project(summaries)
    # Findings that used the project are valid for the same indexed files
    # (a summary is a function of its file's cache key).
    digests: dict[str, str] = {}
    for root in by_root:
        keys = sorted((i.path, i.key) for i in items if i.root == root and i.summary is not None)
        digests[root] = entry_key(repr(keys).encode(), Config(), ("", False))

    cache = options.cache
    second: list[Item] = []
    for item in items:
        if not item.checked:
            continue
        if fix_mode or item.path.endswith(".ipynb"):
            second.append(item)
        elif item.report is None and item.needs_project:
            entry = cache.get(os.path.abspath(item.path), item.key) if cache else None
            if (
                entry is not None
                and entry.project_digest == digests.get(item.root)
                and entry.project_findings is not None
            ):
                item.report = FileReport(item.path, list(entry.project_findings))
            else:
                second.append(item)

    projects_file = ""
    if second and pool is not None:
        import tempfile

        fd, projects_file = tempfile.mkstemp(prefix="torchtrap-project.", suffix=".pickle")
        with os.fdopen(fd, "wb") as stream:
            pickle.dump(projects, stream, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        tasks = [
            (i.path, i.config, i.root, projects_file, options.fix, options.unsafe, options.diff)
            for i in second
        ]
        if pool is None:
            reports: Iterable[FileReport] = (
                _check_with(i, projects.get(i.root), options) for i in second
            )
        else:
            reports = _map(pool, _second_pass, tasks, chunksize=2)
        for item, report in zip(second, reports, strict=True):
            item.report = report
            digest = digests.get(item.root)
            if cache is not None and item.needs_project and digest is not None:
                entry = Entry(item.key, item.summary, None, digest, report.findings)
                cache.put(os.path.abspath(item.path), entry)
    finally:
        if projects_file:
            with contextlib.suppress(OSError):
                os.unlink(projects_file)

    out: list[FileReport] = []
    for item in items:
        if not item.checked:
            continue
        report = hide_hints(item.report or FileReport(item.path), item.config)
        if report.source is None and item.data is not None and report.findings:
            report.source = _decode(item.data)
        out.append(report)
    return out


def _check_with(item: Item, project: Project | None, options: Options) -> FileReport:
    parsed, item.parsed = item.parsed, None
    return check_file(
        (item.path, item.config, None, options.fix, options.unsafe, options.diff),
        project,
        parsed=parsed,
    )


def _decode(data: bytes) -> str | None:
    from torchtrap.source import UndecodableSource, decode_source

    try:
        return decode_source(data)
    except UndecodableSource:
        return None


def check_file(
    task: tuple[str, Config, str | None, bool, bool, bool],
    project: Project | None = None,
    *,
    parsed: Parsed | None = None,
) -> FileReport:
    """Lint (and maybe fix) one file; runs in a worker process with -j N.
    ``project``: the index of its project (None: the file alone).
    ``parsed``: the file's parse from the first pass,
    linted instead of reading and parsing the file again."""
    from torchtrap.engine import fix_source, lint, unreadable_finding
    from torchtrap.source import UndecodableSource, decode_source

    path, config, stdin_text, fix, unsafe, diff = task
    unsafe = unsafe or config.unsafe_fixes  # `unsafe-fixes = true` works like --unsafe-fixes
    report = FileReport(path)
    if parsed is not None and not (fix or diff) and not path.endswith(".ipynb"):
        return _lint_report(report, parsed.text, config, project, parsed)
    try:
        data = stdin_text.encode("utf-8") if stdin_text is not None else Path(path).read_bytes()
    except OSError as err:
        report.findings = [unreadable_finding(path, f"cannot read file: {err.strerror or err}")]
        return report
    if path.endswith(".ipynb"):
        return _check_notebook(report, data, config, fix, unsafe, diff, project)
    try:
        text = decode_source(data)
    except UndecodableSource:
        report.findings = lint(data, path, config)
        return report
    if fix or diff:
        fixed, count = fix_source(text, path, config, unsafe=unsafe, project=project)
        if count:
            if diff:
                report.diff = "".join(
                    difflib.unified_diff(
                        text.splitlines(keepends=True),
                        fixed.splitlines(keepends=True),
                        fromfile=f"a/{path}",
                        tofile=f"b/{path}",
                    )
                )
            elif stdin_text is None:
                bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
                Path(path).write_bytes(bom + fixed.encode("utf-8"))
                report.fixed = count
                text = fixed
            else:
                report.fixed = count
                text = fixed
    return _lint_report(report, text, config, project, None)


def _lint_report(
    report: FileReport, text: str, config: Config, project: Project | None, parsed: Parsed | None
) -> FileReport:
    """``report`` with the findings of ``text`` (linted from ``parsed`` when given)."""
    from torchtrap.engine import lint

    report.source = text
    found = lint(text, report.path, config, project=project, parsed=parsed)
    report.findings = [f.detached(config.fix_edits) for f in found]
    return report


def _check_notebook(
    report: FileReport,
    data: bytes,
    config: Config,
    fix: bool,
    unsafe: bool,
    diff: bool,
    project: Project | None,
) -> FileReport:
    from torchtrap.engine import unreadable_finding
    from torchtrap.ipynb import NotebookError, NotebookFile, lint_notebook
    from torchtrap.notebook import fix_cells

    try:
        notebook = NotebookFile.parse(data)
    except NotebookError as err:
        report.findings = [unreadable_finding(report.path, str(err))]
        return report
    if fix or diff:
        texts, count = fix_cells(
            notebook.texts, report.path, config, unsafe=unsafe, project=project
        )
        if count:
            new_data = notebook.dumps(texts)
            if diff:
                report.diff = "".join(
                    difflib.unified_diff(
                        data.decode("utf-8-sig").splitlines(keepends=True),
                        new_data.decode("utf-8").splitlines(keepends=True),
                        fromfile=f"a/{report.path}",
                        tofile=f"b/{report.path}",
                    )
                )
            else:
                Path(report.path).write_bytes(new_data)
                report.fixed = count
                notebook.texts = texts
    findings, report.cells = lint_notebook(notebook, report.path, config, project)
    report.findings = [f.detached(config.fix_edits) for f in findings]
    return report
