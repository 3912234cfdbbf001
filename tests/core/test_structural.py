"""Structural fixes (libcst): wrap in ``if``, replace statements with a
template, move a script into ``main()``; and libcst stays off the
diagnostics path."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from torchtrap.facts.index import NodeIndex
from torchtrap.fixes.apply import apply_edits
from torchtrap.fixes.structural import (
    can_move_into_main,
    can_replace_statements,
    move_into_main,
    replace_statements,
    wrap_in_if,
)
from torchtrap.source import SourceText

ROOT = Path(__file__).resolve().parents[2]

METHOD = '''\
import torch


class Model:
    def step(self, x):
        """Docstring."""
        # about y
        y = x * 2
        note = """first
second"""  # trailing
        z = y; w = 2
        return y + z + w
'''


def _parse(text: str) -> tuple[SourceText, ast.Module]:
    tree = ast.parse(text)
    NodeIndex(tree)
    return SourceText(text), tree


def _strings(text: str) -> list[str]:
    return [
        n.value
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def test_wrap_in_if_reindents_without_changing_strings_and_keeps_comments() -> None:
    source, tree = _parse(METHOD)
    body = tree.body[1].body[0].body  # type: ignore[attr-defined]
    statements = body[1:3]  # y = ..., note = ...
    assert can_replace_statements(tree, statements)
    edits = wrap_in_if(source, tree, statements, "x.requires_grad")
    fixed = apply_edits(METHOD, edits)
    assert fixed == METHOD.replace(
        '        # about y\n        y = x * 2\n        note = """first\nsecond"""  # trailing\n',
        "        # about y\n        if x.requires_grad:\n            y = x * 2\n"
        '            note = """first\nsecond"""  # trailing\n',
    )
    assert _strings(fixed) == _strings(METHOD)
    # Only the changed lines are replaced: the edit starts at the `if`.
    assert [e.range.start.line for e in edits] == [8]


def test_wrap_in_if_at_module_level_and_with_crlf() -> None:
    text = "import os\r\n\r\nx = 1\r\nprint(x)  # show\r\n"
    source, tree = _parse(text)
    fixed = apply_edits(text, wrap_in_if(source, tree, tree.body[1:], "os.environ"))
    assert fixed == "import os\r\n\r\nif os.environ:\r\n    x = 1\r\n    print(x)  # show\r\n"


def test_statements_sharing_a_line_or_not_consecutive_are_refused() -> None:
    _, tree = _parse(METHOD)
    body = tree.body[1].body[0].body  # type: ignore[attr-defined]
    assert not can_replace_statements(tree, body[3:4])  # `z = y` shares its line
    assert not can_replace_statements(tree, [body[1], body[4]])
    assert not can_replace_statements(tree, [])
    source, one_line = _parse("def f(x):\n    if x: y = 1\n    return x\n")
    inner = one_line.body[0].body[0].body  # type: ignore[attr-defined]
    assert can_replace_statements(one_line, inner)
    assert not can_replace_statements(one_line, inner, source)  # on its header's line
    _, flat = _parse("a = 1; b = 2\nc = 3\n")
    assert not can_replace_statements(flat, flat.body[:1])
    assert can_replace_statements(flat, flat.body[2:])


def test_replace_statements_nests_a_body_in_a_template() -> None:
    source, tree = _parse(METHOD)
    fn = tree.body[1].body[0]  # type: ignore[attr-defined]
    edits = replace_statements(
        source, tree, fn.body[1:], "def inner():\n    __body__\n\nreturn inner()\n"
    )
    fixed = apply_edits(METHOD, edits)
    assert "        def inner():\n            # about y\n            y = x * 2\n" not in fixed
    assert "        # about y\n        def inner():\n            y = x * 2\n" in fixed
    assert "            z = y; w = 2\n            return y + z + w\n\n        return inner()\n" in (
        fixed
    )
    assert _strings(fixed) == _strings(METHOD)
    namespace: dict[str, object] = {}
    exec(compile(fixed.replace("import torch\n", ""), "m", "exec"), namespace)
    assert namespace["Model"]().step(1) == 2 + 2 + 2  # type: ignore[operator]


SCRIPT = """\
\"\"\"A training script.\"\"\"
import torch

BATCH = 4


# the data
data = list(range(8))


def collate(batch):
    return batch


loader = torch.utils.data.DataLoader(data, collate_fn=collate, num_workers=2)
for batch in loader:  # iterate
    print(batch)
