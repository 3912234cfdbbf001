"""The examples of TT223-TT226 show their bug on CPU, and `torchtrap check
--fix` (with `--unsafe-fixes` where the fix is unsafe) removes it.

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
        "tt223_ignored_partial_load.py",
        "TT223",
        (),
        "    print(incompatible)",
        id="TT223",
    ),
    pytest.param(
        "tt224_reseed_in_getitem.py",
        "TT224",
        ("--unsafe-fixes",),
        "        shift = np.random.uniform(-1, 1)",
        id="TT224-getitem",
    ),
    pytest.param(
        "tt224_worker_id_seed.py",
        "TT224",
        ("--unsafe-fixes",),
        "    np.random.seed(torch.initial_seed() % 2**32)",
        id="TT224-worker-init",
    ),
    pytest.param(
        "tt225_uninitialised_tensor.py",
        "TT225",
        (),
        "    total = torch.zeros(dim)",
        id="TT225",
    ),
    pytest.param(
        "tt225_uninitialised_parameter.py",
        "TT225",
        ("--unsafe-fixes",),
        "        self.bg_embeddings = nn.Parameter(torch.zeros(1, dim))",
        id="TT225-parameter",
    ),
    pytest.param(
        "tt226_clip_after_step.py",
        "TT226",
        (),
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
        id="TT226",
    ),
]


@pytest.mark.parametrize(("example", "code", "flags", "after"), CASES)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, flags: tuple[str, ...], after: str
) -> None:
    before = {
        "tt224_reseed_in_getitem.py": "        np.random.seed(0)",
        "tt226_clip_after_step.py": "        optimizer.step()",
        "tt225_uninitialised_parameter.py": (
            "        self.bg_embeddings = nn.Parameter(torch.empty(1, dim))"
        ),
    }.get(example)
    ex.check_bug_then_fixed(tmp_path, example, code, flags, after, before)


def test_tt226_fix_puts_the_clip_before_the_step(tmp_path: Path) -> None:
    copy = ex.fixed_copy(tmp_path, "tt226_clip_after_step.py")
    lines = [line.strip() for line in copy.read_text().splitlines()]
    clip = lines.index("torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)")
    assert lines[clip - 1] == "loss.backward()"
    assert lines[clip + 1] == "optimizer.step()"


def test_tt224_getitem_fix_removes_the_seeding(tmp_path: Path) -> None:
    copy = ex.fixed_copy(tmp_path, "tt224_reseed_in_getitem.py", "--unsafe-fixes")
    text = copy.read_text()
    assert "        np.random.seed(0)\n" not in text
    assert "    np.random.seed(0)  # once, at start-up" in text
