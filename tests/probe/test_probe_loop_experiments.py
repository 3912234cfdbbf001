"""The training-loop experiments (TT108, TT217) on the installed torch: run as
the runner runs them, they confirm their rules with the numbers the rule docs
state, fit the schema, and sit in the catalog under their rules."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from torchtrap.probe.catalog import EXPERIMENTS, EXPERIMENTS_DIR
from torchtrap.probe.process import run_script

pytest.importorskip("torch")

LOOP_EXPERIMENTS = {"sampler-order": "TT108", "scaled-clip": "TT217"}


def _run(name: str) -> dict[str, Any]:
    run = run_script(sys.executable, EXPERIMENTS_DIR / name, timeout=120, args=())
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_catalog_maps_the_experiments_to_their_rules() -> None:
    by_id = {e.id: e for e in EXPERIMENTS}
    for experiment_id, code in LOOP_EXPERIMENTS.items():
        assert by_id[experiment_id].rules == (code,)
        assert not by_id[experiment_id].needs_cuda
        assert by_id[experiment_id].script.is_file()


def test_sampler_repeats_its_order_without_set_epoch() -> None:
    result = _run("probe_sampler_order.py")
    ev = result["evidence"]
    assert ev["orders_without_set_epoch"] == [[12, 9, 11, 13, 2, 15, 4, 7]] * 3
    assert ev["orders_with_set_epoch"][1] == [5, 6, 11, 7, 1, 9, 10, 13]
    assert ev["distinct_with_set_epoch"] == 3
    assert result["rules"] == {"TT108": "confirmed"}


def test_clip_before_unscale_sees_the_scaled_norm() -> None:
    result = _run("probe_scaled_clip.py")
    bad, good = result["evidence"]["clip_before_unscale"], result["evidence"]["clip_after_unscale"]
    assert bad["scale"] == 65536.0
    assert bad["norm_seen_by_clip"] == pytest.approx(good["norm_seen_by_clip"] * 65536, rel=1e-3)
    assert bad["norm_used_by_optimizer"] == pytest.approx(1.0 / 65536, rel=1e-3)
    assert good["norm_used_by_optimizer"] == pytest.approx(1.0, rel=1e-4)
    assert result["rules"] == {"TT217": "confirmed"}
