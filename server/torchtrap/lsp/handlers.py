"""The LSP features: document sync, configuration, code actions, hover.
Each handler is a few lines that call the server (server.py) or a
module of its own (actions, hover); none analyses code."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any

from lsprotocol import types

from torchtrap.lsp import actions, hover
from torchtrap.lsp.positions import UTF16
from torchtrap.lsp.server import TorchTrapServer

log = logging.getLogger("torchtrap.lsp")

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


def is_python(doc_uri: str, language_id: str) -> bool:
    return language_id == "python" or doc_uri.endswith(PYTHON_SUFFIXES)


def register(server: TorchTrapServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchTrapServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_event_loop()
        encoding = ls.workspace.position_encoding or UTF16
        ls.encoding = str(getattr(encoding, "value", encoding))  # an enum or a plain str
        ls.root_path = ls.workspace.root_path
        if params.workspace_folders and not ls.root_path:
            from pygls.uris import to_fs_path

            ls.root_path = to_fs_path(params.workspace_folders[0].uri)
        ls.init_options_given = params.initialization_options is not None
        ls.workspace_folders = _folders(params, ls.root_path)
        ls.update_settings(params.initialization_options)
        ls.workspace_diags.mode = ls.settings.diagnostic_mode
        _install_log_forwarding(ls)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TorchTrapServer, params: types.InitializedParams) -> None:
        registrations = []
        if ls.supports("workspace.did_change_watched_files.dynamic_registration"):
            registrations.append(
                types.Registration(
                    id="torchtrap-pyproject",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    # Python files too: the project index follows edits made
                    # outside the editor (a git checkout).
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(
                        watchers=[
                            types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                            types.FileSystemWatcher(glob_pattern="**/*.py"),
                        ]
                    ),
                )
            )
        # A client that pushes settings (initializationOptions, as ours does)
        # needs no registration; one that does not is asked to notify us.
        dynamic = ls.supports("workspace.did_change_configuration.dynamic_registration")
        if dynamic and not ls.init_options_given:
            registrations.append(
                types.Registration(
                    id="torchtrap-configuration",
                    method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                    register_options=types.DidChangeConfigurationRegistrationOptions(
                        section="torchtrap"
                    ),
                )
            )
        if registrations:
            try:
                await ls.client_register_capability_async(
                    types.RegistrationParams(registrations=registrations)
                )
            except Exception as err:  # optional: the mtime check still re-reads configs
                log.warning("client refused registrations: %s", err)
        if not ls.init_options_given and await _pull_settings(ls):
            ls.relint_all()
        ls.index.start(ls.workspace_folders)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TorchTrapServer, params: None) -> None:
        # A running probe would keep the process alive until it times out.
        for event in list(ls.probe_cancels.values()):
            event.set()
        for state in ls.units.values():
            if state.timer is not None:
                state.timer.cancel()
        ls.index.stop()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: TorchTrapServer, params: types.DidChangeConfigurationParams
    ) -> None:
        raw = params.settings
        if isinstance(raw, dict) and isinstance(raw.get("torchtrap"), dict):
            ls.update_settings(raw["torchtrap"])
        elif not await _pull_settings(ls):
            return
        ls.configs.clear()
        if not ls.settings.enable:
            for key in list(ls.units):
                ls.publish_empty(key)
        ls.relint_all()
        ls.workspace_diags.settings_changed()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(
        ls: TorchTrapServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            ls.configs.clear()
            ls.relint_all()
            ls.index.start(ls.workspace_folders)  # `src` and `exclude` may have changed
        else:
            ls.index.files_changed(params.changes)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(
        ls: TorchTrapServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        ls.workspace_folders_changed(params.event)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchTrapServer, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if not is_python(item.uri, item.language_id):
            return
        doc = ls.docs.open(item)
        ls.workspace_diags.opened(doc.path)
        ls.request_lint(item.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchTrapServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return
        for change in params.content_changes:
            ls.moved(doc.uri, doc.apply(change, ls.encoding))
        doc.version = params.text_document.version
        if ls.runs.drop(doc.uri):  # what a run saw is about the text it ran
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(doc.uri, ls.carry.get(doc.uri), doc.version)
            )
        if ls.settings.on_type:
            ls.request_lint(doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: TorchTrapServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            ls.configs.clear()
            ls.relint_all()
            return
        key = ls.unit_key(uri)
        if key is not None:
            ls.request_lint(key, 0, force=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchTrapServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.docs.close(uri)
        if doc is not None:
            ls.forget(uri, [uri])
            ls.index.closed(doc.path)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TorchTrapServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.notebooks.open(params, ls.docs)
        ls.request_lint(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TorchTrapServer, params: types.DidChangeNotebookDocumentParams) -> None:
        key = params.notebook_document.uri
        if ls.notebooks.get(key) is None:
            return
        change = ls.notebooks.change(params, ls.docs, ls.encoding)
        for uri, shift in change.shifts:
            ls.moved(uri, shift)
        for uri in change.closed:
            ls.carry.forget(uri)
            ls.good_cell_texts.pop(uri, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))
        structural = params.change.cells is not None and (
            params.change.cells.structure is not None or params.change.cells.data
        )
        if ls.settings.on_type or structural:
            ls.request_lint(key)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TorchTrapServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.request_lint(params.notebook_document.uri, 0, force=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TorchTrapServer, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        cells = ls.notebooks.close(uri, ls.docs)
        ls.forget(uri, cells)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=actions.KINDS, resolve_provider=True),
    )
    async def code_action(
        ls: TorchTrapServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        key = ls.unit_key(uri)
        if key is None or not ls.settings.enable:
            return None
        result = await ls.current_result(key)
        if result is None or result.excluded:
            return None
        only = params.context.only
        out: list[types.CodeAction] = []
        if _wants(only, types.CodeActionKind.QuickFix):
            out += actions.quick_fixes(
                result,
                uri,
                params.range,
                settings=ls.settings,
                encoding=ls.encoding,
                confirmed=ls.confirmed(),
                resolve=ls.resolve_support,
                document_changes=ls.document_changes,
            )
            out += actions.fix_code_actions(result, uri, params.range, resolve=ls.resolve_support)
        if _wants(only, actions.FIX_ALL_KIND) and actions.fixable(result):
            action = types.CodeAction(
                title=(
                    "TorchTrap: fix all, unsafe fixes included"
                    if result.config.unsafe_fixes
                    else "TorchTrap: fix all safe fixes"
                ),
                kind=actions.FIX_ALL_KIND,
                data={"key": key, "version": result.version, "fixAll": True},
            )
            if only or not ls.resolve_support:
                # Asked for explicitly (e.g. editor.codeActionsOnSave): build now.
                loop = asyncio.get_running_loop()
                edit = await loop.run_in_executor(
                    ls.lint_pool, actions.fix_all_edit, result, ls.encoding, ls.document_changes
                )
                if edit.edit is None:
                    return out or None
                action.edit, action.data = edit.edit, None
            out.append(action)
        return out or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(
        ls: TorchTrapServer, action: types.CodeAction
    ) -> types.CodeAction:
        data = action.data
        if not isinstance(data, dict) or not isinstance(data.get("key"), str):
            return action
        result = await ls.current_result(data["key"])  # cached, or re-linted if evicted
        if result is None or result.version != data.get("version"):
            return action  # the document moved on: the client re-requests actions
        loop = asyncio.get_running_loop()
        if data.get("fixAll"):
            code = data.get("code") if isinstance(data.get("code"), str) else None
            outcome = await loop.run_in_executor(
                ls.lint_pool,
                functools.partial(
                    actions.fix_all_edit, result, ls.encoding, ls.document_changes, code=code
                ),
            )
            edit = outcome.edit
        else:
            found = actions.lookup(result, data)
            if found is None:
                return action
            edit = await loop.run_in_executor(
                ls.lint_pool,
                actions.fix_workspace_edit,
                result,
                found[1],
                ls.encoding,
                ls.document_changes,
            )
        if edit is not None:
            action.edit = edit
        return action

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: TorchTrapServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        doc = ls.docs.get(uri)
        key = ls.unit_key(uri)
        if doc is None or key is None:
            return None
        lines = doc.lines
        result = await ls.current_result(key) if ls.settings.enable else None
        if result is not None and result.version != ls.current_version(key):
            result = None
        return hover.hover(result, uri, lines, params.position, ls.settings, ls.encoding)


def _folders(params: types.InitializeParams, root_path: str | None) -> list[str]:
    """The workspace folders' paths (the root path for an older client)."""
    from pygls.uris import to_fs_path

    folders = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    found = [f for f in folders if f]
    return found or ([root_path] if root_path else [])


