"""What Fix All leaves, reviewable: ``torchtrap.unsafeFixes`` lists the
findings whose only fixes are unsafe (each applies with
``torchtrap.applyFix``), ``torchtrap.fixAll`` with ``unsafe: true`` applies
them all, and "Fix all TTxxx in this file" sits in the Ctrl+. menu."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import capabilities, session

# A TT202 whose only fix is unsafe (the in-place twin), and a safe TT901.
UNSAFE_ONLY = (
    "import torch\n\n\ndef f(scores, mask):\n    scores.masked_fill(mask, 0)\n    danger(1)\n"
)


async def test_unsafe_fixes_are_listed_and_apply_one_by_one(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", UNSAFE_ONLY)
        await h.diagnostics(uri, 1)
        result = await h.command("torchtrap.fixAll", uri)
        assert result["skipped"] == 1
        version = h.apply_workspace_edit(h.applied_edits[-1])
        await h.diagnostics(uri, version)
        (item,) = await h.command("torchtrap.unsafeFixes", uri)
        assert (item["uri"], item["version"], item["code"], item["line"]) == (
            uri,
            version,
            "TT202",
            4,
        )
        assert item["title"].startswith("TorchTrap (TT202): ") and "masked_fill" in item["message"]
        args = [item[k] for k in ("uri", "version", "code", "line", "fix")]
        assert await h.command("torchtrap.applyFix", *args) == {"applied": True}
        version = h.apply_workspace_edit(h.applied_edits[-1])
        assert "    scores.masked_fill_(mask, 0)\n    safe(1)\n" in h.texts[uri]
        assert await h.diagnostics(uri, version) == []
        assert await h.command("torchtrap.unsafeFixes", uri) == []


async def test_a_reviewed_fix_needs_confirmation_with_its_full_title(root: Path) -> None:
    """Issue 35 item 11: "Review Unsafe Fixes" applies one fix only after the
    editor showed its full title and a diff: each edit is annotated as needing
    confirmation (VS Code then opens its refactor preview)."""
    async with session(root, caps=capabilities(change_annotations=True)) as h:
        uri = h.open("a.py", UNSAFE_ONLY)
        await h.diagnostics(uri, 1)
        (item,) = [i for i in await h.command("torchtrap.unsafeFixes", uri) if i["code"] == "TT202"]
        args = {k: item[k] for k in ("uri", "version", "code", "line", "fix")}
        assert await h.command("torchtrap.applyFix", {**args, "review": True}) == {"applied": True}
        edit = h.applied_edits[-1]
        (annotation,) = (edit.change_annotations or {}).values()
        assert annotation.needs_confirmation is True
        assert annotation.label == item["title"] and "(unsafe: " in annotation.label
        assert annotation.description == item["message"]
        (change,) = edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit)
        assert all(isinstance(e, types.AnnotatedTextEdit) for e in change.edits)
        # Without review (the quick fix, Fix All), nothing asks.
        await h.command("torchtrap.applyFix", args)
        assert not h.applied_edits[-1].change_annotations
        # preview: the edit comes back unapplied, for the client to show as a diff first.
        sent = len(h.applied_edits)
        shown = await h.command("torchtrap.applyFix", {**args, "preview": True})
        assert len(h.applied_edits) == sent and shown["applied"] is False
        assert shown["title"] == item["title"]
        (doc_edit,) = shown["edit"]["documentChanges"]
        assert doc_edit["textDocument"]["uri"] == uri
        assert [e["newText"] for e in doc_edit["edits"]] == ["_"]


async def test_fix_all_with_unsafe_applies_everything(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", UNSAFE_ONLY)
        await h.diagnostics(uri, 1)
        result = await h.command("torchtrap.fixAll", {"uri": uri, "unsafe": True})
        assert result["message"] == "Fixed 2 findings" and result["skipped"] == 0
        version = h.apply_workspace_edit(h.applied_edits[-1])
        assert "scores.masked_fill_(mask, 0)" in h.texts[uri] and "safe(1)" in h.texts[uri]
        assert await h.diagnostics(uri, version) == []


FIX_CODE = (
    "import torch\n\n\ndef f(x):\n    danger(1)\n    x.clamp(min=0)\n    danger(2)\n"
    "    x.clamp(max=1)\n"
)


async def test_fix_all_of_one_rule_in_the_file(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", FIX_CODE)
        diags = await h.diagnostics(uri, 1)
        assert sorted(str(d.code) for d in diags) == ["TT202", "TT202", "TT901", "TT901"]
        titles = [a.title for a in await h.code_actions(uri, 4, only=["quickfix"])]
        assert "TorchTrap: fix all TT901 in this file (2)" in titles
        assert not any("fix all TT202" in t for t in titles)  # not on this line
        (action,) = [
            a
            for a in await h.code_actions(uri, 4, only=["quickfix"])
            if a.title.startswith("TorchTrap: fix all TT901")
        ]
        resolved = await h.resolve(action)
        assert resolved.edit is not None
        version = h.apply_workspace_edit(resolved.edit)
        # Only TT901's fixes: both calls replaced, the clamps untouched.
        assert "    safe(1)\n    x.clamp(min=0)\n    safe(2)\n    x.clamp(max=1)\n" in h.texts[uri]
        left = await h.diagnostics(uri, version)
        assert sorted(str(d.code) for d in left) == ["TT202", "TT202"]


async def test_fix_all_of_one_rule_near_miss_and_without_resolve(root: Path) -> None:
    async with session(root) as h:
        uri = h.open("a.py", "danger(1)\n")
        await h.diagnostics(uri, 1)
        titles = [a.title for a in await h.code_actions(uri, 0, only=["quickfix"])]
        assert not any(t.startswith("TorchTrap: fix all") for t in titles)  # one finding
    async with session(root, caps=capabilities(resolve=False)) as h:
        uri = h.open("a.py", "danger(1)\ndanger(2)\n")
        await h.diagnostics(uri, 1)
        (action,) = [
            a
            for a in await h.code_actions(uri, 0, only=["quickfix"])
            if a.title.startswith("TorchTrap: fix all")
        ]
        assert action.command is not None and action.command.command == "torchtrap.fixAll"
        result = await h.command("torchtrap.fixAll", *(action.command.arguments or ()))
        assert result["fixes"] == 2
        h.apply_workspace_edit(h.applied_edits[-1])
        assert h.texts[uri] == "safe(1)\nsafe(2)\n"
