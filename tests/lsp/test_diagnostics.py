"""Open / change / save / close, and what a diagnostic carries."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import session

SOURCE = "import os\n\nx = 1\ndanger(x)\n"


async def test_open_change_close(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", SOURCE)
        diags = await h.diagnostics(uri, 1)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT901", 3)]
        d = diags[0]
        assert d.source == "torchtrap"
        assert d.severity == types.DiagnosticSeverity.Warning
        assert d.range == types.Range(types.Position(3, 0), types.Position(3, 9))
        assert d.code_description is not None and d.code_description.href.endswith("TT901.md")
        assert d.related_information and d.related_information[0].message == "imported here"
        assert d.related_information[0].location.range.start.line == 0
        assert d.related_information[0].location.uri == uri

        v2 = h.change(uri, "x = 1\n")
        assert await h.diagnostics(uri, v2) == []
        v3 = h.change(uri, "danger(1)\ndanger(2)\n")
        assert [d.range.start.line for d in await h.diagnostics(uri, v3)] == [0, 1]

        mark = len(h.publishes)
        h.close(uri)
        assert await h.diagnostics(uri, None, after=mark) == []


async def test_severity_and_docs_url_from_settings(root: Path) -> None:
    settings = {"severity": {"TT9": "Hint", "TT901": "Error"}, "docsBaseUrl": "https://x/{code}"}
    async with session(root, settings=settings) as h:
        uri = h.open("a.py", SOURCE)
        (d,) = await h.diagnostics(uri, 1)
        assert d.severity == types.DiagnosticSeverity.Error  # longest key wins
        assert d.code_description is not None and d.code_description.href == "https://x/TT901"


async def test_broken_rule_is_logged_and_skipped(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", "# boom\n" + SOURCE)
        diags = await h.diagnostics(uri, 1)
        assert [d.code for d in diags] == ["TT901"]  # the other rule still ran
        assert not h.client.messages  # no pop-up
        for _ in range(100):
            if any("TT902" in m.message for m in h.client.log_messages):
                break
            await __import__("asyncio").sleep(0.02)
        assert any("TT902" in m.message for m in h.client.log_messages)


async def test_on_save_mode(root: Path) -> None:
    async with session(root, settings={"run": "onSave"}) as h:
        uri = h.open("a.py", "x = 1\n")
        assert await h.diagnostics(uri, 1) == []
        mark = len(h.publishes)
        v2 = h.change(uri, SOURCE)
        await __import__("asyncio").sleep(0.3)
        assert not [p for p in h.publishes[mark:] if p.uri == uri]  # nothing while typing
        h.save(uri)
        assert [d.code for d in await h.diagnostics(uri, v2)] == ["TT901"]


async def test_disable_clears(root: Path) -> None:
    async with session(root, settings={"enable": False}) as h:
        uri = h.open("a.py", SOURCE)
        assert await h.diagnostics(uri) == []


async def test_started_by_the_cli(root: Path) -> None:
    """`python -m torchtrap lsp`, as the VS Code client launches it (real rules only)."""
    text = "import torch\n\ndef f(x):  # 对数\n    return torch.log(torch.softmax(x, -1))\n"
    async with session(root, command=[sys.executable, "-m", "torchtrap", "lsp"]) as h:
        uri = h.open("a.py", text)
        diags = await h.diagnostics(uri, 1)
        assert [(d.code, d.range.start.line) for d in diags] == [("TT201", 3)]
        rules = await h.command("torchtrap.explainRule")
        assert "TT901" not in [r["code"] for r in rules]


async def test_hints_are_shown_faintly_in_the_editor(root: Path) -> None:
    # `check` hides hints unless asked (tests/core/test_hints_cli.py); the
    # editor shows them as Hint diagnostics even when the project's
    # pyproject.toml says `show-hints = false`, and Fix All fixes them.
    (root / "pyproject.toml").write_text("[tool.torchtrap]\nshow-hints = false\n")
    text = (
        "import torch\nfrom torch.autograd import Variable\n\n"
        "def f(real):\n    return Variable(real)\n"
    )
    async with session(root) as h:
        uri = h.open("gan.py", text)
        (diag,) = [d for d in await h.diagnostics(uri, 1) if d.code == "TT210"]
        assert diag.severity == types.DiagnosticSeverity.Hint
        result = await h.command("torchtrap.fixAll", uri)
        assert result["applied"] is True
