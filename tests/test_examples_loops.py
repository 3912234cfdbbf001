"""The training-loop examples (TT108, TT214-TT217) show their bug on CPU with
a measured number, and `torchtrap check --fix` (with `--unsafe-fixes` where
the fix is unsafe) removes it.

Each example prints `RESULT: bug` as it is; after the CLI's fixes on a copy
it prints `RESULT: ok`, and the copy re-lints clean for its rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import examples_harness as ex

pytest.importorskip("torch")


CASES = [
    pytest.param(
        "tt108_sampler_without_set_epoch.py",
        "TT108",
        (),
        "        sampler.set_epoch(epoch)",
        id="TT108",
    ),
    pytest.param(
        "tt216_train_mode_not_restored.py",
        "TT216",
        (),
        "        model.train()",
        id="TT216",
    ),
    pytest.param(
        "tt214_loss_kept_with_graph.py",
        "TT214",
        (),
        "        total_loss += loss.detach()",
        id="TT214",
    ),
    pytest.param(
        "tt215_missing_zero_grad.py",
        "TT215",
        ("--unsafe-fixes",),
        "        optimizer.zero_grad()",
        id="TT215",
    ),
    pytest.param(
        "tt217_clip_scaled_gradients.py",
        "TT217",
        (),
        "    scaler.unscale_(optimizer)",
        id="TT217",
    ),
]


@pytest.mark.parametrize(("example", "code", "flags", "after"), CASES)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, flags: tuple[str, ...], after: str
) -> None:
    ex.check_bug_then_fixed(tmp_path, example, code, flags, after)


def _number(pattern: str, output: str) -> float:
    match = re.search(pattern, output)
    assert match, output
    return float(match.group(1).replace(",", ""))


def test_tt217_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt217_clip_scaled_gradients.py")
    seen = _number(r"seen by clip_grad_norm_: ([\d,.]+)", output)
    used = _number(r"the optimizer used \(max_norm=1.0\): ([\d.e+-]+)", output)
    # The clip sees the norm times the initial scale, 65,536, and leaves the
    # real gradients at max_norm / 65,536.
    assert seen > 65_536
    assert used == pytest.approx(1.0 / 65_536, rel=1e-3)


def test_tt215_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt215_missing_zero_grad.py")
    assert "relative to the first: 1.00, 2.00, 3.00" in output


def test_tt214_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt214_loss_kept_with_graph.py")
    # Each step's loss graph (7 nodes for this MLP's loss) stays reachable.
    assert _number(r"kept alive by total_loss after 2000 steps: (\d+)", output) >= 2000 * 4
    assert _number(r"memory growth over the last 1800 steps: ([\d.]+) MB", output) > 3


def test_tt216_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt216_train_mode_not_restored.py")
    assert "epoch 1: Dropout(0.5) zeroed 50% of activations in training" in output
    assert "epoch 2: Dropout(0.5) zeroed 0% of activations in training" in output


def test_tt108_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt108_sampler_without_set_epoch.py")
    for epoch in range(3):
        assert f"epoch {epoch}: [12, 9, 11, 13, 2, 15, 4, 7]" in output
    assert "distinct orders in 3 epochs: 1" in output
