"""torchtrap.runFile / torchtrap.showRunReport: the language server runs the
file with `torchtrap run`'s checks, streams its output, and publishes what
the run saw on the user's lines (source `torchtrap-run`); the static finding
there says "confirmed when run"; editing the file clears the run's
diagnostics; a report written by the CLI brings them back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.lsp_harness import session

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tt101_stored_rng.py"


async def _settled(h: Any, uri: str, want: Any, timeout: float = 30.0) -> list[types.Diagnostic]:
    deadline = time.monotonic() + timeout
    while True:
        last = h.last(uri)
        if last is not None and want(last.diagnostics):
            return list(last.diagnostics)
        if time.monotonic() > deadline:
            raise AssertionError(f"diagnostics for {uri}: {last and last.diagnostics}")
        await asyncio.sleep(0.05)


def _run(diags: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diags if d.source == "torchtrap-run"]


@pytest.mark.slow
async def test_run_file_publishes_the_run_and_confirms_the_static_finding(root: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    script = root / "train.py"
    script.write_text(text, encoding="utf-8")
    rng_line = next(i for i, line in enumerate(text.splitlines()) if "self.rng =" in line)
    async with session(root) as h:
        output: list[dict[str, Any]] = []
        h.client.feature("torchtrap/runOutput")(
            lambda ls, params: output.append(
                {k: getattr(params, k) for k in ("id", "stream", "text")}
            )
        )
        uri = h.open("train.py", text)
        static = await h.diagnostics(uri, 1)
        assert any(d.code == "TT101" for d in static)
        token = "run-token"
        h.client.progress_reports[token] = []
        result = await h.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="torchtrap.runFile",
                arguments=[{"uri": uri, "id": "r1"}],
                work_done_token=token,
            )
        )
        assert result["findings"] == 1 and "1 finding" in result["summary"]
        diags = await _settled(h, uri, lambda ds: _run(ds))
        (run,) = _run(diags)
        assert run.code == "TT101" and run.range.start.line == rng_line
        assert run.message.startswith("dataset.rng (numpy.random.Generator): the same state")
        # as actionable as the static one: its docs page and what to do
        assert run.code_description is not None
        assert run.code_description.href.endswith("TT101.md")
        assert "torch.initial_seed()" in run.message
        (tt101,) = [d for d in diags if d.source == "torchtrap" and d.code == "TT101"]
        assert tt101.message.endswith("(confirmed when run)")
        printed = "".join(o["text"] for o in output if o["stream"] == "stdout")
        assert "RESULT: bug" in printed and {o["id"] for o in output} == {"r1"}
        end = h.client.progress_reports[token][-1]
        assert isinstance(end, types.WorkDoneProgressEnd) and "1 finding" in (end.message or "")

        # Editing the file: what the run saw no longer applies.
        h.change(uri, text + "\n")
        diags = await _settled(h, uri, lambda ds: not _run(ds))
        assert not any(d.message.endswith("(confirmed when run)") for d in diags)

        # A report written by the CLI brings them back.
        report = root / "report.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "torchtrap",
                "run",
                "--format",
                "json",
                "-o",
                str(report),
                "train.py",
            ],
            cwd=root,
            check=True,
            capture_output=True,
        )
        result = await h.command("torchtrap.showRunReport", str(report))
        assert result["findings"] == 1
        diags = await _settled(h, uri, lambda ds: _run(ds))
        assert [d.range.start.line for d in _run(diags)] == [rng_line]


async def test_run_file_bad_input(root: Path) -> None:
    (root / "notes.json").write_text("{}")
    async with session(root) as h:
        with pytest.raises(JsonRpcException, match="no such file"):
            await h.command("torchtrap.runFile", {"uri": (root / "missing.py").as_uri()})
        with pytest.raises(JsonRpcException, match="expects"):
            await h.command("torchtrap.runFile", {})
        with pytest.raises(JsonRpcException, match="not a `torchtrap run` report"):
            await h.command("torchtrap.showRunReport", str(root / "notes.json"))
        with pytest.raises(JsonRpcException, match="cannot read"):
            await h.command("torchtrap.showRunReport", str(root / "none.json"))
