"""The CPU experiments, run for real with the venv's torch, agree with the
measured facts in the rule docs (TT101, TT102) and finish in time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from tests.probe.helpers import experiment_of
from torchtrap.probe import confirmed_rules, validate
from torchtrap.probe.catalog import EXPERIMENT_IDS, EXPERIMENTS_DIR
from torchtrap.probe.process import run_script

STORED = [
    "stored np.random.default_rng",
    "stored np.random.RandomState",
    "stored random.Random",
]
GLOBAL = ["global np.random", "global random", "global torch"]


def test_full_probe_runs_every_experiment(
    cpu_probe: tuple[dict[str, Any], float],
) -> None:
    # Its duration is a benchmark (docs/benchmarks.md), not a test: the spawn
    # experiments' time is mostly importing torch, which a loaded machine slows.
    doc, _seconds = cpu_probe
    assert [e["id"] for e in doc["experiments"]] == list(EXPERIMENT_IDS)
    assert [e["id"] for e in doc["experiments"] if e["verdict"] == "timeout"] == []
    assert not doc["cancelled"]


def test_report_matches_schema(cpu_doc: dict[str, Any]) -> None:
    assert validate(cpu_doc) == []


def test_stored_generators_repeat_across_workers_and_epochs(cpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(cpu_doc, "worker-rng")
    kinds = exp["evidence"]["kinds"]
    for kind in STORED:
        assert kinds[kind]["across_workers"] == "identical", kind
        assert kinds[kind]["next_epoch"] == "repeats", kind
    # Default start method here is fork: a stored torch.Generator is copied, not crashed.
    assert exp["evidence"]["start_method"] == "fork"
    assert kinds["stored torch.Generator"]["across_workers"] == "identical"
    assert exp["rules"]["TT101"] == "confirmed"
    assert exp["verdict"] == "confirmed"


def test_global_rngs_are_seeded_per_worker_on_torch_2(cpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(cpu_doc, "worker-rng")
    for kind in GLOBAL:
        row = exp["evidence"]["kinds"][kind]
        assert row["across_workers"] == "distinct", kind
        assert row["next_epoch"] == "differs", kind
    # torch >= 1.9 seeds numpy in every worker: TT102's bug is not here.
    assert exp["rules"]["TT102"] == "not-reproduced"


def test_rule_verdicts_and_confirmed_rules(cpu_doc: dict[str, Any]) -> None:
    rules = cpu_doc["rules"]
    assert rules["TT101"]["verdict"] == "confirmed"
    assert rules["TT102"]["verdict"] == "not-reproduced"
    assert rules["TT103"]["verdict"] == "skipped"  # no CUDA in this torch
    confirmed = confirmed_rules(cpu_doc)
    assert set(confirmed) == {"TT101", "TT104", "TT105", "TT106", "TT107", "TT108", "TT217"}
    assert "identical streams" in confirmed["TT101"]
    assert "\n" not in confirmed["TT101"]


def test_environment_reports_what_the_issue_lists(cpu_doc: dict[str, Any]) -> None:
    ev = experiment_of(cpu_doc, "environment")["evidence"]
    assert ev["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert ev["torch"]["version"].startswith("2.13.0")
    assert ev["cuda"]["available"] is False and ev["cuda"]["gpus"] == []
    assert ev["multiprocessing"]["default_start_method"] == "fork"
    assert ev["multiprocessing"]["torch_sharing_strategy"] in ("file_descriptor", "file_system")
    assert ev["shm"]["size_mib"] > 0 and ev["shm"]["free_mib"] >= 0
    assert ev["cpus"]["count"] >= 1
    assert ev["ulimit_nofile"]["soft"] > 0


def test_shm_capacity_hands_back_256_mb(cpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(cpu_doc, "shm-capacity")
    assert exp["verdict"] == "not-reproduced", exp["summary"]
    assert exp["evidence"]["intact"] is True


def test_gpu_experiments_are_skipped_with_the_reason(cpu_doc: dict[str, Any]) -> None:
    for experiment_id in ("cuda-ipc-share", "fork-cuda", "pin-memory"):
        exp = experiment_of(cpu_doc, experiment_id)
        assert exp["verdict"] == "skipped"
        assert "CPU-only build" in exp["summary"]
        assert all(v == "skipped" for v in exp["rules"].values())


def _run_script(name: str, *args: str) -> dict[str, Any]:
    """One script, launched as the runner launches it (spawn workers included)."""
    run = run_script(sys.executable, EXPERIMENTS_DIR / name, timeout=120, args=args)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_stored_torch_generator_crashes_spawn_workers() -> None:
    """Facts: under spawn a stored torch.Generator crashes the workers
    (pytorch #146828); the other stored kinds are identical across workers."""
    result = _run_script("probe_worker_rng.py", "--start-method", "spawn")
    kinds = result["evidence"]["kinds"]
    assert "error" in kinds["stored torch.Generator"]
    for kind in STORED:
        assert kinds[kind]["across_workers"] == "identical", kind
    assert result["rules"] == {"TT101": "confirmed", "TT102": "not-reproduced"}


@pytest.mark.parametrize(
    "script", ["probe_cuda_ipc_share.py", "probe_fork_cuda.py", "probe_pin_memory.py"]
)
def test_gpu_scripts_skip_without_cuda(script: str) -> None:
    result = _run_script(script)
    assert result["verdict"] == "skipped"
    assert "no CUDA device" in result["summary"]


@pytest.mark.parametrize("script", ["probe_cuda_ipc_share.py", "probe_fork_cuda.py"])
def test_gpu_scripts_mechanics_on_cpu(script: str) -> None:
    """`--device cpu` runs the GPU scripts' code paths (spawn pickling of the
    Dataset and of a bound-method collate_fn, a fork worker touching the
    tensor) on CPU tensors, where nothing may change or fail."""
    result = _run_script(script, "--device", "cpu")
    assert result["verdict"] == "not-reproduced", result["summary"]
    assert result["rules"] == {"TT103": "not-reproduced"}
    evidence = result["evidence"]
    if script == "probe_cuda_ipc_share.py":
        for check in ("share_cuda", "dataset_worker", "bound_collate_fn"):
            assert evidence[check]["changed"] == [] and "error" not in evidence[check], check
        assert set(evidence["dataset_worker"]) >= {"before", "after_start", "after_shutdown"}
    else:
        assert evidence["use_existing"].startswith("ok")
        assert evidence["allocate_new"].startswith("ok")


def _can_mount_small_shm() -> bool:
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64m tmpfs /dev/shm"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_small_shm(), reason="needs root and unshare -m")
def test_docker_sized_shm_is_confirmed() -> None:
    """With Docker's 64 MB /dev/shm (a private mount namespace here), the
    256 MB hand-off fails and the environment flags the hazard."""
    scripts = " ; ".join(
        f"{sys.executable} {EXPERIMENTS_DIR / name} | tail -n 1"
        for name in ("probe_shm_capacity.py", "probe_environment.py")
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64m tmpfs /dev/shm && {scripts}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    shm, env = (json.loads(line) for line in proc.stdout.strip().splitlines()[-2:])
    assert shm["verdict"] == "confirmed", shm
    assert "No space left on device" in shm["evidence"]["error"] or "Bus error" in shm["summary"]
    assert env["verdict"] == "confirmed"
    assert env["evidence"]["shm"]["size_mib"] == 64
    assert "/dev/shm is only 64 MiB" in env["summary"]
