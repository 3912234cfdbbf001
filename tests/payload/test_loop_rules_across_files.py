"""Issue 34: the loop and model rules across functions and files, through
the whole-program model. Each case is shaped like the real code it was
found in (dev-corpus3 rows), and has a near-miss twin that stays silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli


def _check(
    tmp_path: Path, files: dict[str, str], select: str, capsys: pytest.CaptureFixture[str]
) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(
        ["check", str(tmp_path), "--no-cache", "--format", "json", "--show-hints"]
        + ["--select", select]
    )
    return json.loads(capsys.readouterr().out)["findings"]


# -- TT216: the evaluation in another file (milesial/Pytorch-UNet's eval_net) --------
UNET = """\
import torch.nn as nn


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 3, padding=1)
        self.bn = nn.BatchNorm2d(1)

    def forward(self, x):
        return self.bn(self.conv(x))
"""
EVAL = """\
import torch


def eval_net(net, dataset):
    net.eval()
    tot = 0
    with torch.no_grad():
        for img, mask in dataset:
            tot += (net(img) - mask).abs().mean().item()
    return tot
"""
EVAL_RESTORES = """\
import torch


def eval_net(net, dataset):
    net.eval()
    tot = 0
    with torch.no_grad():
        for img, mask in dataset:
            tot += (net(img) - mask).abs().mean().item()
    net.train()
    return tot
"""
TRAIN = """\
import torch
from eval import eval_net
from unet import UNet


def train_net(net, train, val, epochs):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(epochs):
        for img, mask in train:
            loss = (net(img) - mask).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        val_dice = eval_net(net, val)
        print(val_dice)


train_net(UNet().to("cpu"), [], [], 5)
"""


def test_tt216_evaluation_in_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _check(tmp_path, {"unet.py": UNET, "eval.py": EVAL, "train.py": TRAIN}, "TT216", capsys)
    (finding,) = found
    assert Path(finding["path"]).name == "train.py"
    assert finding["range"]["start"]["line"] == 14  # the evaluation call
    assert "`net` stays in eval mode after `eval_net()`" in finding["message"]
    paths = {Path(r["path"]).name for r in finding["related"] if r.get("path")}
    assert paths == {"eval.py"}


def test_tt216_evaluation_in_another_file_that_restores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"unet.py": UNET, "eval.py": EVAL_RESTORES, "train.py": TRAIN}
    assert _check(tmp_path, files, "TT216", capsys) == []


# -- TT213: the model's forward in another file ends in a softmax ------------------
NETWORK = """\
import torch.nn as nn
import torch.nn.functional as F


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(9, 6)

    def forward(self, x):
        out = self.fc(x)
        out = F.{end}(out, dim=1)
        return out
"""
MAIN = """\
import torch
import torch.nn as nn
import network as net
from losses import build_criterion


def train(model, optimizer, loader, cfg):
    criterion = build_criterion(cfg)
    for sample, target in loader:
        output = model(sample)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


model = net.Network().to("cpu")
train(model, torch.optim.SGD(model.parameters(), lr=0.1), [], {{"loss": "ce"}})
"""
LOSSES = """\
import torch.nn as nn

LOSSES = {{"ce": nn.{loss}}}


def build_criterion(cfg):
    return LOSSES[cfg["loss"]]()
"""


@pytest.mark.parametrize(
    ("end", "loss", "flagged"),
    [
        ("softmax", "CrossEntropyLoss", True),
        ("softmax", "NLLLoss", True),
        ("log_softmax", "NLLLoss", False),  # the intended pairing
        ("log_softmax", "CrossEntropyLoss", False),  # log_softmax is idempotent under it
    ],
)
def test_tt213_forward_in_another_file_and_a_criterion_factory(
    tmp_path: Path, end: str, loss: str, flagged: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "network.py": NETWORK.format(end=end),
        "main.py": MAIN.format(),
        "losses.py": LOSSES.format(loss=loss),
    }
    found = _check(tmp_path, files, "TT213", capsys)
    if not flagged:
        assert found == []
        return
    (finding,) = found
    assert Path(finding["path"]).name == "main.py"
    assert finding["range"]["start"]["line"] == 11
    assert "softmax output (network.py:12)" in finding["message"]


def test_tt213_a_factory_table_of_two_losses_is_not_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = LOSSES.format(loss="CrossEntropyLoss").replace(
        '"ce": nn.CrossEntropyLoss}', '"ce": nn.CrossEntropyLoss, "mse": nn.MSELoss}'
    )
    main = MAIN.format().replace("output = model(sample)", "output = model(sample).exp()")
    files = {"network.py": NETWORK.format(end="softmax"), "main.py": main, "losses.py": table}
    assert _check(tmp_path, files, "TT213", capsys) == []


# -- TT215: a helper in another file gets the optimizer ------------------------------
UTILS = """\
def clip_gradient(optimizer, grad_clip):
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                param.grad.data.clamp_(-grad_clip, grad_clip)
"""
UTILS_ZEROES = """\
def clip_gradient(optimizer, grad_clip):
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                param.grad.data.clamp_(-grad_clip, grad_clip)
    optimizer.zero_grad()
