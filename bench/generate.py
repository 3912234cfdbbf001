"""Deterministic generator of realistic PyTorch source files for benchmarks.

Each file is a plausible training-repo module: aliased imports, ``nn.Module``
models, ``Dataset`` classes, losses, training and evaluation loops, helpers
and a ``main``. Most of it is correct code, including near misses that look
like the bugs TorchTrap hunts (``x = x.clamp(...)``, ``F.log_softmax``, a
generator re-created in ``worker_init_fn``, ``model.to(device)`` as a
statement). A few chunks plant a real bug; ``generate()`` reports where.

The output depends only on ``(seed, lines)``: same arguments, same bytes,
on any machine and Python version (only ``random.Random`` with an int seed
and explicit string building are used).

    python bench/generate.py --files 200 --lines 1500 --out /tmp/gen
    from generate import generate_file; text = generate_file(seed=3, lines=5000)
"""

# The templates below are the generated code itself, long lines included (as
# real training code has them); wrapping them would distort the output.
# ruff: noqa: E501

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Kinds of planted bug; the rule codes that should catch them are a guess
# kept here only for the bench's sanity line (planted vs found).
BUG_KINDS: dict[str, str] = {
    "stored-rng": "TT101",
    "global-np-random": "TT102",
    "cuda-in-dataset": "TT103",
    "log-softmax": "TT201",
    "discarded-clamp": "TT202",
}

# Chance that one bug-capable chunk plants its bug: low, so that the
# generated corpus is "mostly correct code" like a real repository.
BUG_RATE = 0.12

# fmt: off
_NOUNS = (
    "Res", "Conv", "Patch", "Token", "Pixel", "Spatial", "Channel", "Window", "Cross",
    "Local", "Global", "Dense", "Sparse", "Gated", "Mixer", "Pyramid", "Shift", "Dual",
    "Feature", "Context", "Scale", "Temporal", "Graph", "Depth", "Point", "Mask"
)
_DATA = (
    "Image", "Frame", "Audio", "Caption", "Patch", "Volume", "Scan", "Crop", "Clip",
    "Sequence", "Point", "Tile", "Sample", "Spectrogram", "Landmark", "Mesh"
)
_TASKS = ("cls", "seg", "det", "depth", "pose", "asr", "lm", "recon", "retrieval")
_ACTS = ("nn.ReLU(inplace=True)", "nn.GELU()", "nn.SiLU()", "nn.LeakyReLU(0.1)", "nn.Mish()")
_NORMS = ("nn.BatchNorm2d", "nn.GroupNorm", "nn.InstanceNorm2d")


@dataclass
class Planted:
    kind: str
    line: int  # 1-based line of the buggy statement

    @property
    def code(self) -> str:
        return BUG_KINDS[self.kind]


@dataclass
class GeneratedFile:
    text: str
    planted: list[Planted] = field(default_factory=list)


_SUMMARIES = (
    "Build the module from its config.", "Forward pass.", "Compute the loss for one batch.",
    "Return the features before the classifier.", "Initialise weights as in the reference code.",
    "Load one sample and apply the augmentations.", "Number of samples in the split.",
    "Run one epoch of training.", "Evaluate on the validation split.",
    "Move a batch to the target device.", "Helper for the learning-rate schedule.",
    "Project tokens to queries, keys and values.", "Residual block with pre-normalisation.",
    "Reset the running statistics.", "Serialise the training state.",
)
_SENTENCES = (
    "Follows the reference implementation, with the fused path disabled.",
    "Shapes are (batch, channels, height, width) unless noted otherwise.",
    "The default values match the paper's ImageNet setting.",
    "Kept separate so that subclasses can override it.",
    "Mixed precision is handled by the caller.",
    "This is not thread-safe; create one per process.",
    "See the project README for the expected folder layout.",
    "Statistics are accumulated in float32 even under autocast.",
)
_PARAM_DOCS = (
    "input channels.", "output channels.", "the tensor to transform.", "dropout probability.",
    "number of attention heads.", "target device.", "the model to train.",
    "a batch iterator.", "optimizer wrapping the model's parameters.", "root folder of the data.",
    "which split to read.", "random seed.", "logging interval in steps.", "epoch index.",
    "optional mask, True where tokens are valid.", "stride of the first convolution.",
)
_RETURNS = (
    "The output tensor.", "A dict of metrics.", "The mean loss over the epoch.",
    "The transformed sample and its label.", "None.", "The list of parameter groups.",
)
_COMMENTS = (
    "keep the residual in the input dtype", "see the note in the class docstring",
    "cheaper than a full copy", "matches the reference implementation",
    "TODO: make this configurable", "avoid a host sync here", "shapes: (B, N, C)",
    "guard against an empty batch", "the scheduler steps per iteration, not per epoch",
    "channels-last is faster on recent GPUs", "NOTE: order matters for checkpoints",
)
# fmt: on

