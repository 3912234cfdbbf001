"""Runs the probe's scripts in the user's interpreter, one subprocess each.

Each script runs as `python <script>` in its own session (process group) from
an empty temporary directory, so nothing from the user's workspace is on its
path; on timeout or cancellation the whole group is killed (DataLoader
workers included). The runner never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from torchtrap.probe.catalog import Experiment
from torchtrap.probe.interpreter import inspect_interpreter
from torchtrap.probe.report import (
    ERROR,
    SKIPPED,
    TIMEOUT,
    VERDICTS,
    ExperimentResult,
    Interpreter,
    ProbeReport,
)

Progress = Callable[[str, int, int], None]

DEFAULT_TIMEOUT_S = 300.0  # the whole probe; each experiment also has its own limit
_POLL_S = 0.1
_EXIT_GRACE_S = 2.0  # after the script exits, how long its leftover children may hold the pipes
_TAIL = 2000


@dataclass
class ScriptRun:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    cancelled: bool = False


# Scripts running now, so that a process about to exit (its client gone)
# can kill them all without waiting for the threads that watch them.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


def kill_running() -> None:
    """Kill every running script's process group (from any thread)."""
    with _LIVE_LOCK:
        running = list(_LIVE)
    for proc in running:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: group id == pid
    else:  # Windows: /T takes the child tree with it
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        proc.kill()


def _drain(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=5)
        return out or "", err or ""
    except subprocess.TimeoutExpired:
        # Something outside the group still holds the pipes: give up on the output.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait(timeout=5)
        return "", ""


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ inside the installed package
    env["PYTHONUNBUFFERED"] = "1"  # a killed script still shows how far it got
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_script(
    python: str,
    script: Path,
    timeout: float,
    cancel: threading.Event | None = None,
    args: Sequence[str] = (),
) -> ScriptRun:
    """Run `python script args` in a new process group, killed after `timeout`
    seconds or when `cancel` is set."""
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    started = time.monotonic()
    deadline = started + max(timeout, 0.0)
    timed_out = cancelled = False
    exited_at: float | None = None
    with tempfile.TemporaryDirectory(prefix="torchtrap-probe-") as cwd:
        proc = subprocess.Popen(
            [python, str(script), *args],
            cwd=cwd,
            env=_child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            **kwargs,
        )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            while True:
                try:
                    out, err = proc.communicate(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if proc.poll() is not None:
                    # The script is done but a leftover child keeps the pipes open.
                    exited_at = exited_at or now
                    if now - exited_at > _EXIT_GRACE_S:
                        _kill_group(proc)
                        out, err = _drain(proc)
                        break
                    continue
                if cancel is not None and cancel.is_set():
                    cancelled = True
                elif now >= deadline:
                    timed_out = True
                else:
                    continue
                _kill_group(proc)
                out, err = _drain(proc)
                break
        except BaseException:
            _kill_group(proc)  # KeyboardInterrupt and friends: leave no orphans
            proc.wait()
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        if os.name == "posix" and not (timed_out or cancelled):
            _kill_group(proc)  # daemonic workers a crashed script left behind
    return ScriptRun(
        returncode=proc.returncode,
        stdout=out or "",
        stderr=err or "",
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        cancelled=cancelled,
    )


def last_json_line(stdout: str) -> dict[str, Any] | None:
    """The JSON object on the last non-empty stdout line, if there is one."""
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _result(experiment: Experiment, run: ScriptRun) -> ExperimentResult:
    def fail(verdict: str, summary: str, evidence: dict[str, Any]) -> ExperimentResult:
        return ExperimentResult(
            id=experiment.id,
            title=experiment.title,
            verdict=verdict,
            summary=summary,
            duration_s=run.seconds,
            rules={code: verdict for code in experiment.rules},
            evidence=evidence,
        )

    tails = {"stdout_tail": run.stdout[-_TAIL:], "stderr_tail": run.stderr[-_TAIL:]}
    if run.cancelled:
        return fail(SKIPPED, "cancelled", {"cancelled": True, **tails})
    if run.timed_out:
        return fail(
            TIMEOUT,
            f"no result after {run.seconds:.0f} s; killed with its process group",
            {"timeout_s": round(run.seconds, 1), **tails},
        )
    data = last_json_line(run.stdout)
    verdict = data.get("verdict") if data else None
    if data is None or verdict not in VERDICTS:
        why = _last_line(run.stderr) or "no output"
        return fail(
            ERROR,
            f"exited with code {run.returncode} without a result: {why}",
            {"returncode": run.returncode, **tails},
        )
    assert isinstance(verdict, str)
    evidence = data.get("evidence")
    evidence = dict(evidence) if isinstance(evidence, dict) else {}
    if run.returncode != 0:  # e.g. a crash in CUDA teardown after the result was printed
        evidence["exit_code"] = run.returncode
    raw_rules = data.get("rules")
    rules = (
        {str(code): str(v) for code, v in (raw_rules or {}).items() if str(v) in VERDICTS}
        if isinstance(raw_rules, dict)
        else {}
    )
    for code in experiment.rules:
        rules.setdefault(code, verdict)
    raw_notes = data.get("rule_evidence")
    notes = (
        {str(k): _one_line(v) for k, v in raw_notes.items()} if isinstance(raw_notes, dict) else {}
    )
    return ExperimentResult(
        id=experiment.id,
        title=experiment.title,
        verdict=verdict,
        summary=_one_line(data.get("summary", "")),
        duration_s=run.seconds,
        rules=rules,
        rule_evidence=notes,
        evidence=evidence,
    )


def _not_run(experiment: Experiment, why: str) -> ExperimentResult:
    return ExperimentResult(
        id=experiment.id,
        title=experiment.title,
        verdict=SKIPPED,
        summary=why,
        duration_s=0.0,
        rules={code: SKIPPED for code in experiment.rules},
        evidence={"reason": why},
    )


def run_experiments(
    python: str | None,
    experiments: Sequence[Experiment],
    timeout: float | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    only: Sequence[str] | None = None,
    interpreter: Interpreter | None = None,
) -> ProbeReport:
    """Run `experiments` one after another in `python` (the current interpreter
    when None) within `timeout` seconds overall, the preflight included.
    Raises ProbeError when the interpreter cannot run them (missing, not
    Python, no torch). `interpreter` skips the preflight (tests, caches)."""
    budget = DEFAULT_TIMEOUT_S if timeout is None else timeout
    started_at = datetime.now(timezone.utc)
    started = time.monotonic()
    if interpreter is None:
        interpreter = inspect_interpreter(python, timeout=min(60.0, budget), cancel=cancel)
    results: list[ExperimentResult] = []
    total = len(experiments)
    for index, experiment in enumerate(experiments):
        if progress is not None:
            progress(experiment.id, index, total)
        left = budget - (time.monotonic() - started)
        if cancel is not None and cancel.is_set():
            results.append(_not_run(experiment, "cancelled"))
        elif experiment.needs_cuda and not interpreter.cuda_available:
            results.append(_not_run(experiment, f"needs CUDA: {interpreter.cuda_note}"))
        elif left <= 0:
            results.append(
                _not_run(experiment, f"not started: the probe's {budget:g} s limit was used up")
            )
        else:
            run = run_script(
                interpreter.path, experiment.script, min(experiment.timeout_s, left), cancel
            )
            results.append(_result(experiment, run))
    if progress is not None:
        progress("done", total, total)
    return ProbeReport(
        interpreter=interpreter,
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        timeout_s=budget,
        experiments=results,
        only=list(only) if only else None,
        cancelled=cancel is not None and cancel.is_set(),
    )
