"""Workspace diagnostics: the findings of files that are not open.

``torchtrap.diagnosticMode`` follows Pylance's convention: ``openFilesOnly``
(the default) publishes the open files' findings only; ``workspace`` also
publishes those of every file the project index holds (bounded by
``MAX_FILES``), linted from disk with the same project the open files see,
and again when the file changes on disk or is closed, or when a file its
findings may rest on changes, in the editor or on disk (the project index
picks those as it picks open documents to re-lint: ``reads``, imports). The *Check Workspace*
command (``torchtrap.checkWorkspace``) does the same once in either mode.

An open file's own lint always wins: a file's disk findings are never
published while it is open. The lints run a few files at a time in the lint
pool, and wait while an open file is being linted or edited: the open file
comes first (bench/lsp_workspace_bench.py measures what is left).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.uris import from_fs_path

from torchtrap.lsp.diagnostics import build_diagnostics
from torchtrap.lsp.workspace import DocText, Snapshot, compute
from torchtrap.project.index import Change, Reads

if TYPE_CHECKING:
    from torchtrap.lsp.host import IndexHost
    from torchtrap.lsp.project_index import ProjectIndex
    from torchtrap.lsp.settings import ConfigCache

    class WorkspaceHost(IndexHost, Protocol):
        """What this publisher needs of the language server (a Protocol:
        ``server`` creates it, so it must not import ``server``)."""

        index: ProjectIndex
        configs: ConfigCache
        encoding: str
        root_path: str | None

        def confirmed(self) -> dict[str, str]: ...

        def text_document_publish_diagnostics(
            self, params: types.PublishDiagnosticsParams
        ) -> None: ...


log = logging.getLogger("torchtrap.lsp")

WORKSPACE = "workspace"
# The most files whose findings are published (the first, by path): the
# Problems panel is for reading, and each file costs a lint.
MAX_FILES = 2000
# Files linted per call into the lint pool: small, so that a batch in
# flight delays an open file's lint little (they share the GIL).
BATCH = 4
# While an open file is being linted or edited, the workspace waits
# (polling this often, seconds): the open file comes first.
YIELD_S = 0.05


class WorkspaceDiagnostics:
    def __init__(self, ls: WorkspaceHost) -> None:
        self.ls = ls
        self.published: dict[str, str] = {}  # path -> URI with findings published
        # What the closed files' last lints read of the project: when one of
        # those files changes, they are linted again (project_index.py).
        self.reads = ReadsIndex()
        self.queue: dict[str, None] = {}  # paths to lint, in order
        self.checked = False  # Check Workspace ran: keep its results current
        self.truncated = 0  # files left out by MAX_FILES
        self._runner: asyncio.Task[Any] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.counts = {"files": 0, "findings": 0}
        self.mode = ls.settings.diagnostic_mode

    @property
    def active(self) -> bool:
        settings = self.ls.settings
        return settings.enable and (settings.diagnostic_mode == WORKSPACE or self.checked)

    # -- what to lint --------------------------------------------------------
    def indexed_paths(self) -> list[str]:
        index = self.ls.index
        paths = sorted(p for p in index.layouts if p.endswith((".py", ".pyi")))
        self.truncated = max(0, len(paths) - MAX_FILES)
        if self.truncated:
            log.info("workspace diagnostics: the first %d of %d files", MAX_FILES, len(paths))
        return paths[:MAX_FILES]

    def _open_paths(self) -> set[str]:
        return {os.path.abspath(d.path) for d in self.ls.docs if d.path}

    def schedule(self, paths: Iterable[str]) -> None:
        if self.ls.closing:
            return
        for path in paths:
            self.queue[os.path.abspath(path)] = None
        if self.queue and (self._runner is None or self._runner.done()):
            self._idle.clear()
            self._runner = asyncio.ensure_future(self._drain())

    def schedule_all(self) -> None:
        """Every indexed file (the index was built, settings changed)."""
        if not self.ls.index.ready:
            return  # the build ends with index_ready()
        paths = self.indexed_paths()
        keep = set(paths)
        for path in [p for p in self.published if p not in keep]:
            self.clear(path)
        self.counts = {"files": 0, "findings": 0}
        self.queue.clear()
        self.schedule(paths)

    def readers(self, changes: Iterable[Change]) -> set[str]:
        """The closed files whose last lint read what ``changes`` change."""
        return self.reads.readers(changes)

    # -- events --------------------------------------------------------------
    def index_ready(self) -> None:
        if self.active:
            self.schedule_all()

    def settings_changed(self) -> None:
        """After a configuration change: follow the mode (switched to
        ``openFilesOnly``: the closed files' findings go, those of a Check
        Workspace too), relint with the new settings."""
        before, self.mode = self.mode, self.ls.settings.diagnostic_mode
        if before == WORKSPACE and self.mode != WORKSPACE:
            self.checked = False
        if self.active:
            self.schedule_all()
        else:
            self.clear_all()

    def files_changed(self, paths: Iterable[str], deleted: Iterable[str] = ()) -> None:
        """Files changed on disk (or closed in the editor)."""
        if not self.active:
            return
        for path in deleted:
            self.clear(os.path.abspath(path))
        indexed = self.ls.index.layouts
        self.schedule(p for p in paths if os.path.abspath(p) in indexed)

    def opened(self, path: str | None) -> None:
        """The open document's lint publishes for this URI from now on."""
        if path:
            self.published.pop(os.path.abspath(path), None)
            self.queue.pop(os.path.abspath(path), None)
            self.reads.forget(os.path.abspath(path))

    async def check(self) -> dict[str, Any]:
        """Check Workspace: lint every indexed file now, publish, and say
        how many files have how many findings."""
        for _ in range(600):  # the index is being built: wait (at most a minute)
            if self.ls.index.ready:
                break
            await asyncio.sleep(0.1)
        else:
            raise TimeoutError("the workspace is still being indexed")
        if not self.ls.settings.enable:
            raise ValueError("TorchTrap is disabled (torchtrap.enable)")
        self.checked = True
        self.schedule_all()
        await self._idle.wait()
        return {
            "files": len(self.indexed_paths()),
            "filesWithFindings": self.counts["files"],
            "findings": self.counts["findings"],
            "truncated": self.truncated,
        }

    # -- publishing ----------------------------------------------------------
    def clear(self, path: str) -> None:
        uri = self.published.pop(path, None)
        if uri is not None and not self.ls.closing:
            self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def clear_all(self) -> None:
        self.queue.clear()
        self.reads = ReadsIndex()
        for path in list(self.published):
            self.clear(path)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.queue and not self.ls.closing:
                while self._open_file_busy() and not self.ls.closing:
                    await asyncio.sleep(YIELD_S)
                open_paths = self._open_paths()
                batch: list[str] = []
                while self.queue and len(batch) < BATCH:
                    path = next(iter(self.queue))
                    del self.queue[path]
                    if path not in open_paths:
                        batch.append(path)
                if not batch:
                    continue
                jobs = [self._job(path) for path in batch]
                work = [j for j in jobs if j is not None]
                try:
                    results = await loop.run_in_executor(self.ls.lint_pool, _lint_all, work)
                except Exception:  # never take the server down
                    log.exception("workspace diagnostics failed")
                    continue
                self._publish(results)
        finally:
            if not self.queue:
                self._idle.set()

    def _open_file_busy(self) -> bool:
        """An open document's lint is running or due (the user is typing)."""
        return any(state.running or state.timer is not None for state in self.ls.units.values())

    def _job(self, path: str) -> tuple[str, str, Any, Any, Any] | None:
        uri = from_fs_path(path) or Path(path).as_uri()
        project, module = None, None
        layout = self.ls.index.layout(path)
        if layout is not None:
            project, module = self.ls.index.project(layout.root), layout.module
        config = self.ls.settings.apply(self.ls.configs.get(path, self.ls.root_path))
        extra = (self.ls.settings, self.ls.encoding, self.ls.confirmed())
        return path, uri, config, (project, module), extra

    def _publish(self, results: list[Linted]) -> None:
        open_paths = self._open_paths()
        for path, uri, diagnostics, reads in results:
            if path in open_paths or self.ls.closing:
                continue  # opened meanwhile: its own lint publishes
            if diagnostics is None:  # deleted or unreadable
                self.reads.forget(path)
                self.clear(path)
                continue
            if reads is not None:
                self.reads.record(path, reads)
            if diagnostics:
                self.counts["files"] += 1
                self.counts["findings"] += len(diagnostics)
            if diagnostics or path in self.published:
                self.published[path] = uri
                self.ls.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri, diagnostics)
                )
            if not diagnostics:
                self.published.pop(path, None)


