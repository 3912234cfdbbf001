"""What the project index needs from the language server it serves.

A Protocol, so that ``project_index`` does not import ``server`` (which
creates the index): imports point one way, type-only ones included."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from typing import Any, Protocol

from torchtrap.lsp.documents import DocumentStore
from torchtrap.lsp.notebooks import NotebookStore
from torchtrap.lsp.settings import Settings
from torchtrap.project.index import Change


class UnitView(Protocol):
    """A lint unit's scheduling state, as far as the index reads it."""

    timer: asyncio.TimerHandle | None
    running: bool
    published_version: int | None
    edited_at: float


class WorkspaceView(Protocol):
    """The workspace-diagnostics publisher, as far as the index drives it."""

    @property
    def active(self) -> bool: ...

    def readers(self, changes: Iterable[Change]) -> set[str]: ...

    def index_ready(self) -> None: ...

    def files_changed(self, paths: Iterable[str], deleted: Iterable[str] = ()) -> None: ...


class IndexHost(Protocol):
    @property
    def workspace_diags(self) -> WorkspaceView: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def docs(self) -> DocumentStore: ...

    @property
    def notebooks(self) -> NotebookStore: ...

    @property
    def lint_pool(self) -> Executor: ...

    @property
    def work_done_progress(self) -> Any: ...  # pygls' progress helper

    @property
    def units(self) -> Mapping[str, UnitView]: ...

    @property
    def closing(self) -> bool: ...

    def supports(self, dotted: str) -> bool: ...

    def warn(self, message: str, kind: str = "warning", *, logged: bool = False) -> None: ...

    def current_version(self, key: str) -> int | None: ...

    def request_lint(
        self, key: str, delay: float | None = None, *, force: bool = False
    ) -> None: ...
