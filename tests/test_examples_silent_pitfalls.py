"""The silent-pitfall examples (TT220-TT222, TT227) show their bug, and
`torchtrap check --fix` (with `--unsafe-fixes` where the fix is unsafe)
removes it.

Each example prints `RESULT: bug` as it is; after the CLI's fixes on a copy
it prints `RESULT: ok`, and the copy re-lints clean for its rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import examples_harness as ex

pytest.importorskip("torch")

EXAMPLES_TABLE = [
    pytest.param(
        "tt220_eval_not_called.py",
        "TT220",
        False,
        "    model.eval",
        "    model.eval()",
        id="TT220",
    ),
    pytest.param(
        "tt221_require_grad_typo.py",
        "TT221",
        False,
        "        param.require_grad = False",
        "        param.requires_grad = False",
        id="TT221",
    ),
    pytest.param(
        "tt222_parameter_moved.py",
        "TT222",
        False,
        "        self.scale = nn.Parameter(torch.ones(n)).double()",
        "        self.scale = nn.Parameter(torch.ones(n).double())",
        id="TT222",
    ),
    pytest.param(
        "tt227_bare_no_grad.py",
        "TT227",
        True,
        "    torch.no_grad()",
        "    with torch.no_grad():",
        id="TT227",
    ),
]


@pytest.mark.parametrize(("example", "code", "unsafe", "before", "after"), EXAMPLES_TABLE)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, unsafe: bool, before: str, after: str
) -> None:
    flags = ("--unsafe-fixes",) if unsafe else ()
    ex.check_bug_then_fixed(tmp_path, example, code, flags, after, before)


def test_tt220_dropout_on_then_off(tmp_path: Path) -> None:
    before = ex.output(ex.EXAMPLES / "tt220_eval_not_called.py")
    assert "model.training after evaluate: True" in before
    assert "predictions that changed between two passes: 0 of 64" not in before
    after = ex.output(ex.fixed_copy(tmp_path, "tt220_eval_not_called.py"))
    assert "model.training after evaluate: False" in after
    assert "predictions that changed between two passes: 0 of 64" in after


def test_tt221_backbone_trains_then_frozen(tmp_path: Path) -> None:
    before = ex.output(ex.EXAMPLES / "tt221_require_grad_typo.py")
    assert "backbone.weight.requires_grad: True" in before
    assert "backbone changed by a training step: True" in before
    after = ex.output(ex.fixed_copy(tmp_path, "tt221_require_grad_typo.py"))
    assert "backbone.weight.requires_grad: False" in after
    assert "backbone changed by a training step: False" in after


def test_tt222_parameter_missing_then_registered(tmp_path: Path) -> None:
    before = ex.output(ex.EXAMPLES / "tt222_parameter_moved.py")
    assert "parameters: ['linear.weight', 'linear.bias']" in before
    assert "state_dict keys: ['linear.weight', 'linear.bias']" in before
    assert "scale is a leaf: False" in before
    after = ex.output(ex.fixed_copy(tmp_path, "tt222_parameter_moved.py"))
    assert "parameters: ['scale', 'linear.weight', 'linear.bias']" in after
    assert "state_dict keys: ['scale', 'linear.weight', 'linear.bias']" in after
    assert "scale is a leaf: True" in after


def test_tt227_graph_recorded_then_not(tmp_path: Path) -> None:
    before = ex.output(ex.EXAMPLES / "tt227_bare_no_grad.py")
    assert "predictions require grad: True" in before
    after = ex.output(ex.fixed_copy(tmp_path, "tt227_bare_no_grad.py", "--unsafe-fixes"))
    assert "predictions require grad: False" in after
    assert "predictions have a grad_fn: False" in after