class ReadsIndex:
    """Path -> what its lint read, indexed the other way too (read file ->
    readers, reference -> readers): a change finds its readers among 2,000
    closed files without testing each (``Reads.touched``: ~6 ms a keystroke
    on the event loop, measured with torch's first 2,000 files)."""

    def __init__(self) -> None:
        self._reads: dict[str, Reads] = {}
        self._by_path: dict[str, set[str]] = {}
        self._by_ref: dict[str, set[str]] = {}
        self._all_loaders: set[str] = set()

    def record(self, path: str, reads: Reads) -> None:
        self.forget(path)
        self._reads[path] = reads
        for read in reads.paths:
            self._by_path.setdefault(read, set()).add(path)
        for ref in reads.refs:
            self._by_ref.setdefault(ref, set()).add(path)
        if reads.all_loaders:
            self._all_loaders.add(path)

    def forget(self, path: str) -> None:
        reads = self._reads.pop(path, None)
        if reads is None:
            return
        for read in reads.paths:
            self._by_path.get(read, set()).discard(path)
        for ref in reads.refs:
            self._by_ref.get(ref, set()).discard(path)
        self._all_loaders.discard(path)

    def readers(self, changes: Iterable[Change]) -> set[str]:
        """The paths whose reads ``Reads.touched`` holds for."""
        out: set[str] = set()
        for change in changes:
            out |= self._by_path.get(change.path, set())
            if change.summary.dataloaders:
                out |= self._all_loaders
            if self._by_ref:
                for ref in change.provided:
                    out |= self._by_ref.get(ref, set())
        return out

    def __len__(self) -> int:
        return len(self._reads)


# (path, URI, diagnostics or None when unreadable, what the lint read)
Linted = tuple[str, str, "list[types.Diagnostic] | None", "Reads | None"]


def _lint_all(jobs: list[tuple[str, str, Any, Any, Any]]) -> list[Linted]:
    """Lint closed files from disk (in a lint thread): their diagnostics,
    None for a file that cannot be read. A file that does not parse gets
    none (its syntax error is the editor's to report once it is opened)."""
    out: list[Linted] = []
    for path, uri, config, (project, module), (settings, encoding, confirmed) in jobs:
        try:
            text = Path(path).read_bytes().decode("utf-8", "replace")
        except OSError:
            out.append((path, uri, None, None))
            continue
        snap = Snapshot(uri, 0, path, (DocText(uri, text, 0),))
        try:
            result = compute(snap, config, project, module)
        except Exception:
            log.exception("linting %s failed", path)
            out.append((path, uri, [], None))
            continue
        if result.broken:
            out.append((path, uri, [], None))
            continue
        diagnostics = build_diagnostics(result, settings, encoding, confirmed).get(uri, [])
        out.append((path, uri, diagnostics, result.reads))
    return out
