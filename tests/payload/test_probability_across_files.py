"""TT201 through the whole-program model (issue 34's misses): the log of what
a module's ``forward`` or a method such as ``self.pi(s)`` returns, defined in
another file; each with a near-miss twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

NETS = """\
import torch.nn as nn
import torch.nn.functional as F


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def pi(self, s):
        return {end}

    def forward(self, s):
        return {end}
"""
PPO = """\
import torch
from nets import Policy


def ratio(policy, s, a, old):
    pi = policy.pi(s)
    return torch.exp(torch.log(pi.gather(1, a)) - old)


def loss(model, s):
    return torch.log(model(s)).mean()


def guarded(model, s):
    return torch.log(model(s) + 1e-8).mean()


policy = Policy()
ratio(policy, torch.randn(3, 4), torch.zeros(3, 1, dtype=torch.long), 0.0)
loss(policy, torch.randn(3, 4))
guarded(policy, torch.randn(3, 4))
"""


def _findings(tmp_path: Path, end: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "nets.py").write_text(NETS.format(end=end))
    (tmp_path / "ppo.py").write_text(PPO)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT201"])
    return json.loads(capsys.readouterr().out)["findings"]


@pytest.mark.parametrize(
    "end",
    ["F.softmax(self.fc(s), dim=-1)", "self.fc(s).softmax(-1)", "nn.Softmax(dim=-1)(self.fc(s))"],
)
def test_the_log_of_a_softmax_returned_from_another_file(
    tmp_path: Path, end: str, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _findings(tmp_path, end, capsys)
    assert sorted(f["range"]["start"]["line"] for f in found) == [7, 11], found
    # The value path: the call in this function it came out of, then where it
    # is made (not the calls at the bottom of ppo.py that lead into ratio/loss).
    calls = {
        7: (6, "made inside `policy.pi()`, called here"),
        11: (11, "made inside `model()`, called here"),
    }
    for finding in found:
        assert "softmax output (nets.py:" in finding["message"]
        call, made = finding["related"]
        assert Path(made["path"]).name == "nets.py"
        assert made["message"] == "the softmax is computed here"
        assert call["path"] is None
        assert (call["range"]["start"]["line"], call["message"]) == calls[
            finding["range"]["start"]["line"]
        ]
        assert [fix["applicability"] for fix in finding["fixes"]] == ["unsafe"]


@pytest.mark.parametrize(
    "end",
    [
        "self.fc(s)",  # logits
        "F.log_softmax(self.fc(s), dim=-1)",  # already in log space
        "F.softmax(self.fc(s), dim=-1).clamp(min=1e-6)",  # guarded where it is made
    ],
)
def test_near_misses_stay_silent(
    tmp_path: Path, end: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _findings(tmp_path, end, capsys) == []


def test_the_clamp_fix_relints_clean_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _findings(tmp_path, "F.softmax(self.fc(s), dim=-1)", capsys)
    select = ["--no-cache", "--select", "TT201", "--fix", "--unsafe-fixes"]
    cli.main(["check", str(tmp_path), *select])
    fixed = (tmp_path / "ppo.py").read_text()
    compile(fixed, "ppo.py", "exec")
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT201"])
    assert json.loads(capsys.readouterr().out)["findings"] == []
    cli.main(["check", str(tmp_path), *select])
    assert (tmp_path / "ppo.py").read_text() == fixed
