"""Inputs the fuzzer (or the issue) found breaking a property, kept as
plain tests; each names what was wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.properties import check_bytes, check_text
from torchtrap.engine import fix_source, lint
from torchtrap.findings import Position
from torchtrap.notebook import lint_cells
from torchtrap.source import SourceText

LOG_SOFTMAX = (
    "import torch\n\ndef f(x):\n    y = torch.log(torch.softmax(x, dim=1))\n    return y\n"
)


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n", "\n\r"])
def test_line_endings_positions_and_fixes(ending: str) -> None:
    # Lone "\r" used to count as no line break: the finding landed on line 1
    # and its fix edited the wrong text.
    text = LOG_SOFTMAX.replace("\n", ending)
    (finding,) = lint(text, rules=None)
    expected_line = 4 if ending != "\n\r" else 6  # "\n", then "\r\n" pairs
    assert (finding.code, finding.range.start.line) == ("TT201", expected_line)
    fixed, count = fix_source(text)
    assert count == 1
    assert fixed == text.replace(
        "torch.log(torch.softmax(x, dim=1))", "torch.log_softmax(x, dim=1)"
    )
    check_text(text)


def test_source_text_lone_cr() -> None:
    source = SourceText("a = 1\rb = 2\r\nc = 3\nd")
    assert source.lines == ["a = 1", "b = 2", "c = 3", "d"]
    assert source.offset(Position(2, 0)) == 6
    assert source.offset(Position(3, 5)) == 18
    assert source.position_at(18) == Position(3, 5)
    assert source.position_at(6) == Position(2, 0)
    assert source.newline == "\r"


def test_inserted_lines_use_the_files_lone_cr() -> None:
    text = "import numpy as np\rimport torch\r\rclass D(torch.utils.data.Dataset):\r"
    text += "    def __getitem__(self, i):\r        return np.random.rand()\r"
    fixed, _ = fix_source(text, unsafe=True)
    assert "\n" not in fixed
    check_text(text)


def test_notebook_cell_with_lone_cr_maps_back_to_its_cell() -> None:
    cells = ["import torch\rx = torch.randn(3)", "y = torch.log(torch.softmax(x, -1))"]
    result = lint_cells(cells, "nb.ipynb")
    (finding,) = [f for f in result.findings if f.code == "TT201"]
    assert result.module.to_cell(finding.range.start) == (1, Position(1, 4))


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbfimport torch\r\nx = torch.log(torch.softmax(y, 0))\r\n",
        b"# coding: latin-1\nname = '\xe9'\rimport torch\rtorch.log(torch.softmax(y, 0))\r",
        b"import torch\x00\n",
        b"\xff\xfe\x00i",
    ],
)
def test_bytes(data: bytes) -> None:
    check_bytes(data)


@given(st.text(alphabet="ab 中é🔥\t", max_size=30))
def test_byte_to_code_point_columns(line: str) -> None:
    # Columns of a non-ASCII line were found by re-encoding the line for
    # every node: 1 MB minified onto one line took 290 s. The bisect that
    # replaced it must agree with decoding the prefix.
    source = SourceText(f"x = 1\n{line}\n")
    data = line.encode("utf-8")
    boundaries = [len(line[:i].encode("utf-8")) for i in range(len(line) + 1)]
    for column, byte_col in enumerate(boundaries):
        assert source.column(2, byte_col) == column
    for byte_col in range(len(data) + 1):
        assert source.column(2, byte_col) == len(data[:byte_col].decode("utf-8", "replace"))
