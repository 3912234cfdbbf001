"""``.ipynb`` files for ``torchtrap check``: read the code cells, lint them
together (``notebook.lint_cells``), report findings by cell, write fixes back.

Findings get ``cell`` (the 1-based position of the cell in the notebook, as
Jupyter shows it) and a range inside that cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from torchtrap.config import Config
from torchtrap.findings import Finding, Range
from torchtrap.notebook import NotebookModule, lint_cells
from torchtrap.project.index import Project


class NotebookError(ValueError):
    pass


@dataclass
class NotebookFile:
    document: dict[str, Any]
    code_cells: list[int]  # indices into document["cells"] of the code cells
    texts: list[str]  # their sources, in order
    newline_at_end: bool
    indent: int

    @classmethod
    def parse(cls, data: bytes) -> NotebookFile:
        try:
            text = data.decode("utf-8-sig")
            document = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise NotebookError(f"not a readable notebook: {err}") from None
        cells = document.get("cells") if isinstance(document, dict) else None
        if not isinstance(cells, list):
            raise NotebookError("not a notebook: no 'cells' list")
        language = (
            document.get("metadata", {}).get("language_info", {}).get("name", "python") or "python"
        )
        code_cells, texts = [], []
        if language.lower() == "python":
            for i, cell in enumerate(cells):
                if isinstance(cell, dict) and cell.get("cell_type") == "code":
                    source = cell.get("source", "")
                    code_cells.append(i)
                    texts.append("".join(source) if isinstance(source, list) else str(source))
        second = text.split("\n", 2)[1] if text.count("\n") >= 2 else ""
        indent = len(second) - len(second.lstrip(" ")) or 1
        return cls(document, code_cells, texts, text.endswith("\n"), indent)

    def cell_number(self, code_index: int) -> int:
        return self.code_cells[code_index] + 1

    def dumps(self, texts: list[str]) -> bytes:
        for index, text in zip(self.code_cells, texts, strict=True):
            self.document["cells"][index]["source"] = text.splitlines(keepends=True)
        out = json.dumps(self.document, indent=self.indent, ensure_ascii=False)
        return (out + ("\n" if self.newline_at_end else "")).encode("utf-8")


def _in_cell(module: NotebookModule, rng: Range) -> tuple[int, Range] | None:
    located = module.cell_range(rng)
    if located is None:
        start = module.to_cell(rng.start)
        if start is None:
            return None
        return start[0], Range(start[1], start[1])
    return located


def lint_notebook(
    notebook: NotebookFile, path: str, config: Config, project: Project | None = None
) -> tuple[list[Finding], dict[int, str]]:
    """Findings by cell, and the cell texts by cell number (for excerpts).
    ``project``: the index of the project the notebook imports from."""
    result = lint_cells(
        notebook.texts, path, config, cell_number=notebook.cell_number, project=project
    )
    findings = []
    for finding in result.findings:
        located = _in_cell(result.module, finding.range)
        if located is None:
            continue
        index, rng = located
        related = []
        for rel in finding.related:
            rel_located = _in_cell(result.module, rel.range) if rel.path is None else None
            if rel_located is not None:
                rel = replace(rel, range=rel_located[1], cell=notebook.cell_number(rel_located[0]))
            related.append(rel)
        findings.append(
            replace(finding, range=rng, cell=notebook.cell_number(index), related=tuple(related))
        )
    cells = {notebook.cell_number(i): text for i, text in enumerate(notebook.texts)}
    return findings, cells
