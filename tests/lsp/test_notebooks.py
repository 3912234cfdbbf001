"""Notebooks (notebook document sync): code cells linted together as one
module, in order; findings, related locations and fixes mapped to cells."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import Harness, edits_by_uri, session
from torchtrap.lsp.notebooks import SELECTOR


@dataclass
class Cell:
    uri: str
    kind: str
    text: str
    version: int = 1


class Notebook:
    """A client-side notebook: cells' texts and versions."""

    def __init__(self, h: Harness, path: Path, cells: list[tuple[str, str]]) -> None:
        self.h = h
        self.uri = path.as_uri()
        self.version = 1
        self.cells = [
            Cell(f"vscode-notebook-cell:{path}#C{i}", kind, text)
            for i, (kind, text) in enumerate(cells)
        ]
        h.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=1,
                    cells=[self._cell(c) for c in self.cells],
                ),
                cell_text_documents=[self._item(c) for c in self.cells],
            )
        )

    @staticmethod
    def _cell(c: Cell) -> types.NotebookCell:
        kind = types.NotebookCellKind.Code if c.kind == "code" else types.NotebookCellKind.Markup
        return types.NotebookCell(kind=kind, document=c.uri)

    @staticmethod
    def _item(c: Cell) -> types.TextDocumentItem:
        language = "python" if c.kind == "code" else "markdown"
        return types.TextDocumentItem(
            uri=c.uri, language_id=language, version=c.version, text=c.text
        )

    def uri_of(self, index: int) -> str:
        return self.cells[index].uri

    def set_text(self, index: int, text: str, bump_notebook: bool = True) -> int:
        """bump_notebook=False: as VS Code does for a cell edit (the notebook's
        own version stays, only the cell's changes)."""
        cell = self.cells[index]
        cell.text, cell.version = text, cell.version + 1
        if bump_notebook:
            self.version += 1
        self._send(
            types.NotebookDocumentCellChanges(
                text_content=[
                    types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(
                            uri=cell.uri, version=cell.version
                        ),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                    )
                ]
            )
        )
        return cell.version

    def insert(self, index: int, text: str) -> str:
        cell = Cell(f"{self.uri_of(0)}-new{index}", "code", text)
        self.cells.insert(index, cell)
        self.version += 1
        self._send(
            types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(
                        start=index, delete_count=0, cells=[self._cell(cell)]
                    ),
                    did_open=[self._item(cell)],
                )
            )
        )
        return cell.uri

    def _send(self, cells: types.NotebookDocumentCellChanges) -> None:
        self.h.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(
                    version=self.version, uri=self.uri
                ),
                change=types.NotebookDocumentChangeEvent(cells=cells),
            )
        )

    def close(self) -> None:
        self.h.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[types.TextDocumentIdentifier(uri=c.uri) for c in self.cells],
            )
        )


async def test_cell_edit_without_a_new_notebook_version_is_linted(root: Path) -> None:
    """VS Code sends a quick fix applied to a cell as a cell text change with the
    notebook's version unchanged; the squiggle must still go away."""
    async with session(root) as h:
        nb = Notebook(h, root / "edit.ipynb", [("code", "x = 1"), ("code", "danger(x)")])
        second = nb.uri_of(1)
        assert [d.code for d in await h.diagnostics(second, 1)] == ["TT901"]
        version = nb.set_text(1, "safe(x)", bump_notebook=False)
        assert await h.diagnostics(second, version) == []
        version = nb.set_text(1, "danger(x)", bump_notebook=False)
        assert [d.code for d in await h.diagnostics(second, version)] == ["TT901"]


