"""Exact ranges on lines with CJK, emoji, tabs and form feeds, in UTF-16
(the LSP default) and UTF-8 (negotiated when the client offers it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import capabilities, session

# The seed authors write Chinese comments; emoji show up in strings and logs.
SOURCE = (
    "import os\n"
    "# 数据加载器：每个 worker 的随机数种子\n"
    'label = "猫🐈"; danger(label)  # 危险 😀\n'
    "if True:\n"
    "\tvalue = 1;\tdanger(value)\n"
    "\x0c# a form feed starts this line\n"
    "emoji = '😀😀'; danger(emoji)\n"
)

CODECS = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2)}


def units(text: str, encoding: str) -> int:
    codec, width = CODECS[encoding]
    return len(text.encode(codec)) // width


def expected_ranges(text: str, encoding: str) -> list[tuple[int, int, int]]:
    out = []
    for number, line in enumerate(text.split("\n")):
        start = line.find("danger(")
        if start == -1:
            continue
        end = line.index(")", start) + 1
        out.append((number, units(line[:start], encoding), units(line[:end], encoding)))
    return out


ENCODINGS = [
    pytest.param(None, "utf-16", id="utf-16"),
    pytest.param(["utf-8", "utf-16"], "utf-8", id="utf-8"),
    pytest.param(["utf-16", "utf-8"], "utf-8", id="utf-8-offered-second"),
]


@pytest.mark.parametrize(("offered", "negotiated"), ENCODINGS)
async def test_ranges(root: Path, offered: list[str] | None, negotiated: str) -> None:
    async with session(root, caps=capabilities(encodings=offered)) as h:
        assert h.encoding == negotiated
        uri = h.open("cjk.py", SOURCE)
        diags = await h.diagnostics(uri, 1)
        got = [(d.range.start.line, d.range.start.character, d.range.end.character) for d in diags]
        assert got == expected_ranges(SOURCE, negotiated)
        # The columns really differ between the encodings on the emoji line.
        assert units('label = "猫🐈"; ', "utf-8") != units('label = "猫🐈"; ', "utf-16")


@pytest.mark.parametrize(("offered", "negotiated"), ENCODINGS[:2])
async def test_incremental_edits_after_wide_characters(
    root: Path, offered: list[str] | None, negotiated: str
) -> None:
    async with session(root, caps=capabilities(encodings=offered)) as h:
        uri = h.open("cjk.py", SOURCE)
        await h.diagnostics(uri, 1)
        lines = SOURCE.split("\n")
        # Insert a call right after the emoji comment on line 2, and rename
        # a name after the form feed (pygls' own store would split there).
        end2 = units(lines[2], negotiated)
        at5 = units("\x0c# a ", negotiated)
        version = h.edit(
            uri,
            [
                types.TextEdit(
                    types.Range(types.Position(2, end2), types.Position(2, end2)),
                    "\ndanger('😀')",
                ),
                types.TextEdit(
                    types.Range(types.Position(6, at5), types.Position(6, at5 + 4)), "FORM"
                ),
            ],
        )
        assert "\x0c# a FORM feed" in h.texts[uri]
        diags = await h.diagnostics(uri, version)
        got = [(d.range.start.line, d.range.start.character, d.range.end.character) for d in diags]
        assert got == expected_ranges(h.texts[uri], negotiated)


@pytest.mark.parametrize(("offered", "negotiated"), ENCODINGS[:2])
async def test_fix_on_emoji_line_lands_exactly(
    root: Path, offered: list[str] | None, negotiated: str
) -> None:
    async with session(root, caps=capabilities(encodings=offered)) as h:
        uri = h.open("cjk.py", SOURCE)
        await h.diagnostics(uri, 1)
        (action, *_) = await h.code_actions(uri, 2)
        resolved = await h.resolve(action)
        assert resolved.edit is not None
        version = h.apply_workspace_edit(resolved.edit)
        assert 'label = "猫🐈"; safe(label)  # 危险 😀' in h.texts[uri]
        diags = await h.diagnostics(uri, version)
        assert [d.range.start.line for d in diags] == [4, 6]
