"""The DataLoader-worker experiments (TT104-TT107): run for real in the
shared CPU probe, they confirm their rules with the measured facts the rule
docs state, fit the schema and the Markdown report, and run standalone even
with PYTHONSAFEPATH=1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.probe.helpers import experiment_of
from torchtrap.probe import confirmed_rules, render_markdown, validate
from torchtrap.probe.catalog import EXPERIMENTS, EXPERIMENTS_DIR

WORKER_EXPERIMENTS = {
    "iterable-duplicates": "TT105",
    "main-guard": "TT106",
    "worker-memory": "TT107",
    "pickle-reach": "TT104",
}


def test_catalog_maps_the_experiments_to_their_rules() -> None:
    by_id = {e.id: e for e in EXPERIMENTS}
    for experiment_id, code in WORKER_EXPERIMENTS.items():
        assert by_id[experiment_id].rules == (code,)
        assert not by_id[experiment_id].needs_cuda  # CPU: they run on every machine
        assert by_id[experiment_id].script.is_file()


def test_unsharded_iterable_dataset_duplicates_every_item(cpu_doc: dict[str, Any]) -> None:
    ev = experiment_of(cpu_doc, "iterable-duplicates")["evidence"]
    assert (ev["batches"], ev["items_received"], ev["distinct_items"]) == (6, 20, 10)
    assert ev["expected_batches"] == 3 and ev["duplicates"] == 10


def test_script_without_guard_fails_under_spawn_and_forkserver(cpu_doc: dict[str, Any]) -> None:
    ev = experiment_of(cpu_doc, "main-guard")["evidence"]
    assert set(ev["methods"]) == {"spawn", "forkserver"}
    for method, row in ev["methods"].items():
        assert row["worker_bootstrap_error"] is True, method
        assert row["exit_code"] == 1 and row["finished"] is False, method
        assert row["top_level_runs"] == 2, method  # the parent and its one worker
        assert "exited unexpectedly" in row["main_process_error"], method


def test_python_objects_cost_workers_memory_that_arrays_do_not(cpu_doc: dict[str, Any]) -> None:
    exp = experiment_of(cpu_doc, "worker-memory")
    ev = exp["evidence"]
    objects = max(ev["python_objects"]["uss_after_mib"])
    arrays = max(ev["numpy_arrays"]["uss_after_mib"])
    assert objects - arrays > 0.25 * ev["objects_mib"], exp["summary"]
    assert ev["available_mib"] > 0
    assert ev["max_workers_for_1_gib_of_objects"] >= 1


def test_bound_collate_fn_pickles_the_model(cpu_doc: dict[str, Any]) -> None:
    ev = experiment_of(cpu_doc, "pickle-reach")["evidence"]
    trainer = ev["cpu_trainer"]
    assert trainer["tensors_sent"] == 4 * 2  # 4 parameters, once per worker
    assert (trainer["weights_shared_before"], trainer["weights_shared_after"]) == (False, True)
    assert trainer["weights_unchanged"] is True  # on the CPU the values survive
    assert ev["tokenizer"]["tensors_sent"] == 0


def test_rules_are_confirmed_in_the_report_and_the_markdown(cpu_doc: dict[str, Any]) -> None:
    assert validate(cpu_doc) == []
    confirmed = confirmed_rules(cpu_doc)
    markdown = render_markdown(cpu_doc)
    for experiment_id, code in WORKER_EXPERIMENTS.items():
        exp = experiment_of(cpu_doc, experiment_id)
        assert exp["verdict"] == "confirmed", exp["summary"]
        assert exp["rules"] == {code: "confirmed"}
        assert code in confirmed and "\n" not in confirmed[code]
        assert f"### `{experiment_id}`" in markdown
        assert f"{code} confirmed" in markdown


@pytest.mark.parametrize("script", ["probe_iterable_duplicates.py"])
def test_runs_standalone_with_safe_path(script: str, tmp_path: Path) -> None:
    """PYTHONSAFEPATH=1 keeps the script's folder off sys.path; the script
    puts it back itself to import its helper."""
    env = dict(os.environ, PYTHONSAFEPATH="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, str(EXPERIMENTS_DIR / script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["verdict"] == "confirmed"
