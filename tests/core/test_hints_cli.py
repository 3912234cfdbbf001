"""Hint-level findings (modernisation, not bugs) in `torchtrap check`: left
out unless asked for (`--show-hints`, `show-hints = true`), never a failing
exit code, not fixed by `--fix` while hidden; in every output format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

HINT_ONLY = {
    # TT210's plain `Variable(x)` and TT203's parameter update: both hints.
    "gan.py": (
        "import torch\nfrom torch.autograd import Variable\n\n"
        "def step(netD, real):\n    x = Variable(real)\n    return netD(x)\n"
    ),
    "model.py": (
        "import torch.nn as nn\n\nmodel = nn.Linear(4, 2)\n"
        "for p in model.parameters():\n    p.data.mul_(0.9)\n"
    ),
}
BUG = "import torch\n\ndef f(x):\n    return torch.log(torch.softmax(x, -1))\n"


@pytest.fixture
def hints_only(tmp_path: Path) -> Path:
    for name, text in HINT_ONLY.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["check", "--no-cache", "--color", "never", *argv])
    return code, capsys.readouterr().out


def test_a_tree_with_only_hints_passes(
    hints_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check(capsys, str(hints_only))
    assert code == 0
    assert "TT210" not in out and "TT203" not in out
    assert "All checks passed!" in out
    assert "2 hints hidden (modernisation, not bugs); `--show-hints` shows them." in out


def test_show_hints_prints_them_and_still_passes(
    hints_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check(capsys, "--show-hints", str(hints_only))
    assert code == 0
    assert "TT210" in out and "TT203" in out
    assert "2 hints (modernisation, not bugs: they never fail check)." in out
    (hints_only / "bug.py").write_text(BUG, encoding="utf-8")
    code, out = check(capsys, "--show-hints", str(hints_only))
    assert code == 1
    assert "Found 1 issue and 2 hints." in out


def test_config_key_shows_hints(hints_only: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (hints_only / "pyproject.toml").write_text("[tool.torchtrap]\nshow-hints = true\n")
    code, out = check(capsys, str(hints_only))
    assert code == 0 and "TT210" in out and "hidden" not in out


def test_fix_leaves_hidden_hints_alone(
    hints_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gan = hints_only / "gan.py"
    check(capsys, "--fix", str(hints_only))
    assert gan.read_text(encoding="utf-8") == HINT_ONLY["gan.py"]
    check(capsys, "--fix", "--show-hints", str(hints_only))
    assert "x = real.detach()\n" in gan.read_text(encoding="utf-8")


def test_machine_formats(hints_only: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, "--format", "json", str(hints_only))
    document = json.loads(out)
    assert code == 0 and document["findings"] == [] and document["hints_hidden"] == 2
    code, out = check(capsys, "--format", "json", "--show-hints", str(hints_only))
    document = json.loads(out)
    assert code == 0 and {f["severity"] for f in document["findings"]} == {"hint"}
    assert document["hints_hidden"] == 0

    code, out = check(capsys, "--format", "sarif", str(hints_only))
    (run,) = json.loads(out)["runs"]
    assert code == 0 and run["results"] == [] and run["properties"]["hintsHidden"] == 2
    code, out = check(capsys, "--format", "sarif", "--show-hints", str(hints_only))
    (run,) = json.loads(out)["runs"]
    assert code == 0 and {r["level"] for r in run["results"]} == {"note"}

    code, out = check(capsys, "--format", "github", str(hints_only))
    assert code == 0 and out == ""
    code, out = check(capsys, "--format", "github", "--show-hints", str(hints_only))
    assert code == 0 and out.count("::notice ") == 2


def test_stdin_hides_hints_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(HINT_ONLY["gan.py"]))
    code, out = check(capsys, "-")
    assert code == 0 and "1 hint hidden" in out
