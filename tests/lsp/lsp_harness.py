"""A real LSP client (pytest-lsp) driving `torchtrap lsp` over stdio.

``session(...)`` starts a server (with the test-only TT9xx rules from
fake_rules.py registered next to the real ones), initializes it with the
given capabilities and settings, and yields a ``Harness`` with helpers to
open/change documents, wait for the diagnostics of a version, and apply
edits the way an editor does (in the negotiated position encoding, written
here independently of the server's own code).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "server_with_fakes.py")]


@dataclass
class Publish:
    uri: str
    version: int | None
    diagnostics: list[types.Diagnostic]
    at: float


def capabilities(
    *,
    encodings: Sequence[str] | None = None,
    resolve: bool = True,
    document_changes: bool = True,
    notebooks: bool = True,
    work_done: bool = True,
    configuration: bool = True,
    watch: bool = True,
    change_annotations: bool = False,
) -> types.ClientCapabilities:
    """Roughly what VS Code sends (UTF-16 only unless ``encodings``)."""
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=list(encodings))
        if encodings
        else None,
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=document_changes,
                change_annotation_support=types.ChangeAnnotationsSupportOptions(
                    groups_on_label=True
                )
                if change_annotations
                else None,
            ),
            configuration=configuration,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(
                dynamic_registration=True
            ),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=watch
            ),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, code_description_support=True
            ),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=["quickfix", "source", "source.fixAll"]
                    )
                ),
                is_preferred_support=True,
                data_support=True,
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
                if resolve
                else None,
            ),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        ),
        notebook_document=types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities()
        )
        if notebooks
        else None,
        window=types.WindowClientCapabilities(work_done_progress=work_done),
    )


def _offset(text: str, position: types.Position, encoding: str) -> int:
    """Client side: an LSP position -> string index (independent of the server)."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    if position.line >= len(lines):
        return len(text)
    line = lines[position.line]
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    data = line.encode(codec)[: position.character * width]
    return start + len(data.decode(codec))


def apply_text_edits(text: str, edits: Sequence[types.TextEdit], encoding: str) -> str:
    spans = sorted(
        (
            (
                _offset(text, e.range.start, encoding),
                _offset(text, e.range.end, encoding),
                e.new_text,
            )
            for e in edits
        ),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_by_uri(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    out: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        out.setdefault(change.text_document.uri, []).extend(change.edits)  # type: ignore[arg-type]
    for uri, edits in (edit.changes or {}).items():
        out.setdefault(uri, []).extend(edits)
    return out


@dataclass
class Harness:
    client: LanguageClient
    root: Path
    encoding: str
    publishes: list[Publish] = field(default_factory=list)
    applied_edits: list[types.WorkspaceEdit] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    registrations: list[types.Registration] = field(default_factory=list)

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name_or_uri: str, text: str, version: int = 1) -> str:
        uri = name_or_uri if ":" in name_or_uri else self.uri(name_or_uri)
        self.texts[uri], self.versions[uri] = text, version
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> int:
        """Replace the whole text (full sync); returns the new version."""
        version = self.versions[uri] + 1
        self.texts[uri], self.versions[uri] = text, version
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return version

    def edit(self, uri: str, edits: Sequence[types.TextEdit]) -> int:
        """Send ``edits`` as incremental changes (in order, each against
        the text left by the previous one) and apply them here too."""
        version = self.versions[uri] + 1
        changes = []
        text = self.texts[uri]
        for e in edits:
            changes.append(types.TextDocumentContentChangePartial(range=e.range, text=e.new_text))
            text = apply_text_edits(text, [e], self.encoding)
        self.texts[uri], self.versions[uri] = text, version
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version), changes
            )
        )
        return version

    def apply_workspace_edit(self, edit: types.WorkspaceEdit) -> int:
        """Apply a server's edit to our copy and send it back as a change."""
        version = 0
        for uri, edits in edits_by_uri(edit).items():
            new = apply_text_edits(self.texts[uri], edits, self.encoding)
            version = self.change(uri, new)
        return version

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    async def diagnostics(
        self, uri: str, version: int | None = None, timeout: float = 10.0, after: int = 0
    ) -> list[types.Diagnostic]:
        """The diagnostics published for ``uri`` at ``version`` (any version
        if None) among publishes number ``after`` on."""
        deadline = time.monotonic() + timeout
        while True:
            for publish in self.publishes[after:]:
                if publish.uri == uri and (version is None or publish.version == version):
                    return publish.diagnostics
            if time.monotonic() > deadline:
                seen = [(p.uri, p.version) for p in self.publishes]
                raise AssertionError(f"no diagnostics for {uri} v{version}; got {seen}")
            await asyncio.sleep(0.01)

    async def eventually(
        self,
        uri: str,
        check: Callable[[list[types.Diagnostic]], bool],
        after: int = 0,
        timeout: float = 10.0,
    ) -> list[types.Diagnostic]:
        """The first diagnostics published for ``uri`` (from publish number
        ``after`` on) that pass ``check``: for steps where a lint begun before
        the step (an index restart's, say) may still publish first."""
        deadline = time.monotonic() + timeout
        while True:
            for publish in self.publishes[after:]:
                if publish.uri == uri and check(publish.diagnostics):
                    return publish.diagnostics
            if time.monotonic() > deadline:
                seen = [
                    (p.uri.rsplit("/", 1)[-1], p.version, [d.code for d in p.diagnostics])
                    for p in self.publishes[after:]
                ]
                raise AssertionError(f"no passing diagnostics for {uri}; got {seen}")
            await asyncio.sleep(0.01)

    def last(self, uri: str) -> Publish | None:
        return next((p for p in reversed(self.publishes) if p.uri == uri), None)

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def code_actions(
        self, uri: str, line: int, only: list[str] | None = None, end_line: int | None = None
    ) -> list[types.CodeAction]:
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(line, 0), types.Position(end_line or line, 0)),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
        # lsprotocol reads any item with a "command" key as a Command, even a
        # CodeAction that carries one: take the raw JSON and read it ourselves.
        protocol = self.client.protocol
        msg_id = f"code-action-{uuid.uuid4()}"
        future = protocol.send_request(types.TEXT_DOCUMENT_CODE_ACTION, params, msg_id=msg_id)
        protocol._result_types.pop(msg_id, None)
        raw = await asyncio.wrap_future(future) or []
        return [protocol._converter.structure(item, types.CodeAction) for item in raw]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        return await self.client.code_action_resolve_async(action)

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line, character),
            )
        )


