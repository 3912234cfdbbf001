"""The numerics examples show their bug, and `torchtrap check --fix` removes it.

Each example prints `RESULT: bug` as it is; after the CLI's safe fixes on a
copy it prints `RESULT: ok`, and the copy re-lints clean for its rule.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchtrap.engine import lint
from torchtrap.rules import get_rule

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SERVER = ROOT / "server"


def _run(path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(SERVER), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, *args, str(path)] if args else [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=path.parent,
    )


def _result(path: Path) -> tuple[str, str]:
    proc = _run(path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    return lines[-1], proc.stdout


def _fix(path: Path) -> None:
    proc = _run(path, "-m", "torchtrap", "check", "--fix", "--exit-zero")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("example", "code", "before", "after"),
    [
        pytest.param(
            "tt201_log_of_softmax.py",
            "TT201",
            "    return -torch.log(torch.softmax(x, -1))[0, target]",
            "    return -torch.log_softmax(x, -1)[0, target]",
            id="TT201",
        ),
        pytest.param(
            "tt202_discarded_clamp.py",
            "TT202",
            "        prob.clamp(min=0.0001, max=1.0)",
            "        prob = prob.clamp(min=0.0001, max=1.0)",
            id="TT202",
        ),
        pytest.param(
            "tt211_len_loader_accuracy.py",
            "TT211",
            "    return 100.0 * correct / len(test_loader)",
            "    return 100.0 * correct / len(test_loader.dataset)",
            id="TT211",
        ),
    ],
)
def test_example_bug_then_fixed(
    tmp_path: Path, example: str, code: str, before: str, after: str
) -> None:
    source = EXAMPLES / example
    result, output = _result(source)
    assert result == "RESULT: bug", output
    rule = get_rule(code)
    assert rule is not None
    assert [f.code for f in lint(source.read_text(), str(source), rules=[rule])] == [code]

    copy = tmp_path / example
    shutil.copy(source, copy)
    _fix(copy)
    fixed = copy.read_text()
    assert before in source.read_text().splitlines()
    assert after in fixed.splitlines(), fixed
    assert lint(fixed, str(copy), rules=[rule]) == []
    result, output = _result(copy)
    assert result == "RESULT: ok", output


def test_tt201_example_numbers() -> None:
    """The numbers the docs quote: loss inf and NaN gradient before the fix."""
    _, output = _result(EXAMPLES / "tt201_log_of_softmax.py")
    assert "loss: inf  (cross_entropy: 120.0)" in output
    assert "grad: [[nan, nan]]" in output


def test_tt202_example_numbers() -> None:
    _, output = _result(EXAMPLES / "tt202_discarded_clamp.py")
    assert "smallest probability after the clamp line: 0.0" in output
    assert "focal loss: inf" in output


def test_tt211_example_numbers() -> None:
    """The accuracy the docs quote: 1600% reported for a true 50%."""
    _, output = _result(EXAMPLES / "tt211_len_loader_accuracy.py")
    assert "batches: 2, samples: 64" in output
    assert "reported accuracy: 1600.0%" in output
    assert "true accuracy: 50.0%" in output


def test_examples_are_unchanged_by_the_tests() -> None:
    # The e2e tests (VS Code Ctrl+.) rely on this exact line.
    text = (EXAMPLES / "tt202_discarded_clamp.py").read_text().splitlines()
    assert text.count("        prob.clamp(min=0.0001, max=1.0)") == 1


SHARDED = """\
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def test(model, dataset):
    # replica 0 of 2, as each process of a DDP run sees it
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=False)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            correct += (model(data) == target).sum().item()
    return correct / len(loader)


data = TensorDataset(torch.arange(16), torch.arange(16))
accuracy = test(lambda x: x, data)  # always right: the true accuracy is 1.0
print(f"accuracy: {accuracy}")
print("RESULT: ok" if accuracy == 1.0 else "RESULT: bug")
"""


def test_tt211_fix_with_a_distributed_sampler_divides_by_its_length(tmp_path: Path) -> None:
    """Each replica sees len(loader.sampler) samples (8 of 16 here), so
    dividing by len(loader.dataset) would report 0.5 for a perfect model."""
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    result, output = _result(script)
    assert (result, "accuracy: 4.0" in output) == ("RESULT: bug", True), output
    _fix(script)  # safe fixes only
    fixed = script.read_text()
    assert "    return correct / len(loader.sampler)\n" in fixed
    assert _result(script)[0] == "RESULT: ok"
    assert lint(fixed, str(script), rules=[get_rule("TT211")]) == []
