"""Typing in progress: debounce, the version guard, and syntax errors that
neither crash, pop up, nor wipe the other findings."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import session

SOURCE = "import os\n\ndanger(1)\n\n\ndanger(2)\n"


async def test_syntax_error_keeps_last_good_findings(root: Path) -> None:
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        uri = h.open("a.py", SOURCE)
        assert [d.range.start.line for d in await h.diagnostics(uri, 1)] == [2, 5]
        # The user starts a new function above both findings...
        broken = "import os\ndef f(:\n\ndanger(1)\n\n\ndanger(2)\n"
        version = h.change(uri, broken)
        diags = await h.diagnostics(uri, version)
        codes = sorted((d.code, d.range.start.line) for d in diags)
        # ...the findings stay, moved down one line; the syntax error is
        # information, not an error squiggle of its own.
        assert codes == [("TT000", 1), ("TT901", 3), ("TT901", 6)]
        (syntax,) = [d for d in diags if d.code == "TT000"]
        assert syntax.severity == types.DiagnosticSeverity.Information
        assert syntax.message.endswith("showing the findings of its last version that parsed")
        # Editing a line with a finding drops just that one.
        h.change(uri, broken.replace("danger(1)", "dang"))
        version = h.change(uri, broken.replace("danger(1)", "danger(1"))
        diags = await h.diagnostics(uri, version)
        assert sorted((d.code, d.range.start.line) for d in diags) == [
            ("TT000", 1),
            ("TT901", 6),
        ]
        # Fixed: fresh findings only.
        version = h.change(uri, broken.replace("def f(:", "def f():\n    pass"))
        diags = await h.diagnostics(uri, version)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT901", 4), ("TT901", 7)]
        assert not h.client.messages  # never a pop-up
        # No code actions from an unparsable version, but no error either.
        h.change(uri, "def f(:\n")
        assert await h.code_actions(uri, 0, only=["quickfix"]) == []


async def test_lines_typed_above_move_the_carried_findings(root: Path) -> None:
    """VS Code sends Enter at a line's start as an insertion at column 0:
    that line is moved, not edited, so its finding moves with it, and so do
    the related locations (the import each finding points at)."""
    async with session(root) as h:
        uri = h.open("a.py", SOURCE)
        before = await h.diagnostics(uri, 1)
        assert [d.range.start.line for d in before] == [2, 5]
        assert [r.location.range.start.line for r in before[0].related_information or []] == [0]
        # Two lines typed above `import os`, the first one unfinished.
        at = types.Range(types.Position(0, 0), types.Position(0, 0))
        version = h.edit(uri, [types.TextEdit(at, "def f(:\n\n")])
        diags = await h.diagnostics(uri, version)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT901", 4), ("TT901", 7)]
        for diag in diags:
            (imported,) = diag.related_information or []
            assert imported.location.range.start.line == 2  # `import os`, moved
        # A line typed right above `danger(1)`: it moves too, not dropped.
        at = types.Range(types.Position(4, 0), types.Position(4, 0))
        version = h.edit(uri, [types.TextEdit(at, "x = (\n")])
        diags = await h.diagnostics(uri, version)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT901", 5), ("TT901", 8)]
        lines = h.texts[uri].splitlines()
        assert [lines[d.range.start.line] for d in diags] == ["danger(1)", "danger(2)"]


async def test_syntax_errors_follow_the_show_syntax_errors_setting(root: Path) -> None:
    # Off by default (ruff's editor setting; the editor's Python support
    # reports syntax errors already); a file that never parsed says so.
    async with session(root) as h:
        uri = h.open("a.py", SOURCE)
        await h.diagnostics(uri, 1)
        version = h.change(uri, "def f(:\n" + SOURCE)
        diags = await h.diagnostics(uri, version)
        assert sorted((d.code, d.range.start.line) for d in diags) == [("TT901", 3), ("TT901", 6)]
    async with session(root, settings={"showSyntaxErrors": True}) as h:
        uri = h.open("b.py", "for epoch in range(3):\n")
        (syntax,) = await h.diagnostics(uri, 1)
        assert syntax.code == "TT000"
        assert syntax.message.endswith("; nothing in it is checked until it parses")
        assert "last version" not in syntax.message


async def test_debounce_publishes_once_for_the_last_version(root: Path) -> None:
    async with session(root, settings={"debounceMs": 300}) as h:
        uri = h.open("a.py", "x = 1\n")
        await h.diagnostics(uri, 1)
        mark = len(h.publishes)
        for i in range(10):  # faster than the debounce
            h.change(uri, "x = 1\n" + "danger(0)\n" * (i + 1))
            await asyncio.sleep(0.01)
        diags = await h.diagnostics(uri, 11, after=mark)
        assert len(diags) == 10
        await asyncio.sleep(0.4)
        assert [p.version for p in h.publishes[mark:] if p.uri == uri] == [11]


async def test_stale_results_are_never_published(root: Path) -> None:
    async with session(root, settings={"debounceMs": 0}) as h:
        uri = h.open("a.py", "x = 1\n")
        await h.diagnostics(uri, 1)
        mark = len(h.publishes)
        # v2 takes 500 ms to lint (the fake slow rule); v3 arrives meanwhile.
        h.change(uri, "# sleep: 500\ndanger(1)\n")
        await asyncio.sleep(0.1)
        v3 = h.change(uri, "danger(1)\ndanger(2)\ndanger(3)\n")
        diags = await h.diagnostics(uri, v3, after=mark)
        assert len(diags) == 3
        await asyncio.sleep(0.3)
        versions = [p.version for p in h.publishes[mark:] if p.uri == uri]
        assert versions == [v3]  # v2's result was dropped, not published late
        # Every publish matches the text of the version it names.
        for p in h.publishes:
            if p.uri == uri and p.version == v3:
                assert len(p.diagnostics) == 3


async def test_large_file(root: Path) -> None:
    body = "".join(f"value_{i} = {i}  # 第{i}行 😀\n" for i in range(10_000))
    text = body + "danger(value_9999)\n"
    async with session(root) as h:
        uri = h.open("big.py", text)
        diags = await h.diagnostics(uri, 1, timeout=30)
        assert [d.range.start.line for d in diags] == [10_000]
        # An incremental edit near the top moves the finding down.
        at = types.Range(types.Position(5, 0), types.Position(5, 0))
        version = h.edit(uri, [types.TextEdit(at, "danger(1)\n")])
        diags = await h.diagnostics(uri, version, timeout=30)
        assert [d.range.start.line for d in diags] == [5, 10_001]
        actions = await h.code_actions(uri, 10_001, only=["quickfix"])
        assert actions and actions[0].title.startswith("TorchTrap (TT901)")
