"""The project index in the language server: every module's summary, kept
current, so that rules see other files (``ctx.project``) as in ``check``.

- At start the workspace folders are indexed in a separate process (a
  thread would hold the GIL and slow down the lints of open files), with
  ``$/progress`` "Indexing N files"; cached summaries of unchanged files
  are reused (the cache lives in the editor's storage, see
  index_worker.py). Until it is ready, open files are linted alone; then
  all of them are linted again with the project.
- An open document's summary comes from its own lint (the editor's text,
  the same parse); a syntax error keeps its last good summary. Files
  changed outside the editor (``workspace/didChangeWatchedFiles``) and
  closed documents are summarised again from disk.
- When a summary changes, the open documents whose findings may rest on
  that module are linted again: those whose last lint read it, or asked
  the project about a reference it provides (a callee of its call sites,
  a class its DataLoaders load; ``project.index.Reads``): every call-site,
  return and attribute edge the value layer followed, however many files
  deep (``c.py``'s TT201 on the sigmoid that ``a.py`` passes, made in
  ``m.py`` and re-exported by ``helpers.py``). And, for what a lint could
  not see yet (a new import), those linked to it by an import either way
  (``train.py`` imports ``datasets.py``, and TT101 in ``datasets.py`` reads
  ``train.py``'s DataLoaders), or through one module between them, or
  both imported by a third: see project/graph.py. With workspace
  diagnostics, the closed files so linked are linted again too.

Everything here runs on the event loop except the parsing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torchtrap.lsp import index_worker
from torchtrap.lsp.host import IndexHost
from torchtrap.lsp.index_worker import Layout
from torchtrap.project.graph import ImportGraph
from torchtrap.project.index import Change, Project, Reads
from torchtrap.project.summary import ModuleSummary

if TYPE_CHECKING:
    from torchtrap.lsp.workspace import LintResult, Snapshot

log = logging.getLogger("torchtrap.lsp")

# Files per batch sent to the indexing process (progress granularity).
BATCH = 100
# More changed files than this in one watched-files notification (a git
# checkout) are summarised in a worker process, fewer in a lint thread.
PROCESS_MIN_FILES = 64
# Seconds to wait before re-linting a document whose own lint is in flight
# when another file changes (see ProjectIndex._relint).
RELINT_GRACE = 0.25
_SPAN = re.compile(r"Span\([^)]*\)")


def _shape(summary: ModuleSummary) -> str:
    """A summary without its positions: what the module defines and uses."""
    return _SPAN.sub("", repr(summary))


class ProjectIndex:
    def __init__(self, ls: IndexHost) -> None:
        self.ls = ls
        self.folders: list[str] = []
        self.layouts: dict[str, Layout] = {}  # absolute path -> root, module, config
        self.summaries: dict[str, dict[str, ModuleSummary]] = {}  # root -> path -> summary
        self._projects: dict[str, Project] = {}  # built on first use after a change
        # root -> path -> an open document's text (the whole-program model reads it)
        self.texts: dict[str, dict[str, str]] = {}
        self._graphs: dict[str, ImportGraph] = {}  # root -> who imports whom
        self._notebook_roots: dict[str, str | None] = {}  # notebook path -> project root
        # open document path -> what its last lint read of the project
        self._reads: dict[str, Reads] = {}
        self.ready = False
        self.generation = 0  # a newer build makes an older one's results stale
        self.files_indexed = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pool: Any = None  # the indexing process while it runs

    def stop(self) -> None:
        """On shutdown: drop the build in progress (its queued batches too)."""
        self.generation += 1
        self._cancel_build()

    def _cancel_build(self) -> None:
        """The indexing process stops after its current batch; the build
        that waited on it ends (its generation is stale anyway)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # -- building --------------------------------------------------------------
    def start(self, folders: Iterable[str]) -> None:
        """Index ``folders`` in the background (again, after a pyproject change)."""
        self.folders = sorted({os.path.abspath(f) for f in folders if os.path.isdir(f)})
        self.generation += 1
        self._cancel_build()  # a build of the old folders would be thrown away
        if self.folders:
            self._spawn(self._build(self.generation, list(self.folders)))
        elif self.ready:  # the last folder was closed: lint open files alone again
            self.layouts, self.summaries, self.texts = {}, {}, {}
            self._projects.clear()
            self._graphs.clear()
            self.ready = False
            self.files_indexed = 0
            for doc in self.ls.docs:
                self._relint(doc.uri)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _build(self, generation: int, folders: list[str]) -> None:
        loop = asyncio.get_running_loop()
        progress = _Progress(self.ls)
        pool = None
        try:
            # A small workspace is indexed in a lint thread (a process costs
            # more to start than it saves).
            if await loop.run_in_executor(self.ls.lint_pool, _has_files, folders):
                if generation != self.generation:
                    return  # superseded before it started
                pool = self._pool = _process_pool()
            executor: Any = pool or self.ls.lint_pool
            layouts, warnings = await loop.run_in_executor(executor, index_worker.discover, folders)
            await progress.begin(f"Indexing {len(layouts):,} files")
            # Each workspace folder keeps its own cache, in the editor's
            # storage (or the user's cache directory), not in the folder.
            groups: dict[str, list[str]] = {}
            for path in sorted(layouts):
                groups.setdefault(_folder_of(path, folders), []).append(path)
            base = self.ls.settings.cache_directory
            caches = {f: str(index_worker.cache_folder(f, base)) for f in groups}
            batches = [
                (caches[folder], [(p, layouts[p]) for p in paths[i : i + BATCH]])
                for folder, paths in groups.items()
                for i in range(0, len(paths), BATCH)
            ]
            futures = [
                loop.run_in_executor(executor, index_worker.summarize_packed, batch, cache)
                for cache, batch in batches
            ]
            blobs: list[bytes] = []
            done = 0
            for (_, batch), future in zip(batches, futures, strict=True):
                blobs.append(await future)
                done += len(batch)
                progress.report(f"Indexed {done:,}/{len(layouts):,} files", done, len(layouts))
            warnings += await loop.run_in_executor(executor, index_worker.save_caches)
        except (Exception, asyncio.CancelledError) as err:
            if generation != self.generation:  # superseded: its pool was shut down
                progress.end("restarted")
                return
            if isinstance(err, asyncio.CancelledError):
                progress.end("cancelled")
                raise
            # Never take the server down: files are linted alone.
            log.exception("indexing the workspace failed")
            progress.end("failed")
            self.ls.warn(f"indexing the workspace failed: {err!r}; files are linted alone")
            return
        finally:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
                if self._pool is pool:
                    self._pool = None
        if generation != self.generation or self.ls.closing:
            progress.end("restarted")  # a newer build reports its own
            return
        results = index_worker.unpack(blobs)
        for warning in dict.fromkeys(warnings):
            self.ls.warn(warning)
        editor = {os.path.abspath(d.path) for d in self.ls.docs if d.path}
        old = self.summaries
        old_layouts = self.layouts
        self.layouts = layouts
        self._notebook_roots.clear()
        self.summaries = {}
        for path, summary in results:
            root = layouts[path].root
            kept = old.get(root, {}).get(path) if path in editor else None
            chosen = kept or summary  # an open document's own summary wins
            if chosen is not None:
                self.summaries.setdefault(root, {})[path] = chosen
        self._projects.clear()
        self.files_indexed = len(results)
        first = not self.ready
        self.ready = True
        progress.end(f"Indexed {len(results):,} files")
        self.ls.workspace_diags.index_ready()
        changed = {
            root
            for root in self.summaries.keys() | old.keys()
            if self.summaries.get(root) != old.get(root)
        }
        for doc in self.ls.docs:
            if not doc.path:
                continue
            layout = self.layout(doc.path)
            before = old_layouts.get(os.path.abspath(doc.path))
            if layout is None:
                if before is not None:  # its folder left the workspace
                    self._relint(doc.uri)
            elif first or layout.root in changed or before != layout:
                self._relint(doc.uri)
        for notebook in self.ls.notebooks:
            if notebook.path:
                self._relint(notebook.uri)  # linted alone until now, or with the old index
        self._graphs.clear()
        self._spawn(self._build_graphs(generation))

    async def _build_graphs(self, generation: int) -> None:
        """The import graph of each project root, in a lint thread (it
        resolves every import: ~0.2 s for a thousand modules), then caught
        up with the edits made meanwhile."""
        loop = asyncio.get_running_loop()
        for root in sorted(self.summaries):
            project = self.project(root)
            if project is None:
                continue
            try:
                graph = await loop.run_in_executor(self.ls.lint_pool, ImportGraph.of, project)
            except Exception:  # the direct links still work without it
                log.exception("building the import graph of %s failed", root)
                continue
            current = self.project(root)
            if generation != self.generation or current is None:
                return
            graph.refresh(current)
            self._graphs[root] = graph

    def _relint(self, key: str) -> None:
        """Lint an open document again because other files changed: not
        while its own lint is pending (that one sees the change), and in
        on-save mode not an unsaved version."""
        state = self.ls.units.get(key)
        if state is None or state.timer is not None:
            return
        if not self.ls.settings.on_type and state.published_version != self.ls.current_version(key):
            return
        # The change was debounced already: lint now, unless the document is
        # being edited (its own lint in flight, or an edit just now). The next
        # keystroke would wait for this lint to finish (measured: the first
        # keystroke after the index got ready took two lints, 210-240 ms at
        # 5,000 lines); that keystroke's lint sees the change, and if none
        # comes, this one runs after a short grace.
        typing = state.running or time.monotonic() - state.edited_at < RELINT_GRACE
        self.ls.request_lint(key, RELINT_GRACE if typing else 0, force=True)

    # -- what a lint sees --------------------------------------------------------
    def layout(self, path: str) -> Layout | None:
        return self.layouts.get(os.path.abspath(path))

    def project(self, root: str) -> Project | None:
        project = self._projects.get(root)
        if project is None and root in self.summaries:
            texts = self.texts.get(root, {})
            project = self._projects[root] = Project(self.summaries[root].values(), dict(texts))
        return project

    def context(self, snap: Snapshot) -> tuple[Project | None, tuple[str, bool] | None]:
        """(project, module name) to lint an open document with; (None,
        None) before the index is ready or for a file outside it."""
        if not self.ready or not snap.path:
            return None, None
        path = os.path.abspath(snap.path)
        if snap.notebook:
            # Not indexed (nothing imports a notebook), but linted with the
            # project it imports from.
            if path not in self._notebook_roots:
                layout = self._new_layout(path, remember=False)
                self._notebook_roots[path] = layout.root if layout is not None else None
            root = self._notebook_roots[path]
            return (self.project(root), None) if root is not None else (None, None)
        layout = self.layout(path) or self._new_layout(path)
        if layout is None:
            return None, None
        return self.project(layout.root), layout.module

    def linted(self, snap: Snapshot, result: LintResult) -> bool:
        """Record an open document's summary (from its lint). True when the
        document should be linted again: its lint saw the project without
        it (a new file) or with an old summary that defines or imports
        something else."""
        if snap.path and result.reads is not None:
            self._reads[os.path.abspath(snap.path)] = result.reads
        return self.summarized(snap, result)

    def summarized(self, snap: Snapshot, result: LintResult) -> bool:
        """Record the summary of an open document's lint (made after its
        diagnostics were published, or with them): as ``linted``."""
        if result.summary is None or not snap.path:
            return False  # a syntax error keeps the last good summary
        seen = result.project.summary(snap.path) if result.project is not None else None
        text = snap.docs[0].text if not snap.notebook and snap.docs else None
        self.update(snap.path, result.summary, text)
        return result.project is not None and (
            seen is None or _shape(seen) != _shape(result.summary)
        )

    # -- changes -------------------------------------------------------------
    def update(self, path: str, summary: ModuleSummary | None, text: str | None = None) -> None:
        """A file's new summary (None: deleted), from an open document's
        ``text`` or (None) from the disk; relints the other open documents
        it may change."""
        path = os.path.abspath(path)
        layout = self.layouts.get(path)
        if layout is None:
            return
        # What the whole-program model reads for this file (the buffer, not
        # the disk, while it is open); the model's memo is keyed by these
        # texts. A keystroke does not rebuild the project and its tables: the
        # cached project gets a new mapping (a lint in flight keeps the old).
        texts = self.texts.setdefault(layout.root, {})
        if texts.get(path) != text:
            if text is None:
                texts.pop(path, None)
            else:
                texts[path] = text
            cached = self._projects.get(layout.root)
            if cached is not None:
                cached.texts = dict(texts)
        files = self.summaries.setdefault(layout.root, {})
        old = files.get(path)
        if old == summary:
            return
        if summary is None:
            files.pop(path, None)
        else:
            files[path] = summary
        self._projects.pop(layout.root, None)
        project = self.project(layout.root)
        if project is None:
            return
        # Until the whole graph is built (just after the index), only direct
        # imports are known: a throwaway graph finds those.
        graph = self._graphs.get(layout.root) or ImportGraph()
        if summary is None:
            graph.remove(path)
        else:
            graph.imports(project, summary)
        changed = [s for s in (old, summary) if s is not None]
        for doc in self.ls.docs:
            if doc.path is None or doc.uri not in self.ls.units:
                continue
            other = os.path.abspath(doc.path)
            mine = project.summary(other) if other != path else None
            if mine is None:
                continue
            reads = self._reads.get(other)
            if (reads is not None and any(reads.concerns(project, s) for s in changed)) or (
                graph.concerns(project, mine, changed)
            ):
                self._relint(doc.uri)
        self._relint_notebooks(layout.root, changed)
        self._recheck_closed(path, layout.root, files, project, graph, changed)

    def _recheck_closed(
        self,
        path: str,
        root: str,
        files: dict[str, ModuleSummary],
        project: Project,
        graph: ImportGraph,
        changed: list[ModuleSummary],
    ) -> None:
        """With workspace diagnostics, the closed files whose findings may
        rest on ``path`` (by the same test as open documents: what their
        last lint read, or an import link) are linted again, so that the
        Problems panel stays what ``check`` says; ``path`` itself too when
        it is closed (changed on disk: linted with its new summary)."""
        workspace = self.ls.workspace_diags
        if not workspace.active:
            return
        open_paths = {os.path.abspath(d.path) for d in self.ls.docs if d.path}
        stale = [path] if path not in open_paths and path in files else []
        # Found from the changed side, the import graph's and the reads' own
        # way (on torch's first 2,000 files: 0.03 ms median, 0.7 ms max per
        # change, against 20-30 ms testing each file, on the event loop); a
        # throwaway graph (the whole one is being built) knows no importers.
        if graph is self._graphs.get(root):
            linked = graph.concerned_paths(project, changed)
        else:
            linked = {p for p, mine in files.items() if graph.concerns(project, mine, changed)}
        linked |= workspace.readers(Change(project, s) for s in changed)
        stale += sorted(p for p in linked if p != path and p in files and p not in open_paths)
        if stale:
            workspace.files_changed(stale)

    def _relint_notebooks(self, root: str, changed: list[ModuleSummary]) -> None:
        """Open notebooks of ``root`` that name the changed module (a notebook
        has no summary: nothing imports it, so its own imports are all that
        matter; a textual check is enough to decide, and cheap)."""
        words: set[str] = set()
        for summary in changed:
            if summary.module:
                parts = summary.module.split(".")
                words.update((parts[0], parts[-1]))
        if not words:
            return
        for notebook in self.ls.notebooks:
            path = os.path.abspath(notebook.path) if notebook.path else None
            if path is None or self._notebook_roots.get(path) != root:
                continue
            cells = (self.ls.docs.get(uri) for uri in notebook.code_cells(self.ls.docs))
            text = "\n".join(cell.text for cell in cells if cell is not None)
            if any(word in text for word in words):
                self._relint(notebook.uri)

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        """Files created, changed or deleted outside the editor."""
        if not self.ready:
            return  # the build in progress reads them
        from pygls.uris import to_fs_path

        open_paths = {os.path.abspath(d.path) for d in self.ls.docs if d.path}
        todo: list[tuple[str, Layout]] = []
        deleted: list[str] = []
        for change in changes:
            path = to_fs_path(change.uri) if change.uri.startswith("file:") else None
            if not path or not path.endswith((".py", ".pyi")):
                continue
            path = os.path.abspath(path)
            if path in open_paths:
                continue  # the editor's text wins over the disk's
            if change.type == types.FileChangeType.Deleted:
                self.update(path, None)
                deleted.append(path)
                continue
            layout = self.layouts.get(path) or self._new_layout(path)
            if layout is not None:
                todo.append((path, layout))
        if todo:
            self._spawn(self._resummarize(todo))
        self.ls.workspace_diags.files_changed([p for p, _ in todo], deleted)

    def closed(self, path: str | None) -> None:
        """An open document was closed: the disk's text counts again."""
        if path:
            self._reads.pop(os.path.abspath(path), None)
        if path and self.ready and self.layout(path) is not None:
            self.files_changed([types.FileEvent(Path(path).as_uri(), types.FileChangeType.Changed)])

    async def _resummarize(self, todo: list[tuple[str, Layout]]) -> None:
        loop = asyncio.get_running_loop()
        pool = _process_pool() if len(todo) >= PROCESS_MIN_FILES else None
        try:
            results = await loop.run_in_executor(
                pool or self.ls.lint_pool, index_worker.summarize_files, todo, None
            )
        except Exception:
            log.exception("summarising changed files failed")
            return
        finally:
            if pool is not None:
                pool.shutdown(wait=False)
        for path, summary in results:
            if summary is not None or not os.path.exists(path):
                self.update(path, summary)  # a syntax error keeps the last summary

    def _new_layout(self, path: str, remember: bool = True) -> Layout | None:
        """A file created in a workspace folder after the index was built
        (or a notebook: ``remember=False``, it stays out of the index)."""
        folder = _holding(path, self.folders)
        if folder is None:
            return None
        layout = index_worker.layout_of(path, folder)
        if layout is not None and remember:
            self.layouts[path] = layout
        return layout


