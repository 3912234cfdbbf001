"""The runner with hand-written scripts: hangs are killed with their whole
process group, bad output is an `error`, cancellation and the overall limit
stop the run. No torch needed: these scripts are plain Python."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from torchtrap.probe.catalog import Experiment
from torchtrap.probe.markdown import render_markdown
from torchtrap.probe.process import run_script
from torchtrap.probe.report import Interpreter
from torchtrap.probe.runner import run_experiments

# Starts a child that would outlive a plain kill, records its pid, then hangs.
HANG = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "child.pid"), "w") as f:
    f.write(str(child.pid))
print("started", flush=True)
time.sleep(600)
"""

QUICK = """
import json
print("noise before the result")
print(json.dumps({"verdict": "confirmed", "summary": "it happened",
                  "rules": {"TT999": "confirmed"}, "rule_evidence": {"TT999": "seen"},
                  "evidence": {"n": 1}}))
"""


def _dead(pid: int) -> bool:
    """Gone, or a zombie nobody has reaped yet (PID 1 in a container may not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_hung_experiment_is_killed_with_its_process_group(
    make_experiment, this_python: Interpreter, tmp_path: Path
) -> None:
    hang = make_experiment("hang", HANG, timeout_s=1.5, rules=("TT999",))
    started = time.monotonic()
    report = run_experiments(None, [hang], interpreter=this_python)
    elapsed = time.monotonic() - started
    (result,) = report.experiments
    assert result.verdict == "timeout"
    assert result.rules == {"TT999": "timeout"}
    assert "killed with its process group" in result.summary
    assert "started" in result.evidence["stdout_tail"]
    assert elapsed < 6, elapsed
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not _dead(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(child), "the hung script's child survived"


def test_result_is_the_last_json_line(make_experiment, this_python: Interpreter) -> None:
    report = run_experiments(None, [make_experiment("quick", QUICK)], interpreter=this_python)
    (result,) = report.experiments
    assert result.verdict == "confirmed"
    assert result.rules == {"TT999": "confirmed"}
    assert result.rule_evidence == {"TT999": "seen"}
    assert result.evidence == {"n": 1}
    assert report.rule_verdicts()["TT999"] == {
        "verdict": "confirmed",
        "evidence": "seen",
        "experiments": ["quick"],
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import sys\nsys.exit(3)\n", "exited with code 3 without a result"),
        ("print('not json')\n", "without a result"),
        ("import json\nprint(json.dumps({'verdict': 'maybe'}))\n", "without a result"),
        ("raise RuntimeError('boom in the script')\n", "RuntimeError: boom in the script"),
    ],
)
def test_bad_output_is_an_error(
    make_experiment, this_python: Interpreter, source: str, expected: str
) -> None:
    exp = make_experiment("bad", source, rules=("TT999",))
    (result,) = run_experiments(None, [exp], interpreter=this_python).experiments
    assert result.verdict == "error"
    assert expected in result.summary
    assert result.rules == {"TT999": "error"}


def test_result_printed_before_a_crash_is_kept(make_experiment, this_python: Interpreter) -> None:
    exp = make_experiment("crash", QUICK + "import os\nos._exit(7)\n")
    (result,) = run_experiments(None, [exp], interpreter=this_python).experiments
    assert result.verdict == "confirmed"
    assert result.evidence["exit_code"] == 7


def test_cancel_kills_the_running_experiment_and_skips_the_rest(
    make_experiment, this_python: Interpreter
) -> None:
    cancel = threading.Event()
    threading.Timer(0.8, cancel.set).start()
    hang = make_experiment("hang", HANG, timeout_s=60)
    quick = make_experiment("quick", QUICK)
    started = time.monotonic()
    report = run_experiments(None, [hang, quick], cancel=cancel, interpreter=this_python)
    assert time.monotonic() - started < 5
    assert report.cancelled
    assert [(r.verdict, r.summary) for r in report.experiments] == [
        ("skipped", "cancelled"),
        ("skipped", "cancelled"),
    ]


def test_overall_timeout_stops_the_run(make_experiment, this_python: Interpreter) -> None:
    hang = make_experiment("hang", HANG, timeout_s=60)
    quick = make_experiment("quick", QUICK)
    report = run_experiments(None, [hang, quick], timeout=1.5, interpreter=this_python)
    assert [r.verdict for r in report.experiments] == ["timeout", "skipped"]
    assert "limit was used up" in report.experiments[1].summary
    assert report.experiments[0].duration_s < 4


def test_gpu_experiment_skipped_without_cuda(make_experiment, this_python: Interpreter) -> None:
    quick = make_experiment("quick", QUICK)
    gpu = Experiment("gpu-thing", "needs a GPU", quick.script, ("TT999",), needs_cuda=True)
    (result,) = run_experiments(None, [gpu], interpreter=this_python).experiments
    assert result.verdict == "skipped"
    assert result.summary == "needs CUDA: not asked"
    assert result.rules == {"TT999": "skipped"}


def test_progress_reports_each_experiment(make_experiment, this_python: Interpreter) -> None:
    calls: list[tuple[str, int, int]] = []
    exps = [make_experiment("one", QUICK), make_experiment("two", QUICK)]
    run_experiments(None, exps, progress=lambda *a: calls.append(a), interpreter=this_python)
    assert calls == [("one", 0, 2), ("two", 1, 2), ("done", 2, 2)]


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_leftover_child_holding_the_pipes_does_not_stall(tmp_path: Path) -> None:
    """A script that exits while its background child still holds stdout."""
    script = tmp_path / "leaves_child.py"
    script.write_text(
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        'print(\'{"verdict": "not-reproduced", "summary": "ok"}\', flush=True)\n'
    )
    run = run_script(sys.executable, script, timeout=30)
    assert not run.timed_out
    assert run.seconds < 10
    assert '"not-reproduced"' in run.stdout


def test_scripts_run_from_an_empty_directory(tmp_path: Path) -> None:
    """Never the user's workspace: cwd is a fresh temporary directory."""
    script = tmp_path / "cwd.py"
    script.write_text("import os\nprint(os.listdir('.'), os.getcwd())\n")
    run = run_script(sys.executable, script, timeout=30)
    listing, cwd = run.stdout.split(" ", 1)
    assert listing == "[]"
    assert "torchtrap-probe-" in cwd


