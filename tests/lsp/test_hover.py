"""Hover: rule docs on a finding's range and on codes in suppression comments."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import session


async def test_hover(root: Path) -> None:
    text = (
        "x = 1\n"
        "danger(x)\n"
        "y = 2  # torchtrap: ignore[TT101, TT901]\n"
        "z = 3  # noqa: E501,tt901\n"
        "w = 4  # torchtrap: ignore[XX999]\n"
    )
    async with session(root) as h:
        uri = h.open("a.py", text)
        await h.diagnostics(uri, 1)

        on_finding = await h.hover(uri, 1, 3)
        assert on_finding is not None
        assert isinstance(on_finding.contents, types.MarkupContent)
        assert on_finding.contents.kind == types.MarkupKind.Markdown
        value = on_finding.contents.value
        assert "danger() is dangerous" not in value  # the editor shows the diagnostic
        assert "**TT901** `fake-danger`: It is dangerous." in value
        assert "## Why is this bad?" not in value  # the full doc is one click away
        assert "Fixes: Replace `danger` with `safe`; Delete the call (unsafe:" in value
        assert "[TT901 documentation](" in value and "TT901.md)" in value
        assert on_finding.range == types.Range(types.Position(1, 0), types.Position(1, 9))

        assert await h.hover(uri, 0, 1) is None  # no finding there

        column = text.splitlines()[2].index("TT901") + 2
        in_comment = await h.hover(uri, 2, column)
        assert in_comment is not None and isinstance(in_comment.contents, types.MarkupContent)
        assert "**TT901** `fake-danger`" in in_comment.contents.value
        start = text.splitlines()[2].index("TT901")
        assert in_comment.range == types.Range(
            types.Position(2, start), types.Position(2, start + 5)
        )

        column = text.splitlines()[3].index("tt901") + 1
        noqa = await h.hover(uri, 3, column)
        assert noqa is not None and isinstance(noqa.contents, types.MarkupContent)
        assert "fake-danger" in noqa.contents.value

        assert await h.hover(uri, 3, text.splitlines()[3].index("E501") + 1) is None
        assert await h.hover(uri, 4, text.splitlines()[4].index("XX999") + 1) is None


async def test_hover_on_a_real_rule_is_a_few_lines(root: Path) -> None:
    # Issue 13: hovers were 2.7k-4.2k characters and repeated the diagnostic.
    text = "import torch\n\n\ndef f(prob):\n    prob.clamp(min=1e-4)\n    return prob.log()\n"
    async with session(root) as h:
        uri = h.open("a.py", text)
        diags = await h.diagnostics(uri, 1)
        (tt202,) = [d for d in diags if d.code == "TT202"]
        hover = await h.hover(uri, 4, 6)
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        value = hover.contents.value
        assert tt202.message not in value
        assert len(value) < 800 and len(value.split("\n\n")) <= 4, value
        assert value.startswith("**TT202** `discarded-out-of-place-result`: These operations")
        assert "Measured: " in value  # the rule's fact
        fixes = "Fixes: Assign the result back to `prob`; Use the in-place `clamp_()` (unsafe: "
        assert fixes in value
        assert value.endswith("TT202.md)")


def test_hover_tells_the_why_once_and_links_the_doc() -> None:
    # The diagnostic states the consequence; the hover adds why, once (the
    # fork/spawn story is not repeated), and the rule doc.
    from torchtrap.lsp.hover import rule_markdown
    from torchtrap.lsp.settings import Settings

    tt103 = rule_markdown("TT103", Settings()) or ""
    assert tt103.count("under fork") == 1 and tt103.count("forked subprocess") == 1
    assert tt103.endswith("[TT103 documentation](" + Settings().docs_url("TT103") + ")")
    tt106 = rule_markdown("TT106", Settings()) or ""
    assert "re-imports the main module" in tt106
    assert "finished its bootstrapping phase" in tt106  # once the worker's error, in related
