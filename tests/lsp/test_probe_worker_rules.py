"""The language server's "confirmed by the probe" note reaches the worker
rules: a CPU probe run of `iterable-duplicates` confirms TT105, and the TT105
finding in an open document then says so, with the measured evidence as
related information."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import session

ROOT = Path(__file__).resolve().parents[2]


async def test_probe_confirms_tt105_in_the_editor(root: Path) -> None:
    example = ROOT / "examples" / "tt105_iterable_not_sharded.py"
    async with session(root) as h:
        uri = h.open("stream.py", example.read_text(encoding="utf-8"))
        (before,) = [d for d in await h.diagnostics(uri, 1) if d.code == "TT105"]
        assert "(confirmed on this machine)" not in before.message
        mark = len(h.publishes)
        result = await h.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="torchtrap.runProbe",
                arguments=[{"timeout": 120, "only": ["iterable-duplicates"]}],
            )
        )
        assert result is not None
        rules = result["json"]["rules"]
        if rules.get("TT105", {}).get("verdict") != "confirmed":
            pytest.skip("the probe did not confirm TT105 on this machine")
        (after,) = [d for d in await h.diagnostics(uri, 1, after=mark) if d.code == "TT105"]
        assert after.message == f"{before.message} (confirmed on this machine)"
        notes = [r.message for r in after.related_information or []]
        assert any(
            n.startswith("the probe on this machine: ") and "10 items, 2 workers" in n
            for n in notes
        ), notes
