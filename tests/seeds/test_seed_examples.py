"""The seeds' own example code, verbatim, and the finding each must give.

`code/` holds each snippet of the seed documents as written. Two repairs
only, so that it parses: where a blog pasted a snippet with its first line
flush left and the rest indented, the first line gets back the indentation
of the lines after it and the snippet is dedented; the two-loader loop of
seed 003 section 6 is wrapped in a function, and its `......` placeholder
is written `...`. The snippets assume imports the blog left out; ``HEADER``
names what each one is linted with (the expected lines are the snippet's
own), and the loader snippet of section 6 runs without any import, as
pasted, since `torch.utils.data.DataLoader` spelled out is torch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtrap.config import from_table
from torchtrap.engine import lint

CODE = Path(__file__).resolve().parent / "code"

TORCH = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import Dataset, DataLoader\n"
NUMPY = "import numpy as np\nimport torch.nn as nn\n"
TIME = "import time\n"

# (snippet, header, torch version or None, {(rule, line)} it must give: exactly these)
SEEDS: list[object] = [
    # seed 000: iterating a worker DataLoader pickles its dataset (and what it reaches)
    # `arr.append(loader); arr[0].__iter__()`: a list filled by `append`, read by
    # position, is a flow step of the value layer (server/torchtrap/values/containers.py).
    ("seed000_list_iter.py", TORCH, None, {("TT106", 7)}),
    ("seed000_share_cuda.py", TORCH, None, set()),
    ("seed000_dataset_iter.py", TORCH + TIME, None, {("TT103", 4), ("TT106", 15)}),
    ("seed000_reduce_tensor.py", TORCH, None, set()),
    ("seed000_model_in_list.py", TORCH + TIME, None, {("TT103", 4), ("TT106", 26)}),
    # seed 003: PyTorch pitfalls
    ("seed003_1_clamp.py", TORCH, None, {("TT202", 2)}),
    ("seed003_2_scatter.py", TORCH, None, set()),
    ("seed003_4_grl_hook.py", TORCH + NUMPY, None, {("TT209", 7), ("TT204", 37)}),
    ("seed003_5_narrow.py", TORCH, None, {("TT202", 1)}),
    ("seed003_6_loader.py", "", None, {("TT106", 3)}),
    ("seed003_6_two_loaders.py", TORCH, None, {("TT208", 16), ("TT208", 18)}),
    # seed 004: numpy's global generator in workers (a bug before torch 1.9)
    ("seed004_numpy_random.py", "", "1.8", {("TT102", 6), ("TT106", 13)}),
    ("seed004_numpy_random.py", "", "2.3", {("TT106", 13)}),
]


@pytest.mark.parametrize(
    ("snippet", "header", "torch", "expected"),
    SEEDS,
)
def test_seed_code_gives_its_findings(
    snippet: str, header: str, torch: str | None, expected: set[tuple[str, int]]
) -> None:
    code = (CODE / snippet).read_text(encoding="utf-8")
    config = from_table({"torch-version": torch} if torch else {})
    offset = header.count("\n")
    findings = lint(header + code, snippet, config)
    got = {(f.code, f.range.start.line - offset) for f in findings}
    shown = [f"{f.code}:{f.range.start.line - offset} {f.message}" for f in findings]
    assert got == expected, shown
