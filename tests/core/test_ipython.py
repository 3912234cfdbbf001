"""Notebook cells read as IPython reads them: valid IPython is never TT000,
columns map back through IPython's dedent, and a cell's last expression is
displayed (not thrown away)."""

from __future__ import annotations

import pytest

from torchtrap.config import Config
from torchtrap.findings import Position
from torchtrap.ipython import CellMode, prepare_cell
from torchtrap.notebook import fix_cells, lint_cells

VALID_IPYTHON = {
    "shell command continued with backslashes": (
        "import torch\n!pip install -q \\\n    torch \\\n    torchvision\nx = 1"
    ),
    "line magic continued": "%config InlineBackend.figure_format = \\\n    'retina'\ny = 2",
    "assignment from a shell command": "files = !ls -la\nn = len(files)",
    "escape alone in a block": "for i in range(2):\n    !echo $i\n",
    "magic in an if body": "if True:\n    %time f()\nelse:\n    pass",
    "cell magic after blank lines": "\n\n%%bash\necho hi\nfor x in 1 2; do echo $x; done",
    "writefile cell": "%%writefile train.py\ndef f(:\n    pass",
    "indented first line (IPython dedents)": "    import torch\n    x = torch.zeros(3)",
    "indented cell magic": "  %%time\n  import os\n  os.getcwd()",
    "help": "torch.clamp?\n??torch.log",
    "wildcard help (issue 34)": "import torch\ntorch.*Tensor?\n?torch.nn.*Loss\n*int*??",
    "percent on a continuation line is Python": 's = ("a %s"\n     % 3)\nt = 1',
    "bang-equals on a continuation line is Python": "ok = (1\n      != 2)",
    "magic-looking text in a string": 'doc = """\n!important\n%not a magic\n"""',
}


@pytest.mark.parametrize("cell", VALID_IPYTHON.values(), ids=VALID_IPYTHON.keys())
def test_valid_ipython_is_not_a_syntax_error(cell: str) -> None:
    result = lint_cells([cell, "z = 3"])
    assert [f.code for f in result.findings if f.is_syntax_error] == []
    assert result.broken == frozenset()


def test_strings_and_continuations_stay_python() -> None:
    # Only escapes at the start of a logical line are IPython's.
    text = 's = ("a %s"\n     % 3)\ndoc = """\n!keep\n"""'
    assert prepare_cell(text).text == text


def test_escapes_keep_widths_and_leave_a_statement() -> None:
    cell = "for i in range(2):\n    !echo $i \\\n      more\nfiles = !ls\n%pwd\n!l"
    prepared = prepare_cell(cell)
    lines = prepared.text.split("\n")
    assert [len(x) for x in lines] == [len(x) for x in cell.split("\n")]
    assert lines[1] == "    ...#------"  # a statement: the `for` still has a body
    assert lines[2].lstrip().startswith("#")  # the continuation: a comment
    assert lines[3] == "files = ..."  # the name stays bound
    assert lines[4] == "...#" and lines[5] == "0#"


def test_cell_magics_as_ipython_runs_them() -> None:
    assert prepare_cell("%%bash\necho hi").mode is CellMode.NOT_PYTHON
    assert prepare_cell("%%bash\necho hi").text == "\n"
    timed = prepare_cell("%%timeit\nx.clamp(0)")
    assert timed.mode is CellMode.TIMED and timed.text == "#%timeit\nx.clamp(0)"
    assert prepare_cell("%%time\nx = 1").mode is CellMode.PYTHON
    # Not the first line: not a cell magic (IPython would not run it as one).
    assert prepare_cell("# note\n%%bash").mode is CellMode.PYTHON


def test_dedented_cell_maps_columns_and_fixes_back() -> None:
    cells = ["  import torch\n  x = torch.randn(3)\n  y = torch.log(torch.softmax(x, -1))\n  z = 1"]
    result = lint_cells(cells)
    (finding,) = result.findings
    assert finding.code == "TT201"
    assert result.module.to_cell(finding.range.start) == (0, Position(3, 6))
    fixed, count = fix_cells(cells)
    assert count == 1
    assert fixed[0] == (
        "  import torch\n  x = torch.randn(3)\n  y = torch.log_softmax(x, -1)\n  z = 1"
    )


def test_a_structural_fix_in_a_dedented_cell_keeps_its_indentation() -> None:
    # TT203's fix inserts a `with torch.no_grad():` block: its new lines must
    # get the cell's indentation back, or the cell would no longer run.
    cell = (
        "    import torch\n"
        "    import torch.nn as nn\n"
        "    model = nn.Linear(4, 2)\n"
        "    for p in model.parameters():\n"
        "        p.data.mul_(0.9)\n"
        "    print(model)"
    )
    # (A hint: fixed only when hints are shown, as `check --fix --show-hints`.)
    fixed, count = fix_cells([cell], config=Config(show_hints=True), unsafe=True)
    assert count >= 1
    assert "        with torch.no_grad():\n            p.mul_(0.9)\n" in fixed[0]
    assert lint_cells(fixed).broken == frozenset()


def test_last_expression_of_a_cell_is_displayed_not_discarded() -> None:
    setup = "import torch\nx = torch.zeros(3)"

    def tt202(*cells: str) -> list[tuple[int, int]]:
        result = lint_cells([setup, *cells])
        return [
            result.module.to_cell(f.range.start)[0]  # type: ignore[index]
            for f in result.findings
            if f.code == "TT202"
        ]

    assert tt202("x.clamp(min=0.1)") == []  # Jupyter shows the clamped tensor
    assert tt202("x.clamp(min=0.1)\n# a comment after it") == []
    assert tt202("x.clamp(min=0.1);") == [1]  # `;` hides the output: thrown away
    assert tt202("x.clamp(min=0.1)\ny = x + 1") == [1]  # not the last statement
    assert tt202("for _ in range(2):\n    x.clamp(min=0.1)") == [1]  # not top level
    assert tt202("%%timeit\nx.clamp(min=0.1)\nx.clamp(max=1)") == []  # timed on purpose
    assert tt202("%%time\nx.clamp(min=0.1)\ny = 1") == [1]
