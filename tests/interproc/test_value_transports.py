"""Transports of the value layer added for dev-corpus2's misses (branch
``core2``), each with a near-miss twin: a value a rule needs that arrives
through something the layer did not follow."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchtrap import cli


def _lines(
    tmp_path: Path, files: dict[str, str], code: str, capsys: pytest.CaptureFixture[str]
) -> list[tuple[str, int]]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for rel, source in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", code])
    found = json.loads(capsys.readouterr().out)["findings"]
    return sorted((Path(f["path"]).name, f["range"]["start"]["line"]) for f in found)


NARROWED = """\
import torch
import torch.nn as nn


def move(x, m, batch, device):
    if isinstance(x, torch.Tensor):
        x.to(device)  # 7: a tensor in this branch
    if torch.is_tensor(batch["img"]) and device is not None:
        batch["img"].to(device)  # 9: the same expression, tested by torch.is_tensor
    if isinstance(m, nn.Module):
        m.to(device)  # a module converts itself
    if isinstance(x, (list, torch.Tensor)):
        x.to(device)  # a list or a tensor
    if isinstance(x, torch.Tensor):
        x = x.tolist()
        x.to(device)  # re-bound in the branch
    if not isinstance(x, torch.Tensor):
        x.to(device)  # the other branch
    if isinstance(batch["img"], torch.Tensor):
        batch.update(img=None)
        batch["img"].to(device)  # the dict changed in the branch


def test_move(x, dtype):
    x.to(dtype)  # a test probing the call
    if isinstance(x, torch.Tensor):
        x.to(dtype)  # 27: a test that makes sure it is a tensor means to convert it
"""


def test_isinstance_narrows_to_a_tensor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lines(tmp_path, {"move.py": NARROWED}, "TT202", capsys) == [
        ("move.py", 7),
        ("move.py", 9),
        ("move.py", 27),
    ]


NET = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()  # passes the instance to a builtin
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def build():
    return Net()


model = Net().to("cpu")
for _ in range(3):
    model(torch.randn(2, 4)).sum().backward()
{switch}
"""
EVALUATE = """\
import torch
from train import model, build

batch = torch.load("batch.pt")
with torch.no_grad():
    model(batch)  # 6: imported, trained there, never switched
    built = build()
    built(batch)  # 8: a factory's model, never switched
"""