_TRIPLE = '"' * 3
_PARAM = re.compile(r"[(,]\s*\*{0,2}([A-Za-z_]\w*)\s*(?=[:=,)])")


class _Writer:
    """Accumulates lines; bug lines are recorded as they are written.

    Also adds what real modules have between the statements, docstrings on
    most defs and classes and an occasional comment, so that the density
    (AST nodes per line, ~5.5 in timm/detectron2/Lightning) is realistic:
    without them a generated file parses twice as slowly per line.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.planted: list[Planted] = []
        self._header: list[str] = []  # a def/class header being read
        self._pending: tuple[int, str, bool] | None = None  # docstring owed: indent, header, is def

    def add(self, block: str, indent: int = 0) -> None:
        pad = " " * indent
        for line in block.split("\n"):
            self._append(pad + line if line else "")

    def bug(self, kind: str, line: str, indent: int) -> None:
        self._before(" " * indent + line)
        self.planted.append(Planted(kind, len(self.lines) + 1))
        self.lines.append(" " * indent + line)

    def blank(self, n: int = 2) -> None:
        self._pending = None  # a header is never followed by a blank line
        self.lines.extend([""] * n)

    def _append(self, line: str) -> None:
        self._before(line)
        self.lines.append(line)
        stripped = line.lstrip()
        if not self._header and stripped.startswith(("def ", "class ", "async def ")):
            self._header = [line]
        elif self._header:
            self._header.append(line)
        if self._header:
            text = "\n".join(self._header)
            if text.count("(") == text.count(")") and line.rstrip().endswith(":"):
                head = self._header[0]
                indent = len(head) - len(head.lstrip()) + 4
                self._pending = (indent, text, not head.lstrip().startswith("class"))
                self._header = []

    def _before(self, line: str) -> None:
        """Writes the docstring owed by the header just written, or a comment."""
        stripped = line.lstrip()
        if self._pending is not None:
            indent, header, is_def = self._pending
            self._pending = None
            if not stripped.startswith(_TRIPLE) and self.rng.random() < 0.9:
                self.lines.extend(self._docstring(indent, header, is_def))
            return
        indent = len(line) - len(stripped)
        code = stripped and not stripped.startswith((")", "]", "}", "@", "#", '"'))
        if code and indent >= 8:
            roll = self.rng.random()
            if roll < 0.08:
                self.lines.append(" " * indent + "# " + self.rng.choice(_COMMENTS))
            elif roll < 0.12:
                self.lines.append("")  # a paragraph break inside a body

    def _docstring(self, indent: int, header: str, is_def: bool) -> list[str]:
        r, pad = self.rng, " " * indent
        summary = r.choice(_SUMMARIES)
        if r.random() < 0.25:
            return [f"{pad}{_TRIPLE}{summary}{_TRIPLE}"]
        out = [f"{pad}{_TRIPLE}{summary}", ""]
        out += [pad + line for line in r.sample(_SENTENCES, r.randint(1, 3))]
        params = [p for p in _PARAM.findall(header) if p not in ("self", "cls")]
        if is_def and params:
            out += ["", pad + "Args:"]
            out += [f"{pad}    {p}: {r.choice(_PARAM_DOCS)}" for p in params]
        if is_def and r.random() < 0.6:
            out += ["", pad + "Returns:", pad + "    " + r.choice(_RETURNS)]
        return [*out, pad + _TRIPLE]


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.used: set[str] = set()
        self.models: list[str] = []
        self.datasets: list[tuple[str, str]] = []  # (class name, rng/tensor style)
        self.losses: list[str] = []

    # -- names ---------------------------------------------------------------
    def name(self, parts: tuple[str, ...], suffix: tuple[str, ...]) -> str:
        for _ in range(20):
            candidate = self.rng.choice(parts) + self.rng.choice(parts) + self.rng.choice(suffix)
            if candidate not in self.used:
                break
        else:  # pools exhausted: number it
            candidate = f"{candidate}{len(self.used)}"
        self.used.add(candidate)
        return candidate

    def snake(self, camel: str) -> str:
        out = [c if c.islower() or c.isdigit() else "_" + c.lower() for c in camel]
        return "".join(out).lstrip("_")

    def chance(self, p: float = BUG_RATE) -> bool:
        return self.rng.random() < p

    # -- chunks --------------------------------------------------------------
    def header(self, w: _Writer) -> None:
        r = self.rng
        task = r.choice(_TASKS)
        w.add(f'"""{task.upper()} training components (generated benchmark module {self.seed})."""')
        w.add("")
        if r.random() < 0.6:
            w.add("from __future__ import annotations\n")
        std = ["import argparse", "import logging", "import math", "import os", "import random"]
        std += ["import time"] + r.sample(["import json", "import copy", "import functools"], 2)
        std.append("from dataclasses import dataclass, field")
        std.append("from pathlib import Path")
        w.add("\n".join(sorted(std, key=lambda imp: imp.split()[1])))
        w.add("")
        w.add("import numpy as np")
        w.add("import torch")
        if r.random() < 0.5:
            w.add("import torch.nn as nn\nimport torch.nn.functional as F")
        else:
            w.add("from torch import nn\nfrom torch.nn import functional as F")
        w.add("from torch.utils.data import DataLoader, Dataset")
        if r.random() < 0.4:
            w.add("from torch.utils.data import get_worker_info")
        else:
            w.add("import torch.utils.data as tud")
        if r.random() < 0.5:
            w.add("from torch.cuda.amp import GradScaler, autocast")
        w.add("")
        w.add("logger = logging.getLogger(__name__)")
        w.add(f"EPS = {r.choice(('1e-6', '1e-8', '1e-5'))}")
        w.blank()
        w.add('''def _seed_worker(worker_id: int) -> None:
    """worker_init_fn: re-create a dataset's stored generator in each worker."""
    info = torch.utils.data.get_worker_info()
    if info is not None and hasattr(info.dataset, "rng"):
        info.dataset.rng = np.random.default_rng(info.seed % 2**32)''')
        w.blank()

    def config(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Config", "Settings", "Options"))
        w.add(f"""@dataclass
class {name}:
    data_root: str = "data/{r.choice(_TASKS)}"
    image_size: int = {r.choice((128, 224, 256, 384))}
    num_classes: int = {r.choice((10, 100, 1000, 21, 80))}
    batch_size: int = {r.choice((16, 32, 64, 128))}
    num_workers: int = {r.choice((2, 4, 8))}
    lr: float = {r.choice(("1e-3", "3e-4", "5e-4", "0.1"))}
    weight_decay: float = {r.choice(("0.05", "1e-4", "0.0"))}
    epochs: int = {r.choice((10, 90, 300))}
    warmup_epochs: int = {r.choice((0, 5, 20))}
    amp: bool = {r.choice(("True", "False"))}
    seed: int = {r.randint(0, 9999)}
    milestones: list[int] = field(default_factory=lambda: [{r.randint(20, 40)}, {r.randint(50, 80)}])

    def to_dict(self) -> dict:
        return dict(self.__dict__)""")
        w.blank()

    def conv_block(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Block", "Layer", "Unit"))
        self.models.append(name)
        norm = r.choice(_NORMS)
        norm_call = "nn.GroupNorm(8, out_ch)" if norm == "nn.GroupNorm" else f"{norm}(out_ch)"
        k = r.choice((3, 5, 7))
        w.add(f"""class {name}(nn.Module):
    \"\"\"Conv-norm-act with an optional residual path.\"\"\"

    def __init__(self, in_ch: int, out_ch: int, stride: int = 1, drop: float = {r.choice(("0.0", "0.1"))}):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, {k}, stride=stride, padding={k // 2}, bias=False)
        self.norm1 = {norm_call}
        self.act = {r.choice(_ACTS)}
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.norm2 = {norm_call}
        self.drop = nn.Dropout2d(drop) if drop > 0 else nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                {norm_call},
            )
        else:
            self.shortcut = nn.Identity()""")
        extra = r.randint(0, 3)
        for i in range(extra):
            w.add(f"        self.extra{i} = nn.Conv2d(out_ch, out_ch, 1)")
        w.add("""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = self.shortcut(x)
        x = self.act(self.norm1(self.conv1(x)))
        x = self.drop(x)
        x = self.norm2(self.conv2(x))""")
        for i in range(extra):
            w.add(f"        x = x + self.extra{i}(x)")
        if r.random() < 0.3:
            # Near miss: the result is assigned, so this clamp is fine.
            w.add(f"        x = x.clamp(min=-{r.choice((6, 10, 20))}.0, max={r.choice((6, 10))}.0)")
        w.add("        return self.act(x + shortcut)")
        w.blank()

    def attention(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Attention", "SelfAttention", "Mixer"))
        self.models.append(name)
        w.add(f"""class {name}(nn.Module):
    def __init__(self, dim: int, num_heads: int = {r.choice((4, 8, 12, 16))}, qkv_bias: bool = {r.choice(("True", "False"))},
                 attn_drop: float = 0.0, proj_drop: float = 0.0):
        super().__init__()
        assert dim % num_heads == 0, "dim should be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.register_buffer("rel_bias", torch.zeros(num_heads, 1, 1), persistent=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale + self.rel_bias
        if mask is not None:
            attn = attn.masked_fill(~mask[:, None, None, :], float("-inf"))""")
        if r.random() < 0.5:
            w.add("        attn = attn.softmax(dim=-1)")
        else:
            w.add("        attn = F.softmax(attn, dim=-1)")
        w.add("""        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        return self.proj_drop(x)""")
        w.blank()

    def mlp(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Mlp", "FeedForward", "Projector"))
        self.models.append(name)
        depth = r.randint(2, 5)
        w.add(f"""class {name}(nn.Module):
    def __init__(self, in_features: int, hidden: int = {r.choice((256, 512, 1024, 2048))}, out_features: int | None = None):
        super().__init__()
        out_features = out_features or in_features
        layers: list[nn.Module] = []
        dims = [in_features] + [hidden] * {depth - 1} + [out_features]
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(nn.LayerNorm(b))
                layers.append({r.choice(_ACTS)})
        self.net = nn.Sequential(*layers)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)""")
        w.blank()

    def backbone(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Net", "Former", "Backbone", "Model"))
        block = r.choice(self.models) if self.models else "nn.Identity"
        stages = r.randint(2, 5)
        widths = [r.choice((32, 48, 64)) * (2**i) for i in range(stages)]
        w.add(f"""class {name}(nn.Module):
    \"\"\"{stages}-stage backbone with a linear classifier.\"\"\"

    def __init__(self, num_classes: int = 1000, widths: tuple[int, ...] = {tuple(widths)}, drop_rate: float = 0.0):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            {r.choice(_ACTS)},
        )
        self.stages = nn.ModuleList()
        in_ch = widths[0]
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2""")
        if block in self.models and "Attention" not in block and "Mlp" not in block:
            w.add(f"            self.stages.append({block}(in_ch, width, stride=stride))")
        else:
            w.add("""            self.stages.append(nn.Sequential(
                nn.Conv2d(in_ch, width, 3, stride=stride, padding=1),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
            ))""")
        w.add("""            in_ch = width
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(in_ch, num_classes)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = []
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.forward_features(x)[-1]
        x = self.pool(x).flatten(1)
        return self.head(self.drop(x))""")
        self.models.append(name)
        w.blank()

    def dataset(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_DATA, ("Dataset", "Folder", "Set"))
        style = r.choice(("stored", "global", "worker", "plain", "plain", "cuda"))
        bug = self.chance()
        if style == "global" and not bug:
            style = "plain"
        if style == "cuda" and not bug:
            style = "cpu"
        self.datasets.append((name, style))
        w.add(f"""class {name}(Dataset):
    \"\"\"Reads pre-processed samples from ``root`` ({style} augmentation state).\"\"\"

    def __init__(self, root: str, split: str = "train", size: int = {r.choice((128, 224, 256))}, seed: int = {r.randint(0, 999)}):
        self.root = Path(root)
        self.split = split
        self.size = size
        self.files = sorted(self.root.glob(f"{{split}}/*.npy"))
        self.labels = [int(p.stem.split("_")[-1]) for p in self.files]""")
        if style == "stored":
            if bug:
                w.bug("stored-rng", "        self.rng = np.random.default_rng(seed)", 0)
            else:
                # Near miss: created lazily inside the worker, one per process.
                w.add("        self.rng = None")
                w.add("        self.seed = seed")
        elif style == "worker":
            w.add("        self.rng = np.random.default_rng(seed)  # re-seeded by seed_worker")
        elif style == "cuda":
            w.bug(
                "cuda-in-dataset",
                f"        self.mean = torch.tensor({[round(r.random(), 3) for _ in range(3)]}).cuda()",
                0,
            )
        else:
            w.add(f"        self.mean = torch.tensor({[round(r.random(), 3) for _ in range(3)]})")
        w.add("""
    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        arr = np.load(self.files[index]).astype(np.float32)
        img = torch.from_numpy(arr).permute(2, 0, 1)""")
        if style == "stored" and not bug:
            w.add("""        if self.rng is None:
            info = torch.utils.data.get_worker_info()
            self.rng = np.random.default_rng(self.seed + (info.id if info else 0))""")
        if style in ("stored", "worker"):
            w.add("""        if self.rng.random() < 0.5:
            img = img.flip(-1)
        top = int(self.rng.integers(0, max(1, img.shape[1] - self.size)))""")
        elif style == "global":
            w.bug("global-np-random", "        if np.random.rand() < 0.5:", 0)
            w.add("            img = img.flip(-1)")
            w.bug(
                "global-np-random",
                "        top = np.random.randint(0, max(1, img.shape[1] - self.size))",
                0,
            )
        else:
            w.add("""        if torch.rand(()) < 0.5:
            img = img.flip(-1)
        top = int(torch.randint(0, max(1, img.shape[1] - self.size), ()))""")
        w.add("        img = img[:, top:top + self.size, :self.size]")
        if style in ("cuda", "cpu", "plain"):
            w.add("        img = img - self.mean.view(3, 1, 1)" if style != "plain" else "")
        w.add("        return img, self.labels[index]")
        w.blank()

    def loss(self, w: _Writer) -> None:
        r = self.rng
        name = self.name(_NOUNS, ("Loss", "Criterion"))
        self.losses.append(name)
        gamma = r.choice(("2.0", "1.5", "0.5"))
        w.add(f"""class {name}(nn.Module):
    \"\"\"Focal-style classification loss.\"\"\"

    def __init__(self, gamma: float = {gamma}, label_smoothing: float = {r.choice(("0.0", "0.1"))}, reduction: str = "mean"):
        super().__init__()
        self.gamma = gamma
        self.label_smoothing = label_smoothing
        self.reduction = reduction

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        num_classes = logits.shape[-1]
        target_oh = F.one_hot(target, num_classes).float()
        if self.label_smoothing > 0:
            target_oh = target_oh * (1 - self.label_smoothing) + self.label_smoothing / num_classes""")
        variant = r.randrange(4)
        if variant == 0 and self.chance(0.15):
            w.bug("log-softmax", "        log_prob = torch.log(torch.softmax(logits, dim=-1))", 0)
            w.add("        prob = log_prob.exp()")
        elif variant == 1 and self.chance(0.15):
            w.add("        prob = F.softmax(logits, dim=-1)")
            w.bug("discarded-clamp", "        prob.clamp(min=1e-4, max=1.0)", 0)
            # The clamp above is lost, so this is a log of a raw softmax too.
            w.bug("log-softmax", "        log_prob = torch.log(prob)", 0)
        elif variant == 2:
            # Near miss: clamped before the log, result kept.
            w.add("        prob = logits.softmax(dim=-1).clamp(min=EPS)")
            w.add("        log_prob = prob.log()")
        else:
            w.add("        log_prob = F.log_softmax(logits, dim=-1)")
            w.add("        prob = log_prob.exp()")
        w.add("""        loss = -(target_oh * (1 - prob) ** self.gamma * log_prob).sum(dim=-1)
        if self.reduction == "mean":
            return loss.mean()
        if self.reduction == "sum":
            return loss.sum()
        return loss""")
        w.blank()

    def helpers(self, w: _Writer) -> None:
        r = self.rng
        choice = r.randrange(5)
        if choice == 0:
            name = self.name(_NOUNS, ("Meter", "Tracker"))
            w.add(f"""class {name}:
    \"\"\"Running average of a scalar.\"\"\"

    def __init__(self, name: str, fmt: str = ":f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self) -> None:
        self.val = 0.0
        self.avg = 0.0
        self.sum = 0.0
        self.count = 0

    def update(self, val: float, n: int = 1) -> None:
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / max(self.count, 1)

    def __str__(self) -> str:
        return f"{{self.name}} {{self.val:.4f}} ({{self.avg:.4f}})\"""")
        elif choice == 1:
            fn = f"seed_worker_{len(self.used)}"
            self.used.add(fn)
            w.add(f"""def {fn}(worker_id: int) -> None:
    \"\"\"Give every worker its own streams (stored generators included).\"\"\"
    info = torch.utils.data.get_worker_info()
    seed = info.seed % 2**32
    np.random.seed(seed)
    random.seed(seed)
    if hasattr(info.dataset, "rng"):
        info.dataset.rng = np.random.default_rng(seed)""")
        elif choice == 2:
            fn = f"cosine_lr_{len(self.used)}"
            self.used.add(fn)
            w.add(f"""def {fn}(step: int, total: int, base_lr: float, warmup: int = {r.choice((0, 500, 1000))}, min_lr: float = 1e-6) -> float:
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * progress))""")
        elif choice == 3:
            fn = f"save_checkpoint_{len(self.used)}"
            self.used.add(fn)
            w.add(f"""def {fn}(model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int, path: str | os.PathLike) -> None:
    state = {{
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }}
    tmp = Path(path).with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    logger.info("saved checkpoint for epoch %d to %s", epoch, path)""")
        else:
            fn = f"param_groups_{len(self.used)}"
            self.used.add(fn)
            w.add(f"""def {fn}(model: nn.Module, weight_decay: float = 0.05) -> list[dict]:
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {{"params": no_decay, "weight_decay": 0.0}},
        {{"params": decay, "weight_decay": weight_decay}},
    ]""")
        w.blank()

    def train_loop(self, w: _Writer) -> None:
        r = self.rng
        fn = f"train_one_epoch_{len(self.used)}"
        self.used.add(fn)
        clip = r.choice(("1.0", "5.0", "None"))
        w.add(f"""def {fn}(model: nn.Module, loader: DataLoader, criterion: nn.Module,
        optimizer: torch.optim.Optimizer, device: torch.device, epoch: int,
        scaler: torch.cuda.amp.GradScaler | None = None, log_every: int = {r.choice((10, 50, 100))}) -> float:
    model.train()
    model.to(device)
    total_loss, seen = 0.0, 0
    start = time.perf_counter()
    for step, (images, targets) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, enabled=scaler is not None):
            logits = model(images)
            loss = criterion(logits, targets)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)""")
        if clip != "None":
            w.add(f"            torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})")
        w.add("""            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        total_loss += loss.item() * images.size(0)
        seen += images.size(0)
        if step % log_every == 0:
            elapsed = time.perf_counter() - start
            logger.info("epoch %d step %d loss %.4f (%.1f img/s)", epoch, step, loss.item(), seen / elapsed)
    return total_loss / max(seen, 1)""")
        w.blank()

    def eval_loop(self, w: _Writer) -> None:
        fn = f"evaluate_{len(self.used)}"
        self.used.add(fn)
        w.add(f"""@torch.no_grad()
def {fn}(model: nn.Module, loader: DataLoader, device: torch.device, topk: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    model.eval()
    correct = {{k: 0 for k in topk}}
    total = 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        logits = model(images)
        probs = torch.softmax(logits, dim=-1)
        _, pred = probs.topk(max(topk), dim=1)
        hits = pred.eq(targets.view(-1, 1))
        for k in topk:
            correct[k] += hits[:, :k].any(dim=1).sum().item()
        total += targets.size(0)
    # Divided by samples, not len(loader) (= batches).
    return {{f"top{{k}}": 100.0 * correct[k] / max(total, 1) for k in topk}}""")
        w.blank()

    def loaders(self, w: _Writer) -> None:
        """DataLoaders with workers over this module's datasets: what makes a
        stored generator or a CUDA tensor in a Dataset a real bug."""
        r = self.rng
        fn = f"build_loaders_{len(self.used)}"
        self.used.add(fn)
        w.add(
            f"def {fn}(root: str, batch_size: int = 64, workers: int = {r.choice((2, 4, 8))}) -> dict[str, DataLoader]:"
        )
        w.add("    loaders = {}")
        for name, style in self.datasets[-3:]:
            var = self.snake(name)
            init = "\n        worker_init_fn=_seed_worker," if style == "worker" else ""
            w.add(f"""    {var} = {name}(root, split="train")
    loaders["{var}"] = DataLoader(
        {var},
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        pin_memory=True,
        drop_last=True,
        persistent_workers=workers > 0,{init}
    )""")
        w.add("    return loaders")
        w.blank()

    def main(self, w: _Writer) -> None:
        r = self.rng
        model = next((m for m in reversed(self.models) if "Net" in m or "Model" in m), None)
        model_expr = f"{model}(num_classes=args.num_classes)" if model else "nn.Linear(10, 10)"
        loss = f"{self.losses[-1]}()" if self.losses else "nn.CrossEntropyLoss()"
        ds, style = self.datasets[-1] if self.datasets else (None, "")
        init = ", worker_init_fn=_seed_worker" if style == "worker" else ""
        w.add(f"""def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="data")
    parser.add_argument("--epochs", type=int, default={r.choice((10, 90, 300))})
    parser.add_argument("--lr", type=float, default={r.choice(("0.1", "1e-3", "3e-4"))})
    parser.add_argument("--batch-size", type=int, default={r.choice((32, 64, 256))})
    parser.add_argument("--workers", type=int, default={r.choice((4, 8, 16))})
    parser.add_argument("--num-classes", type=int, default={r.choice((10, 100, 1000))})
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = {model_expr}
    model.to(device)
    criterion = {loss}
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)""")
        if ds:
            w.add(f"""    g = torch.Generator()
    g.manual_seed(0)
    train_loader = DataLoader({ds}(args.data), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers, generator=g{init})""")
        else:
            w.add("    train_loader = DataLoader(list(range(10)), batch_size=args.batch_size)")
        w.add("""    for epoch in range(args.epochs):
        model.train()
        for images, targets in train_loader:
            images, targets = images.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = criterion(model(images), targets)
            loss.backward()
            optimizer.step()
        scheduler.step()
        logger.info("epoch %d done, lr %.2e", epoch, scheduler.get_last_lr()[0])


if __name__ == "__main__":
    main()""")


def generate(seed: int, lines: int = 1500) -> GeneratedFile:
    """A module of about ``lines`` lines (never fewer; overshoots by at most
    one chunk, ~60 lines) and the bugs planted in it."""
    gen = _Gen(seed)
    w = _Writer(gen.rng)
    gen.header(w)
    gen.config(w)
    chunks: list[tuple[Callable[[_Writer], None], float]] = [
        (gen.conv_block, 3),
        (gen.attention, 2),
        (gen.mlp, 2),
        (gen.backbone, 1.5),
        (gen.dataset, 2),
        (gen.loss, 2),
        (gen.helpers, 3),
        (gen.train_loop, 1),
        (gen.eval_loop, 1),
    ]
    funcs = [c for c, _ in chunks]
    weights = [wt for _, wt in chunks]
    tail = 45  # main() is about this long
    since_loader = 0
    while len(w.lines) < lines - tail:
        chunk = gen.rng.choices(funcs, weights)[0]
        chunk(w)
        if chunk == gen.dataset:
            since_loader += 1
            # Datasets are used by a DataLoader with workers nearby, as in a real repo.
            if since_loader >= 2 or gen.rng.random() < 0.5:
                gen.loaders(w)
                since_loader = 0
    if since_loader:
        gen.loaders(w)
    gen.main(w)
    # Pad with a helper if main() came in under the target (tiny targets).
    while len(w.lines) < lines:
        w.blank(1)
        gen.helpers(w)
    return GeneratedFile("\n".join(w.lines).rstrip("\n") + "\n", w.planted)


def generate_file(seed: int, lines: int = 1500) -> str:
    """Source text of one generated module; deterministic in (seed, lines)."""
    return generate(seed, lines).text


def write_corpus(out: Path, files: int, lines: int, seed: int = 0) -> list[Path]:
    """``files`` modules named gen_0000.py ... under ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(files):
        path = out / f"gen_{i:04d}.py"
        path.write_text(generate_file(seed * 1_000_003 + i, lines), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate realistic PyTorch modules.")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=1500, help="target lines per file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    paths = write_corpus(args.out, args.files, args.lines, args.seed)
    total = sum(p.read_text(encoding="utf-8").count("\n") for p in paths)
    print(f"wrote {len(paths)} files, {total} lines to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
