"""`torchtrap check` on .ipynb files: findings by cell, fixes written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# 训练 notes"]},
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["import torch\n", "%matplotlib inline\n"],
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["x = torch.randn(3)\n", "y = torch.log(torch.softmax(x, -1))"],
        },
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def write(path: Path, document: object) -> None:
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_findings_by_cell_and_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = tmp_path / "train.ipynb"
    write(nb, NOTEBOOK)
    assert cli.main(["check", str(nb), "--select", "TT201", "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert f"{nb}:cell 3:2:5: TT201" in out
    assert "2 | y = torch.log(torch.softmax(x, -1))" in out

    cli.main(["check", str(nb), "--format", "json", "--select", "TT201"])
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["cell"] == 3 and finding["range"]["start"] == {"line": 2, "column": 4}

    assert cli.main(["check", str(nb), "--fix", "--select", "TT201"]) == 0
    capsys.readouterr()
    fixed = json.loads(nb.read_text(encoding="utf-8"))
    assert fixed["cells"][2]["source"][1] == "y = torch.log_softmax(x, -1)"
    assert fixed["cells"][:2] == NOTEBOOK["cells"][:2]  # markdown and magics untouched


def test_broken_notebook_is_tt000(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = tmp_path / "bad.ipynb"
    nb.write_text("{not json", encoding="utf-8")
    assert cli.main(["check", str(nb), "--color", "never"]) == 1
    assert "not a readable notebook" in capsys.readouterr().out


def _code(source: str) -> dict[str, object]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def test_lines_named_in_messages_are_cell_relative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TT201 names the softmax's line: in a notebook it is the line in its cell
    # (and the cell, when another one), never the line of the joined cells.
    document = dict(NOTEBOOK)
    document["cells"] = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# notes"]},
        _code("import torch\nx = torch.randn(3)\n"),
        _code("p = torch.softmax(x, -1)\nq = torch.log(p)\n"),
        _code("r = torch.log(p)\n"),
    ]
    nb = tmp_path / "lines.ipynb"
    write(nb, document)
    cli.main(["check", str(nb), "--format", "json", "--select", "TT201"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    messages = {(f["cell"], f["range"]["start"]["line"]): f["message"] for f in findings}
    assert set(messages) == {(3, 2), (4, 1)}
    assert "of a softmax output from line 1 (via `p`)" in messages[(3, 2)]
    assert "of a softmax output from cell 3, line 1 (via `p`)" in messages[(4, 1)]
    cli.main(["check", str(nb), "--select", "TT201", "--color", "never"])
    assert "from cell 3, line 1 (via `p`)" in capsys.readouterr().out


def test_a_notebook_sees_the_project_it_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Discriminator a notebook builds ends in nn.Sigmoid in models.py:
    its log is TT201 with the project, nothing when the notebook is alone;
    the clamp fix is written back into the cell and the notebook re-lints
    clean."""
    import shutil

    root = tmp_path / "flat"
    shutil.copytree(Path(__file__).resolve().parents[1] / "projects" / "flat", root)
    document = {
        **NOTEBOOK,
        "cells": [
            _code("import torch\nfrom models import Discriminator\n"),
            _code("disc = Discriminator()\nscore = torch.log(disc(torch.randn(2, 4)))\n"),
        ],
    }
    nb = root / "explore.ipynb"
    write(nb, document)
    args = ["--select", "TT201", "--color", "never", "--no-cache"]
    assert cli.main(["check", str(nb), *args]) == 1
    assert f"{nb}:cell 2:2:9: TT201" in capsys.readouterr().out

    alone = tmp_path / "alone" / "explore.ipynb"
    alone.parent.mkdir()
    write(alone, document)
    assert cli.main(["check", str(alone), *args]) == 0
    capsys.readouterr()

    assert cli.main(["check", str(nb), "--fix", "--unsafe-fixes", *args]) == 0
    capsys.readouterr()
    fixed = json.loads(nb.read_text(encoding="utf-8"))["cells"][1]["source"]
    assert "".join(fixed).count("clamp(min=1e-4)") == 1
    assert cli.main(["check", str(nb), *args]) == 0
    before = nb.read_text(encoding="utf-8")
    assert cli.main(["check", str(nb), "--fix", "--unsafe-fixes", *args]) == 0
    assert nb.read_text(encoding="utf-8") == before  # idempotent


def test_a_notebook_keeps_its_own_evidence_with_a_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A helper defined in the notebook and called there with a sigmoid
    output: TT201 alone and inside a project alike (the notebook's own names
    resolve under its key, not as a module named after the helper)."""
    import shutil

    root = tmp_path / "flat"
    shutil.copytree(Path(__file__).resolve().parents[1] / "projects" / "flat", root)
    document = {
        **NOTEBOOK,
        "cells": [
            _code("import torch\n\ndef nll(p):\n    return -torch.log(p).mean()\n"),
            _code("nll(torch.sigmoid(torch.randn(3)))\n"),
        ],
    }
    alone = tmp_path / "alone" / "local.ipynb"
    alone.parent.mkdir()
    for nb in (root / "local.ipynb", alone):
        write(nb, document)
        args = ["--select", "TT201", "--color", "never", "--no-cache"]
        assert cli.main(["check", str(nb), *args]) == 1
        assert f"{nb}:cell 1:4:13: TT201" in capsys.readouterr().out
