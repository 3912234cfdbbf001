"""The language server: a thin adapter from LSP to the engine.

Flow: a document change updates our own document store at once (on the
event loop), then a per-unit debounce timer starts a lint in a worker
thread. A result is published only if the unit is still at the version the
result was computed for (the version guard); a lint that finds the unit
changed while it ran is simply dropped, and at most one lint per unit runs
at a time (a change during a run marks it dirty, and it runs again on the
latest text). The last result per unit is cached for code actions and
hover, which therefore never re-lint an unchanged document.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

import torchtrap
from torchtrap.findings import SYNTAX_ERROR_CODE
from torchtrap.lsp import carry, lifeline
from torchtrap.lsp.diagnostics import build_diagnostics, syntax_error_shown
from torchtrap.lsp.documents import DocumentStore, LineShift
from torchtrap.lsp.notebooks import SELECTOR, NotebookStore
from torchtrap.lsp.positions import UTF16, choose_encoding
from torchtrap.lsp.project_index import ProjectIndex
from torchtrap.lsp.run_results import RunResults
from torchtrap.lsp.settings import ConfigCache, Settings, parse_settings
from torchtrap.lsp.workspace import DocText, LintResult, Snapshot, compute
from torchtrap.lsp.workspace_diagnostics import WorkspaceDiagnostics

if TYPE_CHECKING:
    from torchtrap.probe.report import ProbeReport

log = logging.getLogger("torchtrap.lsp")

# How many units keep their last result (with its lazy fixes) in memory.
HOT_RESULTS = 16
# Collect garbage once the server has been idle this long (seconds), or
# after this many lints without such a pause (typing non-stop for minutes).
IDLE_GC_DELAY = 2.0
GC_MAX_LINTS = 50
# An edited document's summary (for the project index) is made this long
# (seconds) after its diagnostics are published, once for a burst of edits:
# summarising is about a quarter of a lint, and only other files need it.
SUMMARY_DELAY = 0.1

# The workDoneToken of the executeCommand request being handled (pygls only
# passes a command its arguments).
WORK_DONE_TOKEN: contextvars.ContextVar[types.ProgressToken | None] = contextvars.ContextVar(
    "work_done_token", default=None
)


PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0
_DROPPED = object()  # a message answered (or ignored) while being decoded


class TorchTrapProtocol(LanguageServerProtocol):
    """pygls' protocol, minus its own document store (ours handles line
    breaks and encodings exactly; see documents.py) and with hooks for the
    encoding choice, command progress tokens and request cancellation."""

    _server: TorchTrapServer

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls raises for a request whose params do not fit its method, from
        # inside json.loads, and never answers it: the client would wait
        # forever. Answer with the error here; drop a bad notification.
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if "jsonrpc" in data and "method" in data and "id" in data:
                self._send_response(data["id"], None, err.to_response_error())
            log.warning("dropped a malformed %r message: %s", data.get("method"), err)
            return _DROPPED

    def handle_message(self, message: Any) -> None:
        if message is _DROPPED:
            return
        if not hasattr(message, "jsonrpc"):
            # Valid JSON that is no JSON-RPC message (an array, a number, an
            # object without "jsonrpc"): Invalid Request, id null.
            log.warning("not a JSON-RPC message: %.200r", message)
            self._send_error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        super().handle_message(message)

    def _send_error(self, msg_id: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _forward(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        # pygls takes the client's first offered encoding; we prefer UTF-8.
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [choose_encoding(general.position_encodings)]
        lifeline.watch(params.process_id, self._server.abandon)
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        yield from self._forward(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        yield from self._forward(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        yield from self._forward(types.TEXT_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams) -> Any:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: types.DidChangeNotebookDocumentParams
    ) -> Any:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(self, params: types.DidCloseNotebookDocumentParams) -> Any:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        # The command's task is created from this context, so it sees the token.
        WORK_DONE_TOKEN.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        # pygls cancels in-flight requests while iterating over them, and
        # cancelling a command's future pops it from that dict (RuntimeError):
        # cancel them on a copy first.
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        return (yield from super().lsp_shutdown(*args))

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls cancels the request's future; a running probe must also be
        # told, so that its subprocess is killed.
        self._server.cancel_request(msg_id)
        super()._handle_cancel_notification(msg_id)


@dataclass
class UnitState:
    """Scheduling state and cache of one lint unit (document or notebook)."""

    timer: asyncio.TimerHandle | None = None
    running: bool = False
    dirty: bool = False
    result: LintResult | None = None
    published_version: int | None = None
    forced: bool = False  # lint even if this version was published (other files changed)
    edited_at: float = -1e9  # time.monotonic() of the last edit (a debounced request)
    # The latest published lint whose summary is still to be made (see SUMMARY_DELAY).
    unsummarized: LintResult | None = None
    summary_timer: asyncio.TimerHandle | None = None
    # Linting again because its deferred summary changed: publish only if
    # the diagnostics differ from the ones published for this version.
    recheck: bool = False
    published: tuple[int, dict[str, list[types.Diagnostic]]] | None = None


class TorchTrapServer(LanguageServer):
    protocol: TorchTrapProtocol

    def __init__(self) -> None:
        super().__init__(
            "torchtrap",
            torchtrap.__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=SELECTOR,
            protocol_cls=TorchTrapProtocol,
        )
        self.settings = Settings()
        self.docs = DocumentStore()
        self.notebooks = NotebookStore()
        self.units: dict[str, UnitState] = {}
        self.hot: OrderedDict[str, None] = OrderedDict()  # units whose result is cached
        self.carry = carry.CarryStore()
        self.configs = ConfigCache()
        # Our own pool: pygls' pool also reads stdin, and must never starve.
        self.lint_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="torchtrap-lint")
        self.encoding = UTF16
        self.root_path: str | None = None
        self.workspace_folders: list[str] = []
        self.probe_results: dict[str, dict[str, Any]] = {}  # interpreter -> probe JSON
        # interpreter -> the last probe's report, for "run the rest"
        self.probe_reports: dict[str, ProbeReport] = {}
        self.probe_cancels: dict[Any, Any] = {}  # request id -> threading.Event (probes, runs)
        # what the last `torchtrap run` found
        self.runs = RunResults(lambda code: self.settings.docs_url(code))
        self.good_cell_texts: dict[str, str] = {}  # cell URI -> last text that parsed
        self.reported: set[str] = set()  # warnings already shown
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.lint_count = 0  # for tests and debugInfo
        self._gc_timer: asyncio.Handle | None = None
        self._lints_since_gc = 0
        self.init_options_given = False
        self.index = ProjectIndex(self)
        self.workspace_diags = WorkspaceDiagnostics(self)

    # -- capabilities ------------------------------------------------------
    def supports(self, dotted: str) -> bool:
        """Whether the client capability at ``a.b.c`` is present and truthy."""
        node: Any = self.client_capabilities
        for part in dotted.split("."):
            node = getattr(node, part, None)
            if node is None:
                return False
        return bool(node)

    @property
    def resolve_support(self) -> bool:
        node = self.client_capabilities.text_document
        support = node.code_action.resolve_support if node and node.code_action else None
        return support is not None and "edit" in support.properties

    @property
    def document_changes(self) -> bool:
        return self.supports("workspace.workspace_edit.document_changes")

    @property
    def change_annotations(self) -> bool:
        """The client shows annotated edits for confirmation (VS Code does)."""
        return self.document_changes and self.supports(
            "workspace.workspace_edit.change_annotation_support"
        )

    # -- configuration -----------------------------------------------------
    def update_settings(self, raw: Any) -> None:
        self.settings = parse_settings(raw, Settings())
        for problem in self.settings.problems:
            self.warn(f"settings: {problem}")

    def warn(self, message: str, kind: str = "warning", *, logged: bool = False) -> None:
        """Log (unless already logged); pop up once per message if
        showNotifications allows."""
        if self.closing:
            return
        mtype = types.MessageType.Error if kind == "error" else types.MessageType.Warning
        if not logged:
            self.window_log_message(types.LogMessageParams(mtype, f"TorchTrap: {message}"))
        if message not in self.reported and self.settings.notify(kind):
            self.reported.add(message)
            self.window_show_message(types.ShowMessageParams(mtype, f"TorchTrap: {message}"))

    def confirmed(self) -> dict[str, str]:
        report = self.probe_results.get(self.settings.interpreter)
        if not report:
            return {}
        try:
            from torchtrap.probe import confirmed_rules

            return confirmed_rules(report)
        except Exception:  # a malformed report must not stop linting
            log.exception("cannot read the probe report")
            return {}

    # -- units ---------------------------------------------------------------
    def unit_key(self, uri: str) -> str | None:
        """The lint unit a document URI belongs to (a cell: its notebook)."""
        owner = self.notebooks.owner(uri)
        if owner is not None:
            return owner
        if self.notebooks.get(uri) is not None or self.docs.get(uri) is not None:
            return uri
        return None

    def current_version(self, key: str) -> int | None:
        notebook = self.notebooks.get(key)
        if notebook is not None:
            return notebook.revision
        doc = self.docs.get(key)
        return doc.version if doc is not None else None

    def snapshot(self, key: str) -> Snapshot | None:
        notebook = self.notebooks.get(key)
        if notebook is not None:
            cells = notebook.code_cells(self.docs)
            texts = []
            for uri in cells:
                doc = self.docs.get(uri)
                if doc is not None:
                    texts.append(DocText(uri, doc.text, doc.version))
            fallback = {
                i: self.good_cell_texts[d.uri]
                for i, d in enumerate(texts)
                if d.uri in self.good_cell_texts
            }
            position = {cell.document: n for n, cell in enumerate(notebook.cells, 1)}
            numbers = tuple(position.get(d.uri, i + 1) for i, d in enumerate(texts))
            return Snapshot(
                key, notebook.revision, notebook.path, tuple(texts), True, fallback, numbers
            )
        doc = self.docs.get(key)
        if doc is None:
            return None
        return Snapshot(key, doc.version, doc.path, (DocText(doc.uri, doc.text, doc.version),))

    # -- linting -------------------------------------------------------------
    def request_lint(self, key: str, delay: float | None = None, *, force: bool = False) -> None:
        """Lint ``key`` after ``delay`` seconds (default: the debounce);
        a newer request replaces a pending one. ``force``: even if this
        version was already published (a save may follow a config edit)."""
        if self.loop is None:
            self.loop = asyncio.get_event_loop()
        state = self.units.setdefault(key, UnitState())
        if delay is None:
            state.edited_at = time.monotonic()
        if force:
            state.published_version = None
            state.forced = True
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if delay is None:
            delay = self.settings.debounce_ms / 1000
        if delay <= 0:
            self._start(key)
        else:
            state.timer = self.loop.call_later(delay, self._start, key)

    def workspace_folders_changed(self, event: types.WorkspaceFoldersChangeEvent) -> None:
        """A folder added to (removed from) a multi-root workspace: index
        again (unchanged files come from the cache); the open files are then
        linted with the new project."""
        from pygls.uris import to_fs_path

        removed = {to_fs_path(f.uri) for f in event.removed}
        added = [p for p in (to_fs_path(f.uri) for f in event.added) if p]
        folders = [f for f in self.workspace_folders if f not in removed]
        self.workspace_folders = folders + [f for f in added if f not in folders]
        self.configs.clear()
        self.index.start(self.workspace_folders)

    def relint_all(self) -> None:
        for key in list(self.units):
            self.units[key].result = None
            self.request_lint(key, 0, force=True)

    def _start(self, key: str) -> None:
        state = self.units.get(key)
        if state is None:
            return
        state.timer = None
        if state.running:
            state.dirty = True
            return
        state.running = True
        task = asyncio.ensure_future(self._run(key, state))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, key: str, state: UnitState) -> None:
        try:
            while True:
                state.dirty = False
                snap = self.snapshot(key)
                if snap is None:
                    return
                if not self.settings.enable:
                    self.publish_empty(key)
                    return
                if state.published_version == snap.version and not state.forced:
                    return  # already linted and published (e.g. by a code action)
                state.forced = False
                recheck, state.recheck = state.recheck, False
                computed = await self.compute(snap, defer_summary=True)
                if self.units.get(key) is not state:
                    return  # closed meanwhile: its state is gone, publish nothing
                if computed is not None and self.current_version(key) == snap.version:
                    self.keep(key, state, computed[0])
                    if not (recheck and state.published == (snap.version, computed[1])):
                        self.publish(computed[0], computed[1])
                    state.published_version = snap.version
                    state.published = (snap.version, computed[1])
                if computed is not None and computed[0].summarize is not None:
                    self._summarize_later(key, state, computed[0])
                self._schedule_gc()
                if not state.dirty:
                    return
        finally:
            state.running = False

    async def compute(
        self, snap: Snapshot, *, defer_summary: bool = False
    ) -> tuple[LintResult, dict[str, list[types.Diagnostic]]] | None:
        """Lint in the worker pool; None (logged) if the engine itself fails.
        ``defer_summary``: the result's summary is left to ``_summarize_later``."""
        loop = asyncio.get_running_loop()
        settings, encoding, confirmed = self.settings, self.encoding, self.confirmed()
        if (too_big := self.too_big(snap)) is not None:
            return too_big
        project, module = self.index.context(snap)
        # A file new to the project is summarised with its lint: other files'
        # next lints must see it (it may be what they import or load).
        defer_summary = defer_summary and (
            project is not None and snap.path is not None and project.summary(snap.path) is not None
        )

        def work() -> tuple[LintResult, dict[str, list[types.Diagnostic]]]:
            config = settings.apply(self.configs.get(snap.path, self.root_path))
            result = compute(snap, config, project, module, defer_summary=defer_summary)
            return result, build_diagnostics(result, settings, encoding, confirmed)

        try:
            result = await loop.run_in_executor(self.lint_pool, work)
        except Exception as err:  # never crash, never pop up per keystroke
            log.exception("linting %s failed", snap.key)
            self.warn(f"linting {snap.key} failed: {err!r} (see the log)", "error", logged=True)
            return None
        self.lint_count += 1
        for warning in result[0].config.warnings:
            self.warn(warning)
        if self.current_version(snap.key) == snap.version and self.index.linted(snap, result[0]):
            return await self.compute(snap)  # its lint saw its old definitions
        return result

    def _summarize_later(self, key: str, state: UnitState, result: LintResult) -> None:
        """Make ``result``'s summary after ``SUMMARY_DELAY``, replacing an
        older lint's still to be made (a lint that did not parse has none:
        the last good one is kept, as its summary would be)."""
        if self.loop is None:
            self.loop = asyncio.get_event_loop()
        state.unsummarized = result
        if state.summary_timer is not None:
            state.summary_timer.cancel()
        state.summary_timer = self.loop.call_later(SUMMARY_DELAY, self._start_summary, key, state)

    def _start_summary(self, key: str, state: UnitState) -> None:
        state.summary_timer = None
        result = state.unsummarized
        if result is None or self.units.get(key) is not state:
            return
        if state.running or state.timer is not None:
            # Another lint of it is on its way: it may bring a newer summary.
            self._summarize_later(key, state, result)
            return
        state.unsummarized = None
        task = asyncio.ensure_future(self._summarize(key, state, result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _summarize(self, key: str, state: UnitState, result: LintResult) -> None:
        """Record ``result``'s summary in the project index (as ``compute``
        does for a lint that was not deferred) and, when its lint saw the
        project with other definitions of it, lint it again."""
        make, result.summarize = result.summarize, None  # frees the parse once made
        if make is None:
            return
        loop = asyncio.get_running_loop()
        try:
            result.summary = await loop.run_in_executor(self.lint_pool, make)
        except Exception:
            log.exception("summarising %s failed", key)
            return
        if self.units.get(key) is not state:
            return  # closed meanwhile (the index summarises it from disk)
        if self.index.summarized(result.snapshot, result):
            state.recheck = True
            self.request_lint(key, 0, force=True)

    def too_big(
        self, snap: Snapshot
    ) -> tuple[LintResult, dict[str, list[types.Diagnostic]]] | None:
        """For a unit over ``maxFileSize``: an empty result (no code actions)
        and one notice instead of its diagnostics, instead of a lint that
        would hold up every other file for seconds."""
        limit = self.settings.max_file_size
        chars = sum(len(d.text) for d in snap.docs)
        if not limit or chars <= limit // 4:  # a code point is at most 4 bytes
            return None
        size = sum(len(d.text.encode("utf-8", "surrogatepass")) for d in snap.docs)
        if size <= limit:
            return None
        message = (
            f"skipped: file larger than `torchtrap.maxFileSize` "
            f"({size / 1e6:.1f} MB > {limit / 1e6:.1f} MB); raise the setting to lint it"
        )
        log.info("%s: %s", snap.key, message)
        config = self.configs.get(snap.path, self.root_path)
        texts = {d.uri: d.text for d in snap.docs}
        result = LintResult(snap, config, [], texts=texts, excluded=True)
        notice = types.Diagnostic(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            message=message,
            severity=types.DiagnosticSeverity.Information,
            source="torchtrap",
        )
        diagnostics: dict[str, list[types.Diagnostic]] = {uri: [] for uri in texts}
        diagnostics[snap.docs[0].uri] = [notice]
        return result, diagnostics

    async def current_result(self, key: str) -> LintResult | None:
        """The result for the unit's current version (linted now if needed)."""
        state = self.units.get(key)
        version = self.current_version(key)
        if state is None or version is None:
            return None
        if state.result is not None and state.result.version == version:
            return state.result
        snap = self.snapshot(key)
        if snap is None:
            return None
        computed = await self.compute(snap)
        if computed is None or self.units.get(key) is not state:
            return None
        if self.current_version(key) == snap.version:
            self.keep(key, state, computed[0])
            fresh = state.published_version != snap.version
            if fresh and self.settings.on_type and self.settings.enable:
                self.publish(computed[0], computed[1])
                state.published_version = snap.version
        return computed[0]

    def keep(self, key: str, state: UnitState, result: LintResult) -> None:
        """Cache ``result`` for code actions and hover. Only the most recently
        linted units keep theirs: a result's lazy fixes hold the module's
        syntax tree (megabytes for a big file), and with hundreds of files
        open that would dominate memory; an evicted unit is re-linted on its
        next code action or hover."""
        state.result = result
        self.hot.pop(key, None)
        self.hot[key] = None
        while len(self.hot) > HOT_RESULTS:
            old = next(iter(self.hot))
            del self.hot[old]
            if (old_state := self.units.get(old)) is not None:
                old_state.result = None

    def _schedule_gc(self) -> None:
        """A lint leaves no reference cycles (tests/core/test_no_garbage_cycles.py):
        what it made is freed by reference counting when its result is
        replaced. So no collection between keystrokes: a full one scans
        every live object (tens of milliseconds with a project index loaded,
        measured, right in the way of the next edit). Whatever other cyclic
        garbage the protocol leaves (futures, exceptions) is collected once
        the server has been idle for ``IDLE_GC_DELAY`` (building a
        structural fix with libcst does leave cycles), or every
        ``GC_MAX_LINTS`` lints when it never is."""
        if self.loop is None:
            return
        self._lints_since_gc += 1
        if self._gc_timer is not None:
            self._gc_timer.cancel()
        if self._lints_since_gc >= GC_MAX_LINTS:
            self._gc_timer = self.loop.call_soon(self._collect)
        else:
            self._gc_timer = self.loop.call_later(IDLE_GC_DELAY, self._collect_if_idle)

    def _collect_if_idle(self) -> None:
        self._gc_timer = None
        if any(state.running or state.timer is not None for state in self.units.values()):
            self._lints_since_gc -= 1  # rescheduling is not another lint
            self._schedule_gc()
            return
        self._collect()

    def _collect(self) -> None:
        self._gc_timer = None
        self._lints_since_gc = 0
        gc.collect()

    @property
    def closing(self) -> bool:
        """After ``shutdown``: send nothing more (the stream may be closed)."""
        return bool(self.protocol._shutdown)

    def publish(self, result: LintResult, diagnostics: dict[str, list[types.Diagnostic]]) -> None:
        if self.closing:
            return
        for uri, diags in diagnostics.items():
            if uri in result.broken:
                # Typing in progress: keep the last good findings (moved with
                # the edits since) next to the syntax error; see carry.py.
                parsed_before = uri in self.carry
                diags = [
                    syntax_error_shown(d, parsed_before, result.snapshot.notebook)
                    if d.code == SYNTAX_ERROR_CODE
                    else d
                    for d in diags
                ]
                diags = self.carry.get(uri) + diags
            else:
                self.carry.remember(uri, diags)
                if result.snapshot.notebook:
                    self.good_cell_texts[uri] = result.texts[uri]
            diags = self.runs.merge(uri, diags, result.lines.get(uri), self.encoding)
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri, diags, result.doc_version(uri))
            )

    def publish_run(self, changed: set[str]) -> None:
        """After a run (or an opened report): relint what is open, so that its
        diagnostics merge the run's, and publish the run's alone elsewhere."""
        if self.closing:
            return
        open_units = {uri for uri in changed if self.unit_key(uri) is not None}
        if open_units:
            self.relint_all()
        for uri in changed - open_units:
            diags = self.runs.diagnostics(uri, None, self.encoding)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, diags))

    def publish_empty(self, key: str) -> None:
        notebook = self.notebooks.get(key)
        uris = [c.document for c in notebook.cells] if notebook else [key]
        for uri in uris:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def forget(self, key: str, uris: list[str]) -> None:
        """Free everything kept for a closed unit and clear its squiggles."""
        state = self.units.pop(key, None)
        self.hot.pop(key, None)
        if state is not None and state.timer is not None:
            state.timer.cancel()
        if state is not None and state.summary_timer is not None:
            state.summary_timer.cancel()
        for uri in uris:
            self.carry.forget(uri)
            self.good_cell_texts.pop(uri, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def moved(self, uri: str, shift: LineShift | None) -> None:
        self.carry.moved(uri, shift)

    def abandon(self, grace_s: float = 1.0) -> None:
        """The client is gone (stdin closed, or its process exited): kill
        every probe's process group, give the probe threads ``grace_s`` to
        wind down, and end the process without waiting for a lint in
        progress. Callable from any thread."""
        for event in list(self.probe_cancels.values()):
            event.set()
        with contextlib.suppress(ImportError):
            from torchtrap.probe.process import kill_running

            kill_running()  # now: the watching threads may be mid-poll
        deadline = time.monotonic() + grace_s
        while self.probe_cancels and time.monotonic() < deadline:
            time.sleep(0.02)
        logging.shutdown()
        os._exit(0)

    def cancel_request(self, msg_id: Any) -> None:
        event = self.probe_cancels.get(msg_id)
        if event is not None:
            event.set()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop up every error. A failed request already answers
        # the client with the error; anything else is logged, and shown per
        # showNotifications.
        from pygls.exceptions import FeatureRequestError

        if source is FeatureRequestError:
            log.info("request failed: %s", error)
            return
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            # JSON-RPC: a body that is not JSON (or not UTF-8) gets a Parse
            # error, id null.
            log.warning("malformed JSON-RPC message: %s", error)
            self.protocol._send_error(None, PARSE_ERROR, f"Parse error: {error}")
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.warn(f"internal error: {error}", "error", logged=True)