def test_each_result_is_reported_as_it_ends(make_experiment, this_python: Interpreter) -> None:
    # Issue 35 item 5: progress per experiment, with its verdict.
    calls: list[tuple[str, str, int, int]] = []
    exps = [make_experiment("one", QUICK), make_experiment("two", QUICK)]
    run_experiments(
        None,
        exps,
        interpreter=this_python,
        finished=lambda r, done, total: calls.append((r.id, r.verdict, done, total)),
    )
    assert calls == [("one", "confirmed", 1, 2), ("two", "confirmed", 2, 2)]


def test_the_rest_after_the_limit_runs_and_merges(
    make_experiment, this_python: Interpreter
) -> None:
    """Issue 35 item 5: what the overall limit stopped or never started is
    listed (the experiment's own limit is not the probe's: not listed), and
    running those again fills the first report in."""
    hang = make_experiment("hang", HANG, timeout_s=60)
    quick = make_experiment("quick", QUICK)
    own = make_experiment("own-limit", HANG, timeout_s=0.5)
    report = run_experiments(None, [own, hang, quick], timeout=2.5, interpreter=this_python)
    assert [r.verdict for r in report.experiments] == ["timeout", "timeout", "skipped"]
    assert report.unfinished() == ["hang", "quick"]
    assert "stopped at the probe's 2.5 s limit" in report.experiments[1].summary
    markdown = render_markdown(report)
    assert "2 of the experiments did not finish within the probe's 2.5 s limit" in markdown
    assert "`torchtrap probe --only hang quick`" in markdown

    rest = run_experiments(None, [quick], timeout=30, interpreter=this_python, only=["quick"])
    merged = rest.merged_into(report)
    assert [(r.id, r.verdict) for r in merged.experiments] == [
        ("own-limit", "timeout"),
        ("hang", "timeout"),
        ("quick", "confirmed"),
    ]
    assert merged.unfinished() == ["hang"]
    assert merged.to_json()["rules"]["TT999"]["verdict"] == "confirmed"