async def test_notebook_cells(root: Path) -> None:
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        nb = Notebook(
            h,
            root / "train.ipynb",
            [
                ("code", "import os\n%matplotlib inline\n!pip list"),
                ("markdown", "# danger(1) in markdown is not code"),
                ("code", "x = 1\ndanger(x)"),
            ],
        )
        first, markdown, third = nb.uri_of(0), nb.uri_of(1), nb.uri_of(2)
        diags = await h.diagnostics(third, 1)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT901", 1)]
        assert diags[0].range == types.Range(types.Position(1, 0), types.Position(1, 9))
        (related,) = diags[0].related_information or []
        assert related.location.uri == first and related.location.range.start.line == 0
        assert await h.diagnostics(first, 1) == []  # magics are not syntax errors

        # A fix edits the right cell; re-linted, the notebook is clean.
        (fix, *_) = await h.code_actions(third, 1, only=["quickfix"])
        resolved = await h.resolve(fix)
        assert resolved.edit is not None
        ((uri, edits),) = edits_by_uri(resolved.edit).items()
        assert uri == third
        assert edits[0].range == types.Range(types.Position(1, 0), types.Position(1, 6))
        version = nb.set_text(2, "x = 1\nsafe(x)")
        assert await h.diagnostics(third, version) == []

        # A syntax error in one cell keeps the others' findings.
        nb.set_text(2, "x = 1\ndanger(x)")
        await h.diagnostics(third, 3)
        version = nb.set_text(0, "import os\ndef f(:")
        diags = await h.diagnostics(first, version)
        assert [d.code for d in diags] == ["TT000"]
        assert diags[0].message.endswith(
            "showing the findings of this cell's last version that parsed"
        )
        third_now = h.last(third)
        assert third_now is not None and [d.code for d in third_now.diagnostics] == ["TT901"]

        # Inserting a cell lints it in place.
        new = nb.insert(1, "danger(2)\ndanger(3)")
        diags = await h.diagnostics(new, 1)
        assert [d.range.start.line for d in diags] == [0, 1]
        hover = await h.hover(new, 1, 2)
        assert hover is not None

        # Fix all over the notebook: one edit per cell.
        result = await h.command("torchtrap.fixAll", nb.uri)
        assert result["applied"] is True
        changed = edits_by_uri(h.applied_edits[-1])
        assert set(changed) == {new, third}

        mark = len(h.publishes)
        nb.close()
        for uri in (first, markdown, third, new):
            assert await h.diagnostics(uri, None, after=mark) == []
        info = await h.command("torchtrap.debugInfo")
        assert info["openNotebooks"] == 0 and info["openDocuments"] == 0
        assert info["state"] == {
            "units": 0,
            "cachedResults": 0,
            "carried": 0,
            "cellTexts": 0,
            "probesRunning": 0,
        }


async def test_lines_named_in_messages_are_cell_relative(root: Path) -> None:
    # Cells: 1 code, 2 markdown, 3 code, 4 code. TT201 names the softmax's line.
    async with session(root) as h:
        nb = Notebook(
            h,
            root / "lines.ipynb",
            [
                ("code", "import torch\nx = torch.randn(3)"),
                ("markdown", "# notes"),
                ("code", "p = torch.softmax(x, -1)\nq = torch.log(p)"),
                ("code", "r = torch.log(p)"),
            ],
        )
        third = await h.diagnostics(nb.uri_of(2), 1)
        fourth = await h.diagnostics(nb.uri_of(3), 1)
        assert [(d.code, d.range.start.line) for d in third] == [("TT201", 1)]
        assert "from line 1 (via `p`)" in third[0].message
        assert [(d.code, d.range.start.line) for d in fourth] == [("TT201", 0)]
        assert "from cell 3, line 1 (via `p`)" in fourth[0].message


IPYTHON_CELLS = [
    ("code", "!pip install -q \\\n    torch \\\n    torchvision"),
    ("code", "\n%%bash\necho hi\nfor x in 1 2; do echo $x; done"),
    ("code", "  import torch\n  x = torch.zeros(3)\n  danger(x)"),
    ("code", 's = ("a %s"\n     % 3)\nfor i in range(2):\n    !echo $i'),
    ("code", "x.clamp(min=0.1)"),
    ("code", "x.clamp(max=1.0);"),
]