async def published(
    h: Harness, uri: str, want: Callable[[list[types.Diagnostic]], Any], timeout: float = 60.0
) -> list[types.Diagnostic]:
    """The diagnostics last published for ``uri`` once ``want`` holds of them
    (a run publishes before its command returns; the relint follows it)."""
    deadline = time.monotonic() + timeout
    while True:
        last = h.last(uri)
        if last is not None and want(list(last.diagnostics)):
            return list(last.diagnostics)
        if time.monotonic() > deadline:
            raise AssertionError(f"diagnostics for {uri}: {last and last.diagnostics}")
        await asyncio.sleep(0.05)


def run_diagnostics(diags: list[types.Diagnostic]) -> list[types.Diagnostic]:
    """The diagnostics a run published (its own source label)."""
    return [d for d in diags if d.source == "torchtrap-run"]


async def _indexed(h: Harness, timeout: float = 30.0) -> None:
    """Wait until the server has indexed the workspace (tests then see no
    re-lint of their documents by the index build)."""
    deadline = time.monotonic() + timeout
    while not (await h.command("torchtrap.debugInfo"))["projectIndex"]["ready"]:
        if time.monotonic() > deadline:
            raise AssertionError("the workspace was not indexed")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def session(
    root: Path,
    *,
    settings: dict[str, Any] | None = None,
    caps: types.ClientCapabilities | None = None,
    configuration: dict[str, Any] | None = None,
    send_init_options: bool = True,
    command: Sequence[str] = SERVER,
    process_id: int | None = None,
) -> AsyncIterator[Harness]:
    client = LanguageClient(converter_factory=default_converter, configuration=configuration)
    harness = Harness(client, root, "utf-16")

    def on_publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        harness.publishes.append(
            Publish(params.uri, params.version, list(params.diagnostics), time.monotonic())
        )

    def on_apply_edit(
        ls: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        harness.applied_edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    def on_register(ls: LanguageClient, params: types.RegistrationParams) -> None:
        harness.registrations.extend(params.registrations)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    features[types.WORKSPACE_APPLY_EDIT] = on_apply_edit
    features[types.CLIENT_REGISTER_CAPABILITY] = on_register
    register_lsp_features(client, features)

    await client.start_io(*command)
    options = {"debounceMs": 20, **(settings or {})} if send_init_options else None
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps or capabilities(),
            process_id=process_id,
            root_uri=root.as_uri(),
            initialization_options=options,
        )
    )
    harness.encoding = str(result.capabilities.position_encoding or "utf-16")
    try:
        await _indexed(harness)
        yield harness
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 10)
        await client.stop()