def _holding(path: str, folders: list[str]) -> str | None:
    """The innermost of ``folders`` holding ``path``."""
    holding = [f for f in folders if path.startswith(os.path.join(f, ""))]
    return max(holding, key=len) if holding else None


def _folder_of(path: str, folders: list[str]) -> str:
    """``_holding``, or the first folder for a project module above them all."""
    return _holding(path, folders) or folders[0]


def _has_files(folders: list[str], count: int = PROCESS_MIN_FILES) -> bool:
    """Whether the folders hold at least ``count`` Python files (stops there)."""
    for folder in folders:
        for _, dirs, files in os.walk(folder, onerror=lambda err: None):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            count -= sum(1 for name in files if name.endswith(".py"))
            if count <= 0:
                return True
    return False


def _process_pool() -> Any:
    """A one-process pool for parsing (None where processes are not
    available: the lint threads do it, more slowly)."""
    try:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=index_worker.quiet,
        )
    except (ImportError, OSError, NotImplementedError):
        return None


class _Progress:
    """``$/progress`` for the index build, when the client supports it."""

    def __init__(self, ls: IndexHost) -> None:
        self.ls = ls
        self.token: str | None = None

    async def begin(self, title: str) -> None:
        log.info(title)
        if not self.ls.supports("window.work_done_progress") or self.ls.closing:
            return
        token = f"torchtrap-index-{id(self)}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception:  # the client refused: index without progress
            return
        self.token = token
        self.ls.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title="TorchTrap", message=title, percentage=0)
        )

    def report(self, message: str, done: int, total: int) -> None:
        if self.token is None or self.ls.closing:
            return
        percentage = int(100 * done / total) if total else None
        self.ls.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str) -> None:
        if self.token is None or self.ls.closing:
            return
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)
        self.token = None


def describe(index: ProjectIndex) -> dict[str, Any]:
    """For ``torchtrap.debugInfo``."""
    return {
        "ready": index.ready,
        "folders": index.folders,
        "files": index.files_indexed,
        "roots": {root: len(files) for root, files in sorted(index.summaries.items())},
    }
