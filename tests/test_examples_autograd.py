"""The autograd and module examples (TT203-TT207) show their bug, and
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


CASES = [
    pytest.param(
        "tt203_data_attribute.py",
        "TT203",
        ("--unsafe-fixes",),
        "        y.data.zero_()",
        "            y.zero_()",
        id="TT203",
    ),
    pytest.param(
        "tt204_hook_in_forward.py",
        "TT204",
        (),
        "        x.register_hook(lambda grad: -grad)  # gradient reversal",
        "        if x.requires_grad:",
        id="TT204",
    ),
    pytest.param(
        "tt206_plain_tensor_attribute.py",
        "TT206",
        (),
        "        self.proj = torch.eye(4)",
        '        self.register_buffer("proj", torch.eye(4), persistent=False)',
        id="TT206",
    ),
    pytest.param(
        "tt207_missing_eval.py",
        "TT207",
        ("--unsafe-fixes",),
        "    return model(x)",
        "    model.eval()",
        id="TT207",
    ),
]


@pytest.mark.parametrize(("example", "code", "flags", "before", "after"), CASES)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, flags: tuple[str, ...], before: str, after: str
) -> None:
    ex.check_bug_then_fixed(tmp_path, example, code, flags, after, before)


def test_tt203_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt203_data_attribute.py")
    assert "gradient of the recorded graph: [0.149, 0.298]" in output
    assert "gradient after the change through .data: [0.0, 0.0]" in output


def test_tt204_example_error_text() -> None:
    output = ex.output(ex.EXAMPLES / "tt204_hook_in_forward.py")
    assert (
        "RuntimeError: cannot register a hook on a tensor that doesn't require gradient" in output
    )


def test_tt206_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt206_plain_tensor_attribute.py")
    assert "state_dict keys: ['fc.bias', 'fc.weight']" in output
    assert "after .double(): fc.weight torch.float64, proj torch.float32" in output


def test_tt207_example_numbers() -> None:
    output = ex.output(ex.EXAMPLES / "tt207_missing_eval.py")
    assert "largest difference between two evaluations: 0.0000" not in output
    assert "predictions that changed: 0 of" not in output
