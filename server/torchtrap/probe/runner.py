"""Runs the probe's experiments one after another in the user's interpreter
(one subprocess each, see process.py) and turns their output into a report.
The runner never imports torch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from torchtrap.probe.catalog import Experiment
from torchtrap.probe.interpreter import inspect_interpreter
from torchtrap.probe.process import ScriptRun, last_json_line, run_script
from torchtrap.probe.report import (
    BUDGET,
    ERROR,
    SKIPPED,
    TIMEOUT,
    VERDICTS,
    ExperimentResult,
    Interpreter,
    ProbeReport,
)

Progress = Callable[[str, int, int], None]
# Called after each experiment with its result, how many are done, and the total.
Finished = Callable[[ExperimentResult, int, int], None]

DEFAULT_TIMEOUT_S = 300.0  # the whole probe; each experiment also has its own limit
_TAIL = 2000


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


def _not_run(experiment: Experiment, why: str, budget: bool = False) -> ExperimentResult:
    evidence: dict[str, Any] = {"reason": why}
    if budget:
        evidence[BUDGET] = True
    return ExperimentResult(
        id=experiment.id,
        title=experiment.title,
        verdict=SKIPPED,
        summary=why,
        duration_s=0.0,
        rules={code: SKIPPED for code in experiment.rules},
        evidence=evidence,
    )


def run_experiments(
    python: str | None,
    experiments: Sequence[Experiment],
    timeout: float | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    only: Sequence[str] | None = None,
    interpreter: Interpreter | None = None,
    finished: Finished | None = None,
) -> ProbeReport:
    """Run `experiments` one after another in `python` (the current interpreter
    when None) within `timeout` seconds overall, the preflight included.
    Raises ProbeError when the interpreter cannot run them (missing, not
    Python, no torch). `interpreter` skips the preflight (tests, caches).
    An experiment the overall limit left no time for, or cut short, is marked
    (``evidence["budget"]``): ``ProbeReport.unfinished()`` lists them, to run
    the rest."""
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
                _not_run(
                    experiment, f"not started: the probe's {budget:g} s limit was used up", True
                )
            )
        else:
            limit = min(experiment.timeout_s, left)
            run = run_script(interpreter.path, experiment.script, limit, cancel)
            result = _result(experiment, run)
            if run.timed_out and limit < experiment.timeout_s:
                # Cut by the probe's overall limit, not its own: worth running again.
                result.summary = f"stopped at the probe's {budget:g} s limit ({run.seconds:.0f} s)"
                result.evidence[BUDGET] = True
            results.append(result)
        if finished is not None:
            finished(results[-1], index + 1, total)
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
