"""GPU experiments, for real, on a CUDA machine (tests/gpu/run.sh runs them).

Skipped when the probe's interpreter (this one) has no usable CUDA. One full
probe run is shared by all tests in this module."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.probe.helpers import experiment_of
from torchtrap.probe import confirmed_rules, render_markdown, run_probe, validate
from torchtrap.probe.interpreter import inspect_interpreter

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_probe() -> tuple[dict[str, Any], float]:
    info = inspect_interpreter(None)
    if not info.cuda_available:
        pytest.skip(f"no CUDA in the probe interpreter: {info.cuda_note}")
    started = time.monotonic()
    report = run_probe(timeout=120)
    return report.to_json(), time.monotonic() - started


@pytest.fixture(scope="module")
def gpu_doc(gpu_probe: tuple[dict[str, Any], float]) -> dict[str, Any]:
    return gpu_probe[0]


def test_full_probe_has_an_answer_everywhere(gpu_probe: tuple[dict[str, Any], float]) -> None:
    doc, seconds = gpu_probe
    assert validate(doc) == []
    assert doc["interpreter"]["cuda_available"] is True
    answers = {e["id"]: (e["verdict"], e["summary"]) for e in doc["experiments"]}
    for experiment_id, (verdict, summary) in answers.items():
        assert verdict in ("confirmed", "not-reproduced"), (experiment_id, summary)
    assert seconds < 180, seconds
    assert render_markdown(doc).startswith("# TorchTrap probe")


def test_environment_lists_the_gpus(gpu_doc: dict[str, Any]) -> None:
    cuda = experiment_of(gpu_doc, "environment")["evidence"]["cuda"]
    assert cuda["available"] is True
    assert cuda["runtime"]
    assert cuda["gpus"], cuda
    for gpu in cuda["gpus"]:
        assert gpu["name"] and gpu["memory_gib"] > 0
        major, minor = gpu["capability"].split(".")
        assert int(major) >= 3 and int(minor) >= 0


def test_cuda_ipc_share_answers_tt103(gpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(gpu_doc, "cuda-ipc-share")
    assert exp["verdict"] in ("confirmed", "not-reproduced"), exp["summary"]
    assert exp["rules"] == {"TT103": exp["verdict"]}
    ev = exp["evidence"]
    assert ev["device"] == "cuda" and ev["start_method"] == "spawn"
    assert ev["share_cuda"]["before"]["tensor(5)"] == [5.0]
    for check in ("dataset_worker", "bound_collate_fn"):
        assert "before" in ev[check], check
    if exp["verdict"] == "not-reproduced":
        for check in ("share_cuda", "dataset_worker", "bound_collate_fn"):
            assert ev[check]["changed"] == [] and "error" not in ev[check], check
        assert ev["dataset_worker"]["after_start"]["dataset.scalar"] == [5.0]
    else:
        assert "TT103" in confirmed_rules(gpu_doc)


def test_fork_worker_touching_cuda_fails(gpu_doc: dict[str, Any]) -> None:
    """Facts: 'Cannot re-initialize CUDA in forked subprocess' (torch/cuda/__init__.py)."""
    exp = experiment_of(gpu_doc, "fork-cuda")
    assert exp["verdict"] == "confirmed", exp["summary"]
    ev = exp["evidence"]
    errors = [
        str(ev[key])
        for key in ("use_existing", "allocate_new", "loader_error")
        if key in ev and not str(ev[key]).startswith("ok")
    ]
    assert any("CUDA" in e or "cuda" in e for e in errors), ev
    assert gpu_doc["rules"]["TT103"]["verdict"] == "confirmed"


def test_pinned_copies_work(gpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(gpu_doc, "pin-memory")
    assert exp["verdict"] == "not-reproduced", exp["summary"]
    ev = exp["evidence"]
    assert ev["is_pinned"] and ev["pinned_copy_correct"] and ev["loader_batch_pinned"]
    assert ev["pinned_gbs"] > 0 and ev["pageable_gbs"] > 0
