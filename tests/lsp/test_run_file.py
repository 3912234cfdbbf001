"""torchtrap.runFile / torchtrap.showRunReport: the language server runs the
file with `torchtrap run`'s checks, streams its output, and publishes what
the run saw on the user's lines; where the static finding sits there it is one
diagnostic (issue 35 item 7): the static one says "confirmed when run", names
the run (`torchtrap-run`) in its related information and keeps its quick fix
and docs link; a run finding with no static twin is shown alone (source
`torchtrap-run`); editing the file clears the run's part; a report written by
the CLI brings it back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.lsp_harness import published, run_diagnostics, session
from torchtrap.findings import Finding, Position, Range, Severity
from torchtrap.lsp.run_results import RunResults
from torchtrap.run.report import RunFinding, RunReport

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tt101_stored_rng.py"


def _confirmed(diags: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diags if d.message.endswith("(confirmed when run)")]


def _run_finding(code: str, line: int, path: str) -> RunFinding:
    rng = Range(Position(line + 1, 0), Position(line + 1, 5))  # 1-based lines
    finding = Finding(code, "x", f"{code} seen when run", Severity.WARNING, rng, path=path)
    return RunFinding(finding, "dataset.rng", {"workers": 2})


def test_a_run_finding_on_a_static_finding_is_one_diagnostic(tmp_path: Path) -> None:
    """Issue 35 item 7: same rule, same line: shown once, both sources named,
    the static one's docs link and fix data kept; another rule's run finding
    on that line, or a run finding alone, stays its own diagnostic."""
    path = tmp_path / "train.py"
    path.write_text("x = 1\n" * 10, encoding="utf-8")
    runs = RunResults()
    report = RunReport(["python", "train.py"], "python", str(tmp_path), 0, 1.0, [])
    report.findings = [
        _run_finding("TT101", 3, str(path)),
        _run_finding("TT104", 3, str(path)),
        _run_finding("TT102", 7, str(path)),
    ]
    (uri,) = runs.replace(report)
    static = types.Diagnostic(
        range=types.Range(types.Position(3, 8), types.Position(3, 16)),
        message="`self.rng` is copied into 2 DataLoader workers",
        code="TT101",
        source="torchtrap",
        code_description=types.CodeDescription(href="https://docs/TT101"),
        data={"index": 0, "version": 1, "name": "stored-rng-in-dataset"},
    )
    merged = runs.merge(uri, [static], None, "utf-16")
    assert [(d.code, d.source) for d in merged] == [
        ("TT101", "torchtrap"),
        ("TT104", "torchtrap-run"),
        ("TT102", "torchtrap-run"),
    ]
    one = merged[0]
    assert one.message == static.message + " (confirmed when run)"
    assert one.code_description == static.code_description
    assert one.data["index"] == 0 and one.data["run"]["object"] == "dataset.rng"
    assert [(r.location.range.start.line, r.message) for r in one.related_information or ()] == [
        (3, "torchtrap-run: TT101 seen when run")
    ]


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
        diags = await published(h, uri, lambda ds: _confirmed(ds))
        # One diagnostic for the problem: the static one, the run's folded in.
        assert not run_diagnostics(diags)
        (tt101,) = [d for d in diags if d.code == "TT101"]
        assert tt101.source == "torchtrap" and tt101.message.endswith("(confirmed when run)")
        assert tt101.code_description is not None and "TT101" in tt101.code_description.href
        related = tt101.related_information or []
        seen = [r for r in related if r.message.startswith("torchtrap-run:")]
        assert [r.location.range.start.line for r in seen] == [rng_line]
        assert "dataset.rng (numpy.random.Generator): the same state" in seen[0].message
        assert "torch.initial_seed()" in seen[0].message  # what to do, as the static one says
        actions = await h.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=tt101.range,
                context=types.CodeActionContext(diagnostics=[tt101]),
            )
        )
        assert any("TT101" in a.title for a in actions or () if isinstance(a, types.CodeAction))
        printed = "".join(o["text"] for o in output if o["stream"] == "stdout")
        assert "RESULT: bug" in printed and {o["id"] for o in output} == {"r1"}
        end = h.client.progress_reports[token][-1]
        assert isinstance(end, types.WorkDoneProgressEnd) and "1 finding" in (end.message or "")

        # Editing the file: what the run saw no longer applies.
        h.change(uri, text + "\n")
        diags = await published(h, uri, lambda ds: not _confirmed(ds))
        assert not run_diagnostics(diags)

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
        diags = await published(h, uri, lambda ds: _confirmed(ds))
        assert [d.range.start.line for d in _confirmed(diags)] == [rng_line]


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
