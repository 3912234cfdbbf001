"""The model and loss examples (TT212, TT213, TT218, TT219) show their bug,
and `torchtrap check --fix` (with `--unsafe-fixes` where the fix is unsafe)
removes it.

Each example prints `RESULT: bug` as it is; after the CLI's fixes on a copy
it prints `RESULT: ok`, and the copy re-lints clean for its rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import examples_harness as ex

pytest.importorskip("torch")


def _output(path: Path) -> tuple[str, str]:
    text = ex.output(path)
    return ex.result(text), text


def _fixed_copy(tmp_path: Path, example: str, *, unsafe: bool) -> Path:
    return ex.fixed_copy(tmp_path, example, *(["--unsafe-fixes"] if unsafe else []))


EXAMPLES_TABLE = [
    pytest.param(
        "tt213_softmax_into_cross_entropy.py",
        "TT213",
        False,
        "    return F.cross_entropy(torch.softmax(logits, dim=1), y)",
        "    return F.cross_entropy(logits, y)",
        id="TT213",
    ),
    pytest.param(
        "tt218_layers_in_a_list.py",
        "TT218",
        True,
        "        self.blocks = [nn.Linear(d, d) for _ in range(n)]",
        "        self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])",
        id="TT218",
    ),
    pytest.param(
        "tt212_functional_dropout.py",
        "TT212",
        False,
        "        h = F.dropout(h, 0.5)",
        "        h = F.dropout(h, 0.5, training=self.training)",
        id="TT212",
    ),
    pytest.param(
        "tt219_unsafe_torch_load.py",
        "TT219",
        True,
        '    return torch.load(path, map_location="cpu", weights_only=False)',
        '    return torch.load(path, map_location="cpu", weights_only=True)',
        id="TT219",
    ),
]


@pytest.mark.parametrize(("example", "code", "unsafe", "before", "after"), EXAMPLES_TABLE)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, unsafe: bool, before: str, after: str
) -> None:
    flags = ("--unsafe-fixes",) if unsafe else ()
    ex.check_bug_then_fixed(tmp_path, example, code, flags, after, before)


def test_tt219_marker_written_then_refused(tmp_path: Path) -> None:
    """The payload runs on load as written; after the fix the load refuses
    it, nothing is written, and a plain state_dict still loads."""
    _, before = _output(ex.EXAMPLES / "tt219_unsafe_torch_load.py")
    assert "marker file written by the checkpoint: True" in before
    assert "marker says: code ran on load" in before
    _, after = _output(_fixed_copy(tmp_path, "tt219_unsafe_torch_load.py", unsafe=True))
    assert "marker file written by the checkpoint: False" in after
    assert re.search(r"^refused: .*Weights only load failed", after, re.M), after
    assert "a plain state_dict still loads: ['bias', 'weight']" in after


def test_tt212_two_eval_passes_differ_then_agree(tmp_path: Path) -> None:
    _, before = _output(ex.EXAMPLES / "tt212_functional_dropout.py")
    assert "predictions that changed: 15 of 32" in before
    assert "largest difference between two eval-mode passes: 0.0000" not in before
    _, after = _output(_fixed_copy(tmp_path, "tt212_functional_dropout.py", unsafe=False))
    assert "largest difference between two eval-mode passes: 0.0000" in after
    assert "predictions that changed: 0 of 32" in after


def test_tt218_optimizer_state_dict_and_dtype(tmp_path: Path) -> None:
    _, before = _output(ex.EXAMPLES / "tt218_layers_in_a_list.py")
    assert "parameter tensors the optimizer trains: 2 of 8" in before
    assert "first block changed by a training step: False" in before
    assert "state_dict keys: 2 of 8" in before
    assert "first block's dtype after model.double(): torch.float32" in before
    _, after = _output(_fixed_copy(tmp_path, "tt218_layers_in_a_list.py", unsafe=True))
    assert "parameter tensors the optimizer trains: 8 of 8" in after
    assert "first block changed by a training step: True" in after
    assert "state_dict keys: 8 of 8" in after
    assert "first block's dtype after model.double(): torch.float64" in after


def test_tt213_loss_barely_moves_then_falls(tmp_path: Path) -> None:
    _, before = _output(ex.EXAMPLES / "tt213_softmax_into_cross_entropy.py")
    assert "training loss: 1.05 -> 0.56 after 300 steps" in before
    assert "first gradient norm: 0.398" in before
    fixed = _fixed_copy(tmp_path, "tt213_softmax_into_cross_entropy.py", unsafe=False)
    _, after = _output(fixed)
    assert "training loss: 1.47 -> 0.01 after 300 steps" in after
    assert "first gradient norm: 1.734" in after