"""


def test_move_into_main_keeps_definitions_at_module_level() -> None:
    source, tree = _parse(SCRIPT)
    moved = [tree.body[3], tree.body[5], tree.body[6]]
    assert can_move_into_main(tree, moved)
    fixed = apply_edits(SCRIPT, move_into_main(source, tree, moved))
    assert fixed == (
        '"""A training script."""\nimport torch\n\nBATCH = 4\n\n\n'
        "def collate(batch):\n    return batch\n\n\n"
        "def main():\n    # the data\n    data = list(range(8))\n\n"
        "    loader = torch.utils.data.DataLoader(data, collate_fn=collate, num_workers=2)\n"
        "    for batch in loader:  # iterate\n        print(batch)\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    )


def test_move_into_main_declares_globals_and_picks_the_name() -> None:
    text = "import sys\nsize = 3\n\n\ndef show():\n    print(size)\n\n\nshow()\n"
    source, tree = _parse(text)
    moved = [tree.body[1], tree.body[3]]
    fixed = apply_edits(
        text, move_into_main(source, tree, moved, function="main_2", global_names=["size"])
    )
    assert fixed == (
        "import sys\n\n\ndef show():\n    print(size)\n\n\n"
        "def main_2():\n    global size\n    size = 3\n\n    show()\n\n\n"
        'if __name__ == "__main__":\n    main_2()\n'
    )
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(fixed, "m", "exec"), namespace)
    assert namespace["size"] == 3


def test_move_into_main_refuses_statements_sharing_a_line() -> None:
    _, tree = _parse("import os; x = 1\nprint(x)\n")
    assert not can_move_into_main(tree, tree.body[1:])
    assert not can_move_into_main(tree, [])


def test_template_without_placeholder_gives_no_edits() -> None:
    source, tree = _parse("x = 1\n")
    assert replace_statements(source, tree, tree.body, "pass\n") == []


# The rules whose examples/ files get a structural fix.
STRUCTURAL_CODES: tuple[str, ...] = ("TT105", "TT106", "TT204", "TT227")


def test_lint_never_imports_libcst() -> None:
    """The diagnostics path (lint, listing fixes) runs without libcst;
    building a structural fix's edits imports it."""
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from torchtrap.engine import lint
        STRUCTURAL = STRUCTURAL_CODES
        examples = Path(sys.argv[1]) / "examples"
        findings = []
        for path in sorted(examples.glob("*.py")):
            findings += lint(path.read_text(encoding="utf-8"), str(path))
        titles = [fix.title for f in findings for fix in f.fixes]
        assert titles, "no fixes listed"
        assert "libcst" not in sys.modules, "lint imported libcst"
        structural = [
            fix for f in findings if f.code in STRUCTURAL for fix in f.fixes
        ]
        assert len(structural) >= len(STRUCTURAL), "no structural fix listed"
        for fix in structural:
            assert fix.edits
        import ast
        from torchtrap.fixes.structural import wrap_in_if
        from torchtrap.source import SourceText
        tree = ast.parse("x = 1\\n")
        assert wrap_in_if(SourceText("x = 1\\n"), tree, tree.body, "True")
        assert "libcst" in sys.modules, "structural fixes did not use libcst"
        print("ok")
        """
    )
    script = script.replace("STRUCTURAL_CODES", repr(STRUCTURAL_CODES))
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _check_imports_libcst(fmt: str) -> tuple[bool, str]:
    """Run `torchtrap check --format fmt` on the examples in a fresh
    interpreter: did it import libcst, and what did it print."""
    script = textwrap.dedent(
        """
        import contextlib, io, sys
        from torchtrap.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["check", "--no-cache", "--exit-zero", "-j", "1", "--format", sys.argv[2],
                  sys.argv[1] + "/examples"])
        print("libcst" in sys.modules)
        print(out.getvalue())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT), fmt],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    first, _, rest = done.stdout.partition("\n")
    return first == "True", rest


def test_check_text_output_lists_structural_fixes_without_building_them() -> None:
    # The text output prints fix titles only: building TT106's `main()`
    # costs a libcst parse of the whole script, paid only when printed.
    imported, out = _check_imports_libcst("text")
    assert "TT106" in out and "help: Move the script into `main()`" in out
    assert not imported
    imported, out = _check_imports_libcst("json")
    assert imported and '"edits"' in out


def test_decorated_definitions_are_found_and_keep_their_decorators() -> None:
    text = (
        "class Model:\n"
        "    def step(self, x):\n"
        "        @torch.no_grad()\n"
        "        @staticmethod\n"
        "        def inner(y):\n"
        "            return y\n"
        "        return inner(x)\n"
    )
    source, tree = _parse(text)
    body = tree.body[0].body[0].body  # type: ignore[attr-defined]
    assert can_replace_statements(tree, body[:1], source)
    fixed = apply_edits(text, wrap_in_if(source, tree, body[:1], "x is not None"))
    assert fixed == text.replace(
        "        @torch.no_grad()\n        @staticmethod\n        def inner(y):\n"
        "            return y\n",
        "        if x is not None:\n            @torch.no_grad()\n            @staticmethod\n"
        "            def inner(y):\n                return y\n",
    )
