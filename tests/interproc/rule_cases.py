"""The rules' transport matrix (issue 32): each producer of a bad value,
crossed with each way it travels, each with a near-miss twin, scored by what
``torchtrap check`` reports (the core's own matrix, what it holds, is
``matrix.py``).

A case is a small project: ``nets.py`` (the classes every producer needs),
``helpers.py`` and ``pkg/`` (where the other-file transports put the
producer), and ``main.py`` (the transport's own code and the consumer: the
place the rule looks at). The bug project must get at least one finding of
the producer's rule; its twin (the same project with the near-miss value:
logits instead of a softmax, a CPU tensor instead of a CUDA one, a class
that only looks like a generator) none.

Used by ``test_rule_matrix.py`` and ``bench/rule_matrix.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from torchtrap import cli

HEADER = """\
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
"""
NETS = (
    HEADER
    + """

class SoftNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=-1)


class LogitNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x)


class Const:
    # Looks like a generator (it has .random()), draws nothing.
    def random(self):
        return 0.5


class Range:
    # Its clamp() changes it in place: nothing to assign back.
    def __init__(self):
        self.low = None

    def clamp(self, min=None):
        self.low = min
"""
)
IMPORTS = HEADER + "from nets import Const, LogitNet, Range, SoftNet\n"


@dataclass(frozen=True)
class Producer:
    name: str
    code: str  # the rule that must fire
    make: str  # an expression that makes the bad value
    decoy: str  # the near miss: same shape, not bad
    consumer: str  # main.py's use; {expr} is an expression holding the value


DATASET = """\
class Data(Dataset):
    def __init__(self):
        self.v = {expr}

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {item}


loader = DataLoader(Data(), batch_size=2, num_workers=4)
"""

PRODUCERS = [
    Producer(
        "probability into log (TT201)",
        "TT201",
        "F.softmax(torch.randn(2, 3), dim=-1)",
        "torch.randn(2, 3)",
        "def consume():\n    p = {expr}\n    return torch.log(p).sum()\n\n\nconsume()\n",
    ),
    Producer(
        "softmax model into CrossEntropy (TT213)",
        "TT213",
        "SoftNet()",
        "LogitNet()",
        "def consume(x, y):\n    net = {expr}\n    return nn.CrossEntropyLoss()(net(x), y)\n\n\n"
        "consume(torch.randn(2, 3), torch.tensor([0, 1]))\n",
    ),
    Producer(
        "stored RNG in a dataset (TT101)",
        "TT101",
        "np.random.default_rng(0)",
        "Const()",
        DATASET.replace("{item}", "torch.tensor(self.v.random())"),
    ),
    Producer(
        "worker count (TT101)",
        "TT101",
        "4",
        "0",
        DATASET.replace("{item}", "torch.tensor(self.v.random())")
        .replace("self.v = {expr}", "self.v = np.random.default_rng(0)")
        .replace("num_workers=4", "num_workers={expr}"),
    ),
    Producer(
        "module in a plain list (TT218)",
        "TT218",
        "nn.Linear(3, 3)",
        "torch.zeros(3)",
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.blocks = [{expr}]\n\n    def forward(self, x):\n"
        "        return x * len(self.blocks)\n\n\nNet()\n",
    ),
    Producer(
        "discarded out-of-place result (TT202)",
        "TT202",
        "torch.randn(3)",
        "Range()",
        "def consume():\n    t = {expr}\n    t.clamp(min=0)\n    return t\n\n\nconsume()\n",
    ),
    Producer(
        "CUDA tensor in a dataset (TT103)",
        "TT103",
        "torch.zeros(3).cuda()",
        "torch.zeros(3)",
        DATASET.replace("{item}", "self.v[i % 3]"),
    ),
]


@dataclass(frozen=True)
class Transport:
    name: str
    main: str  # code in main.py before the consumer; MAKE is the producer
    expr: str  # the expression the consumer reads
    helpers: str = ""  # helpers.py (MAKE allowed)
    package: str = ""  # pkg/impl.py, re-exported by pkg/__init__.py


TRANSPORTS = [
    Transport("local", "", "MAKE"),
    Transport("helper return", "def build():\n    return MAKE\n", "build()"),
    Transport(
        "helper in another file",
        "from helpers import build\n",
        "build()",
        helpers="def build():\n    return MAKE\n",
    ),
    Transport(
        "package re-export",
        "from pkg import build\n",
        "build()",
        package="def build():\n    return MAKE\n",
    ),
    Transport(
        "method return",
        "class Maker:\n    def get(self):\n        return MAKE\n",
        "Maker().get()",
    ),
    Transport(
        "attribute across methods",
        "class Holder:\n    def __init__(self):\n        self.v = MAKE\n\n"
        "    def get(self):\n        return self.v\n",
        "Holder().get()",
    ),
    Transport(
        "owned object in another file",
        "from helpers import Owner\n",
        "Owner().part",
        helpers="class Owner:\n    def __init__(self):\n        self.part = MAKE\n",
    ),
    Transport(
        "base class in another file",
        "from helpers import Base\n\n\nclass Sub(Base):\n    pass\n",
        "Sub().get()",
        helpers="class Base:\n    def __init__(self):\n        self.v = MAKE\n\n"
        "    def get(self):\n        return self.v\n",
    ),
    Transport("parameter", "def pick(v):\n    return v\n", "pick(MAKE)"),
    Transport(
        "module global in another file",
        "from helpers import VALUE\n",
        "VALUE",
        helpers="VALUE = MAKE\n",
    ),
    Transport(
        "factory dict in another file",
        "from helpers import FACTORIES\n",
        'FACTORIES["a"]()',
        helpers='def build():\n    return MAKE\n\n\nFACTORIES = {"a": build}\n',
    ),
    Transport(
        "partial",
        "from functools import partial\n\n\ndef build(k):\n    return MAKE\n",
        "partial(build, 1)()",
    ),
    Transport("lambda", "build = lambda: MAKE  # noqa: E731\n", "build()"),
    Transport("list", "def build():\n    return [MAKE]\n", "build()[0]"),
    Transport("dict", 'def build():\n    return {"v": MAKE}\n', 'build()["v"]'),
    Transport("tuple", "def build():\n    return MAKE, 0\n", "build()[0]"),
]


def write_case(root: Path, producer: Producer, transport: Transport, value: str) -> None:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'case'\n")
    (root / "nets.py").write_text(NETS)
    (root / "helpers.py").write_text(IMPORTS + "\n\n" + transport.helpers.replace("MAKE", value))
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("from .impl import *  # noqa: F403\n")
    (root / "pkg" / "impl.py").write_text(
        IMPORTS
        + "\n\n"
        + (transport.package or "def build():\n    return None\n").replace("MAKE", value)
    )
    main = IMPORTS + "\n\n" + transport.main.replace("MAKE", value) + "\n\n"
    consumer = producer.consumer.replace("{expr}", transport.expr.replace("MAKE", value))
    (root / "main.py").write_text(main + textwrap.dedent(consumer))


def findings(root: Path, code: str) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["check", str(root), "--no-cache", "--format", "json", "--select", code])
    return [f for f in json.loads(out.getvalue())["findings"] if f["code"] == code]
