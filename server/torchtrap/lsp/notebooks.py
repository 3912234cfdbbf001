"""Open notebooks (notebook document sync): which cells, in which order.

The cells' text lives in the ``DocumentStore`` like any document; this
keeps the structure so a notebook can be linted as one module
(``torchtrap.notebook``) and a cell URI can be traced to its notebook.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.uris import to_fs_path

from torchtrap.lsp.documents import DocumentStore, LineShift

# VS Code's client syncs only the cells the selector names: markdown and raw
# cells are named too, so that a message's cell number counts them as Jupyter
# and `torchtrap check` do ("cell 3"); only the Python code cells are linted.
SELECTOR = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook=notebook_type,
            cells=[
                types.NotebookCellLanguage(language=language)
                for language in ("python", "markdown", "raw")
            ],
        )
        for notebook_type in ("jupyter-notebook", "interactive")
    ],
    save=True,
)


@dataclass
class Notebook:
    uri: str
    notebook_type: str
    version: int
    cells: list[types.NotebookCell] = field(default_factory=list)
    # Bumped on every change the client reports: VS Code keeps the notebook's own
    # version when only a cell's text changes, so `version` cannot tell the lint
    # results of two texts apart.
    revision: int = 0

    @property
    def path(self) -> str | None:
        return to_fs_path(self.uri) if self.uri.startswith("file:") else None

    def code_cells(self, docs: DocumentStore) -> list[str]:
        """URIs of the Python code cells, in order."""
        out = []
        for cell in self.cells:
            if cell.kind != types.NotebookCellKind.Code:
                continue
            doc = docs.get(cell.document)
            if doc is not None and doc.language_id in ("python", ""):
                out.append(cell.document)
        return out


@dataclass
class NotebookChange:
    shifts: list[tuple[str, LineShift | None]] = field(default_factory=list)  # edited cells
    closed: list[str] = field(default_factory=list)  # cells removed from the notebook


class NotebookStore:
    def __init__(self) -> None:
        self._notebooks: dict[str, Notebook] = {}
        self._cell_owner: dict[str, str] = {}

    def open(self, params: types.DidOpenNotebookDocumentParams, docs: DocumentStore) -> Notebook:
        nb = params.notebook_document
        notebook = Notebook(nb.uri, nb.notebook_type, nb.version, list(nb.cells))
        self._notebooks[nb.uri] = notebook
        for item in params.cell_text_documents:
            docs.open(item)
        for cell in notebook.cells:
            self._cell_owner[cell.document] = nb.uri
        return notebook

    def change(
        self, params: types.DidChangeNotebookDocumentParams, docs: DocumentStore, encoding: str
    ) -> NotebookChange:
        notebook = self._notebooks[params.notebook_document.uri]
        notebook.version = params.notebook_document.version
        notebook.revision += 1
        out = NotebookChange()
        cells = params.change.cells
        if cells is None:
            return out
        if cells.structure is not None:
            array = cells.structure.array
            removed = notebook.cells[array.start : array.start + array.delete_count]
            notebook.cells[array.start : array.start + array.delete_count] = list(array.cells or [])
            for item in cells.structure.did_open or []:
                docs.open(item)
            for cell in array.cells or []:
                self._cell_owner[cell.document] = notebook.uri
            kept = {cell.document for cell in notebook.cells}
            closing = {c.document for c in removed} | {
                d.uri for d in cells.structure.did_close or []
            }
            for uri in closing - kept:
                docs.close(uri)
                self._cell_owner.pop(uri, None)
                out.closed.append(uri)
        if cells.data:
            by_uri = {cell.document: cell for cell in cells.data}
            notebook.cells = [by_uri.get(cell.document, cell) for cell in notebook.cells]
        for content in cells.text_content or []:
            doc = docs.get(content.document.uri)
            if doc is None:
                continue
            for change in content.changes:
                out.shifts.append((doc.uri, doc.apply(change, encoding)))
            doc.version = content.document.version
        return out

    def close(self, uri: str, docs: DocumentStore) -> list[str]:
        """Forget the notebook and its cells; returns the cell URIs."""
        notebook = self._notebooks.pop(uri, None)
        if notebook is None:
            return []
        cells = [cell.document for cell in notebook.cells]
        for cell_uri in cells:
            docs.close(cell_uri)
            self._cell_owner.pop(cell_uri, None)
        return cells

    def get(self, uri: str) -> Notebook | None:
        return self._notebooks.get(uri)

    def owner(self, cell_uri: str) -> str | None:
        return self._cell_owner.get(cell_uri)

    def __iter__(self) -> Iterator[Notebook]:
        return iter(list(self._notebooks.values()))

    def __len__(self) -> int:
        return len(self._notebooks)
