"""The GPU probe: turns "this bug may happen" into "happens here" or "does
not happen here" by running small experiments in the user's interpreter.

Public API (for the CLI and the language server, which calls `run_probe`
from a worker thread):

- `run_probe(...) -> ProbeReport`; raises `ProbeError` (`TorchMissing` when
  the interpreter lacks torch) with a message meant for the user.
- `ProbeReport.to_json()`: the versioned document described by schema.json.
- `render_markdown(report_or_json) -> str`: the text report.
- `confirmed_rules(report_json) -> {rule code: one-line evidence}`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from torchtrap.probe.catalog import EXPERIMENT_IDS, EXPERIMENTS, Experiment, select
from torchtrap.probe.errors import ProbeError, TorchMissing
from torchtrap.probe.markdown import render_markdown
from torchtrap.probe.report import (
    SCHEMA_VERSION,
    VERDICTS,
    ExperimentResult,
    Interpreter,
    ProbeReport,
    confirmed_rules,
)
from torchtrap.probe.runner import DEFAULT_TIMEOUT_S, run_experiments
from torchtrap.probe.schema import validate

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EXPERIMENTS",
    "EXPERIMENT_IDS",
    "SCHEMA_VERSION",
    "VERDICTS",
    "Experiment",
    "ExperimentResult",
    "Interpreter",
    "ProbeError",
    "ProbeReport",
    "TorchMissing",
    "confirmed_rules",
    "render_markdown",
    "run_probe",
    "validate",
]


def run_probe(
    python: str | None = None,
    timeout: float | None = None,
    only: Sequence[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    cancel: threading.Event | None = None,
    finished: Callable[[ExperimentResult, int, int], None] | None = None,
) -> ProbeReport:
    """Run the probe's experiments in `python` (default: this interpreter).

    timeout: seconds for the whole probe (default DEFAULT_TIMEOUT_S); each
        experiment is also limited by its own timeout.
    only: experiment ids to run (default: all).
    progress: called as progress(experiment_id, done, total) before each
        experiment, then progress("done", total, total).
    cancel: when set, the running experiment is killed and the rest are
        reported as skipped; the report has cancelled=True.
    finished: called as finished(result, done, total) after each experiment.
    """
    if timeout is not None and not timeout > 0:
        raise ProbeError(f"the timeout must be positive, got {timeout:g}")
    experiments = select(only)
    return run_experiments(
        python, experiments, timeout, progress, cancel, only=only, finished=finished
    )
