"""The real rules through the server: diagnostics match the engine, and
every quick fix of every rule example (and of examples/*.py) applied to the
text re-lints clean for that rule."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import Harness, capabilities, edits_by_uri, session
from torchtrap.config import Config, from_table
from torchtrap.engine import lint
from torchtrap.lsp.actions import ignore_title
from torchtrap.rules import ALL_RULES, Rule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _cases(rule: type[Rule]) -> list[tuple[str, str]]:
    out = []
    for i, example in enumerate(rule.invalid):
        if not example.config:  # a per-example [tool.torchtrap] would need its own project
            out.append((f"{rule.code.lower()}_{i}.py", textwrap.dedent(example.code)))
    return out


async def _check_fixes(h: Harness, name: str, text: str, code: str, config: Config) -> int:
    """Open ``text``, compare with the engine, apply each fix of each
    ``code`` finding to a fresh copy; returns how many fixes were checked."""
    uri = h.open(name, text)
    diags = await h.diagnostics(uri, 1)
    expected = lint(text, str(h.root / name), config)
    assert [(d.code, d.range.start.line) for d in diags] == [
        (f.code, f.range.start.line - 1) for f in expected
    ]
    checked = 0
    for diag in [d for d in diags if d.code == code]:
        line = diag.range.start.line
        actions = await h.code_actions(uri, line, only=["quickfix"])
        fixes = [
            a
            for a in actions
            if a.title.startswith(f"TorchTrap ({code})") and a.title != ignore_title(code)
        ]
        for action in fixes:
            resolved = await h.resolve(action)
            assert resolved.edit is not None, action.title
            copy_uri = h.open(f"fixed_{checked}_{name}", text)
            await h.diagnostics(copy_uri, 1)
            before = sum(1 for f in expected if f.code == code)
            for change in resolved.edit.document_changes or []:
                assert isinstance(change, types.TextDocumentEdit)
                change.text_document.uri = copy_uri
            version = h.apply_workspace_edit(resolved.edit)
            after = await h.diagnostics(copy_uri, version)
            assert "TT000" not in [d.code for d in after], (action.title, h.texts[copy_uri])
            remaining = [d for d in after if d.code == code]
            assert len(remaining) < before, (action.title, h.texts[copy_uri])
            if before == 1:
                assert remaining == [], (action.title, h.texts[copy_uri])
            h.close(copy_uri)
            checked += 1
    h.close(uri)
    return checked


async def test_every_fix_of_every_rule_example_relints_clean(root: Path) -> None:
    assert ALL_RULES
    config = from_table({})
    async with session(root) as h:  # one server for all: starting one costs more
        for rule in ALL_RULES:
            for name, text in _cases(rule):
                await _check_fixes(h, name, text, rule.code, config)


@pytest.mark.skipif(not EXAMPLES, reason="no examples yet")
async def test_example_scripts(root: Path) -> None:
    async with session(root) as h:
        total = 0
        for path in EXAMPLES:
            code = path.name[:5].upper()
            text = path.read_text(encoding="utf-8")
            total += await _check_fixes(h, path.name, text, code, from_table({}))
        assert total >= len(EXAMPLES)  # each example has at least one fix


async def test_issue_snippets_with_cjk_comments(root: Path) -> None:
    text = (
        "import torch\n"
        "\n"
        "def focal(x):  # 焦点损失 🔥\n"
        "    prob = torch.softmax(x, dim=1)  # 概率\n"
        "    prob.clamp(min=0.0001, max=1.0)  # 截断 😀\n"
        "    return torch.log(torch.softmax(x, -1))  # 对数\n"
    )
    for offered in (None, ["utf-8"]):
        async with session(root, caps=capabilities(encodings=offered)) as h:
            uri = h.open("focal.py", text)
            diags = await h.diagnostics(uri, 1)
            got = {d.code: d for d in diags}
            assert {"TT201", "TT202"} <= set(got)
            codec, width = ("utf-8", 1) if offered else ("utf-16-le", 2)
            for finding in lint(text, str(h.root / "focal.py"), from_table({})):
                d = got[finding.code]
                line = text.split("\n")[finding.range.start.line - 1]
                col = len(line[: finding.range.start.column].encode(codec)) // width
                assert (d.range.start.line, d.range.start.character) == (
                    finding.range.start.line - 1,
                    col,
                )


async def test_fix_all_never_changes_a_worker_count(root: Path) -> None:
    """Fix All (the command, and on save) applies safe fixes only, and
    num_workers=0 is never one: TT103's fix is skipped, not applied."""
    path = ROOT / "examples" / "tt103_cuda_tensor_in_dataset.py"
    text = path.read_text(encoding="utf-8")
    async with session(root) as h:
        uri = h.open(path.name, text)
        diags = await h.diagnostics(uri, 1)
        assert "TT103" in [d.code for d in diags]
        action = next(
            a
            for a in await h.code_actions(uri, diags[0].range.start.line, only=["quickfix"])
            if "num_workers=0" in a.title
        )
        assert "(unsafe: loading is no longer parallel" in action.title
        assert not action.is_preferred
        result = await h.command("torchtrap.fixAll", uri)
        assert result["skipped"] >= 1
        saved = await h.code_actions(uri, 0, only=["source.fixAll.torchtrap"])
        for edit in [a.edit for a in saved if a.edit is not None] + h.applied_edits:
            for edits in edits_by_uri(edit).values():
                assert not any("num_workers" in e.new_text or e.new_text == "0" for e in edits)
