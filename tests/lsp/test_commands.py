"""workspace/executeCommand: explainRule, debugInfo, runProbe (on CPU, with
progress and cancellation), and freeing state of closed documents."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.lsp_harness import session

ROOT = Path(__file__).resolve().parents[2]


async def test_explain_rule_and_debug_info(root: Path) -> None:
    async with session(root) as h:
        rules = await h.command("torchtrap.explainRule")
        assert {"code": "TT901", "name": "fake-danger", "summary": "Calls to danger()"} in rules
        one = await h.command("torchtrap.explainRule", "tt901")
        assert one["code"] == "TT901" and one["markdown"].startswith("# TT901 `fake-danger`")
        with pytest.raises(JsonRpcException, match="unknown rule"):
            await h.command("torchtrap.explainRule", "TT999")
        info = await h.command("torchtrap.debugInfo")
        assert info["positionEncoding"] == "utf-16"
        assert info["settings"]["debounceMs"] == 20
        assert "TT901" in info["rules"]


async def test_closed_documents_are_freed(root: Path) -> None:
    async with session(root) as h:
        uris = [h.open(f"m{i}.py", f"danger({i})\n") for i in range(30)]
        for uri in uris:
            await h.diagnostics(uri, 1)
        h.change(uris[0], "def f(:\n")  # one in the syntax-error state
        await h.diagnostics(uris[0], 2)
        info = await h.command("torchtrap.debugInfo")
        assert info["openDocuments"] == 30 and info["state"]["units"] == 30
        # Only the recently linted keep their result (with its syntax tree)...
        assert info["state"]["cachedResults"] <= 16
        # ...an evicted one is re-linted when it is needed.
        (action, *_) = await h.code_actions(uris[1], 0, only=["quickfix"])
        assert (await h.resolve(action)).edit is not None
        for uri in uris:
            h.close(uri)
        info = await h.command("torchtrap.debugInfo")
        assert info["openDocuments"] == 0
        assert info["state"] == {
            "units": 0,
            "cachedResults": 0,
            "carried": 0,
            "cellTexts": 0,
            "probesRunning": 0,
        }


async def test_run_probe_on_cpu(root: Path) -> None:
    example = ROOT / "examples" / "tt101_stored_rng.py"
    async with session(root) as h:
        uri = h.open("tt101.py", example.read_text(encoding="utf-8"))
        assert any(d.code == "TT101" for d in await h.diagnostics(uri, 1))
        token = "probe-token"
        h.client.progress_reports[token] = []
        mark = len(h.publishes)
        result = await h.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="torchtrap.runProbe",
                arguments=[{"timeout": 120, "only": ["worker-rng"]}],
                work_done_token=token,
            )
        )
        assert result is not None and set(result) == {"json", "markdown", "unfinished"}
        report = result["json"]
        assert report["cancelled"] is False and result["unfinished"] == []
        assert [e["id"] for e in report["experiments"]] == ["worker-rng"]
        # Issue 35 item 5: each experiment's verdict as it ends, in the progress.
        messages = [
            v.message
            for v in h.client.progress_reports[token]
            if isinstance(v, types.WorkDoneProgressReport)
        ]
        verdict = report["experiments"][0]["verdict"]
        assert "1/1: worker-rng" in messages
        assert any(m and m.startswith(f"1/1 done: worker-rng {verdict} (") for m in messages)
        # Nothing was left: there is no rest to run.
        with pytest.raises(JsonRpcException, match="nothing left to run"):
            await h.command("torchtrap.runProbe", {"rest": True})
        assert isinstance(result["markdown"], str) and result["markdown"].strip()
        kinds = [type(v).__name__ for v in h.client.progress_reports[token]]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
        assert "WorkDoneProgressReport" in kinds
        # What the probe confirmed is appended to that rule's findings.
        if report["rules"].get("TT101", {}).get("verdict") != "confirmed":
            pytest.skip("the probe did not confirm TT101 on this machine")
        # (The project index's first relint may publish in between: look at the last.)
        await h.diagnostics(uri, 1, after=mark)
        await asyncio.sleep(0.5)
        last = h.last(uri)
        assert last is not None
        (tt101,) = [d for d in last.diagnostics if d.code == "TT101"]
        assert tt101.message.endswith("all draw the same numbers (confirmed on this machine)")
        notes = [r.message for r in tt101.related_information or []]
        assert any(n.startswith("the probe on this machine: ") for n in notes)


async def test_run_probe_cancel_kills_it(root: Path) -> None:
    async with session(root) as h:
        token = "probe-cancel"
        h.client.progress_reports[token] = []
        protocol = h.client.protocol
        params = types.ExecuteCommandParams(
            command="torchtrap.runProbe", arguments=[{"timeout": 300}], work_done_token=token
        )
        started = time.monotonic()
        future = protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="probe-1")
        while not any(
            isinstance(v, types.WorkDoneProgressReport) for v in h.client.progress_reports[token]
        ):
            await asyncio.sleep(0.05)
            assert time.monotonic() - started < 60
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="probe-1"))
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(asyncio.wrap_future(future), 30)
        # The probe stopped: its progress ended as cancelled, nothing runs.
        for _ in range(200):
            values = h.client.progress_reports[token]
            if values and isinstance(values[-1], types.WorkDoneProgressEnd):
                break
            await asyncio.sleep(0.05)
        end = h.client.progress_reports[token][-1]
        assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "cancelled"
        info = await h.command("torchtrap.debugInfo")
        assert info["state"]["probesRunning"] == 0
        assert time.monotonic() - started < 30


async def test_shutdown_stops_a_running_probe(root: Path) -> None:
    async with session(root) as h:
        # No workDoneToken: the server creates one (window/workDoneProgress/create).
        params = types.ExecuteCommandParams(command="torchtrap.runProbe", arguments=[])
        h.client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="p")
        started = time.monotonic()
        while not any(h.client.progress_reports.values()):
            await asyncio.sleep(0.05)
            assert time.monotonic() - started < 60
        (token,) = h.client.progress_reports
        assert str(token).startswith("torchtrap-")
        stopping = time.monotonic()
        await asyncio.wait_for(h.client.shutdown_session(), 30)  # exit included
        assert time.monotonic() - stopping < 30
        server = h.client._server
        assert server is not None and server.returncode is not None
