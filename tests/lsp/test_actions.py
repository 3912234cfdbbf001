"""Quick fixes (lazy edits via codeAction/resolve), the ignore action and
its comment merging, fix-all (code action and command), and the applyFix
command for clients without resolve support. Every fix applied re-lints
clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import capabilities, edits_by_uri, session

SOURCE = "import os\n\nx = 1\ndanger(x)\n"


async def test_actions_are_listed_without_edits_and_resolved(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", SOURCE)
        await h.diagnostics(uri, 1)
        actions = await h.code_actions(uri, 3, only=["quickfix"])
        titles = [a.title for a in actions]
        assert titles == [
            "TorchTrap (TT901): Replace `danger` with `safe`",
            "TorchTrap (TT901): Delete the call (unsafe: drops what it computes)",
            "TorchTrap (TT901): Ignore on this line",
        ]
        assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)
        assert [a.is_preferred for a in actions[:2]] == [True, None]  # the safe one
        assert actions[0].edit is None and actions[0].data  # built lazily
        assert actions[0].diagnostics and actions[0].diagnostics[0].code == "TT901"
        assert await h.code_actions(uri, 0, only=["quickfix"]) == []  # a clean line
        # Without `only`, the lazy fix-all source action comes too.
        kinds = [a.kind for a in await h.code_actions(uri, 0)]
        assert kinds == ["source.fixAll.torchtrap"]


@pytest.mark.parametrize(
    ("index", "expected"),
    [(0, "safe(x)"), (1, "None")],
    ids=["safe-fix", "unsafe-fix"],
)
async def test_each_fix_relints_clean(root: Path, index: int, expected: str) -> None:
    async with session(root) as h:
        uri = h.open("a.py", SOURCE)
        await h.diagnostics(uri, 1)
        action = (await h.code_actions(uri, 3))[index]
        resolved = await h.resolve(action)
        assert resolved.edit is not None and resolved.edit.document_changes
        change = resolved.edit.document_changes[0]
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == 1  # the edit is tied to the version
        version = h.apply_workspace_edit(resolved.edit)
        assert h.texts[uri].splitlines()[3] == expected
        assert await h.diagnostics(uri, version) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("danger(x)", "danger(x)  # torchtrap: ignore[TT901]"),
        ("danger(x)  # noqa: E501", "danger(x)  # noqa: E501, TT901"),
        ("danger(x)  # torchtrap: ignore[TT101]", "danger(x)  # torchtrap: ignore[TT101, TT901]"),
        ("danger(x)  # 注释 😀", "danger(x)  # 注释 😀  # torchtrap: ignore[TT901]"),
    ],
    ids=["append", "merge-noqa", "merge-ignore", "after-wide-comment"],
)
async def test_ignore_action_merges_comments(root: Path, line: str, expected: str) -> None:
    async with session(root) as h:
        uri = h.open("a.py", f"x = 1\n{line}\n")
        await h.diagnostics(uri, 1)
        actions = await h.code_actions(uri, 1)
        ignore = [a for a in actions if a.title.endswith("Ignore on this line")]
        assert len(ignore) == 1 and ignore[0].edit is not None
        version = h.apply_workspace_edit(ignore[0].edit)
        assert h.texts[uri].splitlines()[1] == expected
        assert await h.diagnostics(uri, version) == []


async def test_fix_all_code_action(root: Path) -> None:
    text = "danger(1)\nif True:\n    danger(2); danger(3)\n"
    async with session(root) as h:
        uri = h.open("a.py", text)
        assert len(await h.diagnostics(uri, 1)) == 3
        # As editor.codeActionsOnSave asks: only the fix-all kind, edit included.
        (action,) = await h.code_actions(uri, 0, only=["source.fixAll.torchtrap"])
        assert action.kind == "source.fixAll.torchtrap" and action.edit is not None
        (edits,) = edits_by_uri(action.edit).values()
        assert len(edits) == 1  # one edit
        version = h.apply_workspace_edit(action.edit)
        assert h.texts[uri] == "safe(1)\nif True:\n    safe(2); safe(3)\n"
        assert await h.diagnostics(uri, version) == []
        # Listed lazily with the quick fixes, and resolvable.
        uri2 = h.open("b.py", text)
        await h.diagnostics(uri2, 1)
        lazy = [a for a in await h.code_actions(uri2, 0) if a.kind == "source.fixAll.torchtrap"]
        assert lazy and lazy[0].edit is None
        assert (await h.resolve(lazy[0])).edit is not None


async def test_fix_all_command(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", "danger(1)\ndanger(2)\n")
        await h.diagnostics(uri, 1)
        result = await h.command("torchtrap.fixAll", uri)
        assert result == {"applied": True, "fixes": 2, "skipped": 0, "message": "Fixed 2 findings"}
        version = h.apply_workspace_edit(h.applied_edits[-1])
        assert h.texts[uri] == "safe(1)\nsafe(2)\n"
        assert await h.diagnostics(uri, version) == []
        # Now clean: Fix All says so instead of nothing.
        assert await h.command("torchtrap.fixAll", uri) == {
            "applied": False,
            "fixes": 0,
            "skipped": 0,
            "message": "Nothing to fix",
        }


# A TT202 finding whose only fix is unsafe (the in-place twin), and a safe TT901.
UNSAFE_ONLY = (
    "import torch\n\n\ndef f(scores, mask):\n    scores.masked_fill(mask, 0)\n    danger(1)\n"
)


async def test_fix_all_skips_unsafe_fixes_and_says_so(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", UNSAFE_ONLY)
        assert len(await h.diagnostics(uri, 1)) == 2
        actions = await h.code_actions(uri, 4, only=["quickfix"])
        unsafe = [a for a in actions if "(unsafe: " in a.title]
        assert unsafe and all(not a.is_preferred for a in unsafe)
        result = await h.command("torchtrap.fixAll", uri)
        assert result["message"] == "Fixed 1 finding (1 unsafe fix skipped)"
        assert (result["fixes"], result["skipped"]) == (1, 1)
        h.apply_workspace_edit(h.applied_edits[-1])
        assert "    scores.masked_fill(mask, 0)\n    safe(1)\n" in h.texts[uri]
        # On save (only=fixAll), the edit holds the safe fix alone as well.
        uri2 = h.open("b.py", UNSAFE_ONLY)
        await h.diagnostics(uri2, 1)
        (action,) = await h.code_actions(uri2, 0, only=["source.fixAll.torchtrap"])
        assert action.title == "TorchTrap: fix all safe fixes" and action.edit is not None
        h.apply_workspace_edit(action.edit)
        assert "masked_fill(" in h.texts[uri2] and "safe(1)" in h.texts[uri2]


@pytest.mark.parametrize("where", ["settings", "pyproject"])
async def test_unsafe_fixes_setting_lets_fix_all_apply_them(root: Path, where: str) -> None:
    settings = {"unsafeFixes": True} if where == "settings" else {}
    if where == "pyproject":
        (root / "pyproject.toml").write_text("[tool.torchtrap]\nunsafe-fixes = true\n")
    async with session(root, settings=settings) as h:
        uri = h.open("a.py", UNSAFE_ONLY)
        await h.diagnostics(uri, 1)
        (action,) = await h.code_actions(uri, 0, only=["source.fixAll.torchtrap"])
        assert action.title == "TorchTrap: fix all, unsafe fixes included"
        result = await h.command("torchtrap.fixAll", uri)
        assert result["message"] == "Fixed 2 findings"
        h.apply_workspace_edit(h.applied_edits[-1])
        assert "scores.masked_fill_(mask, 0)" in h.texts[uri] and "safe(1)" in h.texts[uri]


async def test_apply_fix_command_without_resolve_support(root: Path) -> None:
    caps = capabilities(resolve=False, document_changes=False)
    async with session(root, caps=caps) as h:
        uri = h.open("a.py", SOURCE)
        await h.diagnostics(uri, 1)
        action = (await h.code_actions(uri, 3))[0]
        assert action.edit is None and action.command is not None
        assert action.command.command == "torchtrap.applyFix"
        arguments = list(action.command.arguments or ())
        assert arguments == [uri, 1, "TT901", 3, 0]
        assert await h.command(action.command.command, *arguments) == {"applied": True}
        edit = h.applied_edits[-1]
        assert edit.changes and not edit.document_changes  # the client's capability
        version = h.apply_workspace_edit(edit)
        assert await h.diagnostics(uri, version) == []
        # The dict form, and a stale version is refused.
        uri2 = h.open("b.py", SOURCE)
        await h.diagnostics(uri2, 1)
        args = {"uri": uri2, "version": 1, "code": "TT901", "line": 3, "fix": 1}
        assert await h.command("torchtrap.applyFix", args) == {"applied": True}
        h.change(uri2, SOURCE + "\n")
        with pytest.raises(Exception, match="changed since version 1"):
            await h.command("torchtrap.applyFix", uri2, 1, "TT901", 3, 0)