@pytest.mark.parametrize(
    ("switch", "expected"),
    [
        ("", [("evaluate.py", 6), ("evaluate.py", 8)]),
        ("model.eval()", [("evaluate.py", 8)]),
        ("def freeze(m):\n    m.train(False)\nfreeze(model)", [("evaluate.py", 8)]),
        # handed to an unknown function; another instance of the factory switched
        ("import helpers\nhelpers.switch(model)\nbuild().eval()", [("evaluate.py", 8)]),
    ],
)
def test_a_script_model_built_in_another_file(
    tmp_path: Path,
    switch: str,
    expected: list[tuple[str, int]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = {"train.py": NET.format(switch=switch), "evaluate.py": EVALUATE}
    assert _lines(tmp_path, files, "TT207", capsys) == expected


BASE = """\
import torch.nn as nn


class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
{extra}

class Plain:
    def __init__(self):
        self.steps = 0
"""
DERIVED = """\
import torch
from base import Learner, Plain


class Replay(Learner):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(4)  # 8: an nn.Module through a base in base.py


class Counter(Plain):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(4)  # a plain class
"""


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", [("derived.py", 8)]),
        ("    def _apply(self, fn):\n        return super()._apply(fn)\n", []),
    ],
)
def test_a_module_class_through_a_base_in_another_file(
    tmp_path: Path, extra: str, expected: list[tuple[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"base.py": BASE.format(extra=extra), "derived.py": DERIVED}
    assert _lines(tmp_path, files, "TT206", capsys) == expected


MASS = """\
import torch
import torch.nn.functional as F


def losses(logits):
    dist = torch.distributions.categorical.Categorical(logits=logits)
    mass = torch.sum(dist.probs[:, 1:], dim=1)
    a = -torch.log(mass)  # 8: the mass of classes 1.., 0 when class 0 takes it all
    p = F.softmax(logits, dim=-1)
    b = torch.log(p[:, 1:].sum(1))  # 10: the same as a method
    c = torch.log(p.sum(1))  # every class: 1
    d = torch.log(p[:, 1:].sum(0))  # summed over the batch, not the classes cut
    e = torch.log(p[1:, :].sum(1))  # rows cut, every class: 1
    f = torch.log(p[:, 1:].t().sum(1))  # transposed: the cut dimension moved
    return a + b + c + d + e + f
"""


def test_the_sum_of_a_slice_of_a_probability_over_the_cut_dimension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lines(tmp_path, {"mass.py": MASS}, "TT201", capsys) == [("mass.py", 8), ("mass.py", 10)]


# Branch `core3`: a normalisation spelled with `unsqueeze` or `torch.sum`,
# in the module's values and in the whole-program model (made by a helper
# whose dimension is a parameter, reaching a module-level function's
# parameter from a method).
NORMALISED = """\
import torch


def local(p, w):
    q = p / torch.sum(p, 1).unsqueeze(1)
    r = p / p.sum(-1).unsqueeze(-1)
    s = p / torch.sum(p, 1, keepdim=True)
    t = p / torch.sum(p, 1).unsqueeze(0)  # another dimension kept: no normalisation
    u = p / torch.sum(w, 1).unsqueeze(1)  # another tensor's sum
    v = p / p.sum(1)  # nothing kept
    a = torch.log(q)  # 11
    b = torch.log(r)  # 12
    c = torch.log(s)  # 13
    return a + b + c + torch.log(t) + torch.log(u) + torch.log(v)
"""

SMOOTH = """\
import torch


def smooth(logits, temp, dim):
    log = logits ** (1 / temp)
    return log / torch.sum(log, dim).unsqueeze(1)


def kl(old, new):
    return -torch.mean(torch.sum(old * torch.log(new), 1))  # 10


class Lwf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.soft = torch.nn.Softmax(dim=1)

    def observe(self, outputs, logits):
        return kl(smooth(self.soft(logits), 2, 1), smooth(self.soft(outputs), 2, {dim}))
"""


def test_a_normalisation_spelled_with_unsqueeze(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lines(tmp_path, {"norm.py": NORMALISED}, "TT201", capsys) == [
        ("norm.py", 11),
        ("norm.py", 12),
        ("norm.py", 13),
    ]


@pytest.mark.parametrize(("dim", "expected"), [("1", [("lwf.py", 10)]), ("0", [])])
def test_a_normalisation_made_by_a_helper_reaches_a_parameter(
    tmp_path: Path, dim: str, expected: list[tuple[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"lwf.py": SMOOTH.format(dim=dim)}
    assert _lines(tmp_path, files, "TT201", capsys) == expected


# Branch `core3`: a model a caller puts in training mode just before it
# passes it on, picked by a factory of another file's caller (the script
# unpacks the factory's tuple): the whole-program model says which models
# it may be (Hyperspectral-Classification's `val` under `train`).
FACTORY = """\
import torch
import torch.nn as nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.{layer}

    def forward(self, x):
        return self.fc(x)


def get_model(name):
    if name == "small":
        model = Small()
    else:
        model = Deep()
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def val(net, loader):
    with torch.no_grad():
        return [net(x) for x, _ in loader]  # 34


def train(net, optimizer, loader, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in loader:
            optimizer.zero_grad()
            net(x).sum().backward()
            optimizer.step()
        {switch}val(net, loader)
"""

SCRIPT = """\
from models import get_model, train

model, optimizer = get_model("deep")
train(model, optimizer, [], 3)
"""


@pytest.mark.parametrize(
    ("layer", "switch", "expected"),
    [
        ("drop = nn.Dropout(0.5)", "", [("models.py", 34)]),
        ("drop = nn.Dropout(0.5)", "net.eval()\n        ", []),  # switched before it
        ("out = nn.Linear(2, 2)", "", []),  # no model the factory picks has one
    ],
)
def test_a_model_trained_by_its_caller_and_picked_by_a_factory(
    tmp_path: Path,
    layer: str,
    switch: str,
    expected: list[tuple[str, int]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = {"models.py": FACTORY.format(layer=layer, switch=switch), "main.py": SCRIPT}
    assert _lines(tmp_path, files, "TT207", capsys) == expected