async def test_ipython_cells_are_linted_not_syntax_errors(root: Path) -> None:
    # With syntax errors shown, none of these valid IPython cells is TT000.
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        nb = Notebook(h, root / "magics.ipynb", IPYTHON_CELLS)
        per_cell = [await h.diagnostics(nb.uri_of(i), 1) for i in range(len(IPYTHON_CELLS))]
        assert [[d.code for d in diags] for diags in per_cell] == [
            [],
            [],
            ["TT901"],
            [],
            [],  # a cell's last expression: Jupyter displays it
            ["TT202"],  # `;` hides it: the result is thrown away
        ]
        # The indented cell (IPython dedents it): the column is the cell's own.
        (danger,) = per_cell[2]
        assert danger.range.start == types.Position(2, 2)
        (fix, *_) = await h.code_actions(nb.uri_of(2), 2, only=["quickfix"])
        resolved = await h.resolve(fix)
        assert resolved.edit is not None
        ((_, edits),) = edits_by_uri(resolved.edit).items()
        assert edits[0].range.start == types.Position(2, 2)


async def test_a_cell_that_never_parsed_says_so(root: Path) -> None:
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        nb = Notebook(h, root / "broken.ipynb", [("code", "def f(:"), ("code", "danger(1)")])
        (error,) = await h.diagnostics(nb.uri_of(0), 1)
        assert error.code == "TT000"
        assert "last version that parsed" not in error.message
        assert error.message.endswith(
            "this cell is not checked until it parses, the other cells are"
        )
        assert [d.code for d in await h.diagnostics(nb.uri_of(1), 1)] == ["TT901"]


async def test_syntax_errors_are_hidden_by_default(root: Path) -> None:
    async with session(root) as h:
        nb = Notebook(h, root / "typing.ipynb", [("code", "danger(0)"), ("code", "x = 1")])
        assert [d.code for d in await h.diagnostics(nb.uri_of(0), 1)] == ["TT901"]
        version = nb.set_text(0, "danger(0)\nfor epoch in range(3):")
        # No TT000 squiggle while the block has no body; the finding stays.
        assert [d.code for d in await h.diagnostics(nb.uri_of(0), version)] == ["TT901"]


def test_the_selector_syncs_the_cells_jupyter_counts() -> None:
    """VS Code's client sends only the cells the selector names: without the
    markdown and raw cells, "cell 3" of Jupyter and the CLI was "cell 2" in
    VS Code's Problems panel (seen in the e2e)."""
    for selector in SELECTOR.notebook_selector:
        assert isinstance(selector, types.NotebookDocumentFilterWithCells)
        assert {c.language for c in selector.cells} == {"python", "markdown", "raw"}


async def test_problems_rows_name_the_cell(root: Path) -> None:
    """The Problems panel groups a notebook's rows under the notebook: each
    message names its cell, counted as Jupyter does (markdown included)."""
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        nb = Notebook(
            h,
            root / "rows.ipynb",
            [("code", "danger(0)"), ("markdown", "# notes"), ("code", "x = 1\ndanger(x)")],
        )
        (first,) = await h.diagnostics(nb.uri_of(0), 1)
        (third,) = await h.diagnostics(nb.uri_of(2), 1)
        assert first.message.startswith("cell 1: ") and third.message.startswith("cell 3: ")
        version = nb.set_text(2, "x = 1\ndef f(:")
        (error,) = await h.diagnostics(nb.uri_of(2), version)
        assert error.code == "TT000" and error.message.startswith("cell 3: TorchTrap cannot parse")
        # A plain file's rows carry no cell.
        uri = h.open("plain.py", "danger(1)\n")
        (plain,) = await h.diagnostics(uri, 1)
        assert not plain.message.startswith("cell")