def _wants(only: Any, kind: str) -> bool:
    """Whether a request's ``context.only`` admits ``kind`` (prefix rule)."""
    if not only:
        return kind == types.CodeActionKind.QuickFix or kind.startswith("source.fixAll")
    return any(kind == k or kind.startswith(f"{k}.") for k in map(str, only))


async def _pull_settings(ls: TorchTrapServer) -> bool:
    """Ask the client for the ``torchtrap`` section (pull model)."""
    if not ls.supports("workspace.configuration"):
        return False
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="torchtrap")])
        )
    except Exception as err:
        log.warning("workspace/configuration failed: %s", err)
        return False
    if not result or not isinstance(result[0], dict):
        return False
    ls.update_settings(result[0])
    return True


class _ForwardToClient(logging.Handler):
    """Engine warnings (a broken rule, a bad config) -> window/logMessage,
    from any thread."""

    REPEAT_AFTER_S = 60.0  # a rule failing on every keystroke is logged once a minute

    def __init__(self, ls: TorchTrapServer) -> None:
        super().__init__(logging.WARNING)
        self.ls = ls
        self.last_sent: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.ls.loop
        if loop is None or loop.is_closed() or self.ls.closing:
            return
        try:
            message = self.format(record)
        except Exception:
            return
        key = record.getMessage()
        now = time.monotonic()
        if now - self.last_sent.get(key, -self.REPEAT_AFTER_S) < self.REPEAT_AFTER_S:
            return
        if len(self.last_sent) > 1000:
            self.last_sent.clear()
        self.last_sent[key] = now
        error = record.levelno >= logging.ERROR
        mtype = types.MessageType.Error if error else types.MessageType.Warning
        params = types.LogMessageParams(mtype, message)
        loop.call_soon_threadsafe(self.ls.window_log_message, params)


def _install_log_forwarding(ls: TorchTrapServer) -> None:
    logger = logging.getLogger("torchtrap")
    if not any(isinstance(h, _ForwardToClient) for h in logger.handlers):
        handler = _ForwardToClient(ls)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(handler)