"""
MAIN_215 = """\
import torch
import torch.nn.functional as F
import utils


def main(model, train_iter, epochs):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    optimizer.zero_grad()
    for i in range(epochs):
        for batch in train_iter:
            loss = F.cross_entropy(model(batch.text), batch.label)
            loss.backward()
            utils.clip_gradient(optimizer, 0.5)
            optimizer.step()
"""


def test_tt215_the_helper_in_another_file_does_not_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _check(tmp_path, {"utils.py": UTILS, "main.py": MAIN_215}, "TT215", capsys)
    assert [f["range"]["start"]["line"] for f in found] == [14]


def test_tt215_the_helper_in_another_file_zeroes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _check(tmp_path, {"utils.py": UTILS_ZEROES, "main.py": MAIN_215}, "TT215", capsys)
    assert found == []


# -- TT219: which torch a bare torch.load runs on ------------------------------------
LOAD = """\
import torch


def load_checkpoint(path):
    return torch.load(path, map_location="cpu")
"""


@pytest.mark.parametrize(
    ("requirements", "severity"),
    [
        ("torch>=1.10.0\nnumpy\n", "warning"),  # joeynmt: the range admits torch < 2.6
        ("torch>=2.1,<3\n", "warning"),
        ("torch>=2.6.0\n", None),  # opacus: the range excludes it
        ("torch==2.8.0\n", None),
        ("torch\n", "hint"),  # unpinned: the installed torch (>= 2.6 here) decides
        ("numpy\n", "hint"),  # nothing declared
    ],
)
def test_tt219_the_declared_range_wins_over_the_installed_torch(
    tmp_path: Path, requirements: str, severity: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(requirements)
    found = _check(tmp_path, {"helpers.py": LOAD}, "TT219", capsys)
    assert [f["severity"] for f in found] == ([severity] if severity else [])
    if severity == "warning":
        assert requirements.splitlines()[0].replace(" ", "") in found[0]["message"]
        assert "admits torch < 2.6" in found[0]["message"]


def test_tt219_a_configured_torch_version_wins_over_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("torch>=1.10\n")
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'p'\n[tool.torchtrap]\ntorch-version = '2.7'\n"
    )
    (tmp_path / "helpers.py").write_text(LOAD)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT219"])
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_tt219_setup_py_install_requires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='p', install_requires=['numpy', 'torch>=1.8'])\n"
    )
    found = _check(tmp_path, {"helpers.py": LOAD}, "TT219", capsys)
    assert [f["severity"] for f in found] == ["warning"]
    assert "`torch>=1.8`" in found[0]["message"]


# -- TT214: a meter object of another file keeps the loss ----------------------------
METERS = """\
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        {body}
        self.count += n
"""
TRAIN_214 = """\
import torch
from meters import AverageMeter


def train(model, loader, optimizer, criterion):
    losses = AverageMeter()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))
    return losses.sum / losses.count
"""


@pytest.mark.parametrize(
    ("body", "flagged"),
    [
        ("self.sum += val * n", True),
        ("self.sum += val.item() * n", False),  # the meter keeps a number
        ("val = float(val)\n        self.sum += val * n", False),
    ],
)
def test_tt214_a_meter_of_another_file_keeps_the_loss(
    tmp_path: Path, body: str, flagged: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"meters.py": METERS.format(body=body), "train.py": TRAIN_214}
    found = _check(tmp_path, files, "TT214", capsys)
    assert [f["range"]["start"]["line"] for f in found] == ([12] if flagged else [])
    if flagged:
        assert "`losses` keeps (`.update()`)" in found[0]["message"]
