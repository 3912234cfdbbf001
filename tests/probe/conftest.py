"""Fixtures for the probe's tests: one real probe run shared by the CPU tests,
and helpers to run hand-written experiment scripts through the runner."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from torchtrap.probe import run_probe
from torchtrap.probe.catalog import Experiment
from torchtrap.probe.report import Interpreter


@pytest.fixture(scope="session")
def cpu_probe() -> tuple[dict[str, Any], float]:
    """The full probe, run for real once in this interpreter: (JSON document, seconds)."""
    started = time.monotonic()
    report = run_probe()
    return report.to_json(), time.monotonic() - started


@pytest.fixture(scope="session")
def cpu_doc(cpu_probe: tuple[dict[str, Any], float]) -> dict[str, Any]:
    return cpu_probe[0]


@pytest.fixture
def this_python() -> Interpreter:
    """This interpreter, described without a preflight (for hand-written scripts)."""
    return Interpreter(
        path=sys.executable,
        python_version="3",
        torch_version="n/a",
        cuda_build=None,
        cuda_available=False,
        cuda_note="not asked",
    )


@pytest.fixture
def make_experiment(tmp_path: Path):  # type: ignore[no-untyped-def]
    """make_experiment(id, source, timeout_s=..., rules=...) -> Experiment running `source`."""

    def make(
        experiment_id: str, source: str, timeout_s: float = 30.0, rules: tuple[str, ...] = ()
    ) -> Experiment:
        script = tmp_path / f"{experiment_id.replace('-', '_')}.py"
        script.write_text(textwrap.dedent(source))
        return Experiment(experiment_id, f"test {experiment_id}", script, rules, False, timeout_s)

    return make
