"""Issue 33: the worker count as a value (argparse defaults, config files
read by a literal path, Hydra, ``os.cpu_count()``, ``min``/``max``), the
loaders frameworks build (Lightning hooks, the Hugging Face ``Trainer``,
Accelerate's ``prepare``), and TT101 on the payload only for a generator
drawn in the code the workers run. Each case has a near-miss twin that
differs in one place and stays silent."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.interproc.helpers import analyse_project
from torchtrap import cli
from torchtrap.core.objects import ExtCallObj
from torchtrap.core.payload import loaders

AUG = """\
import numpy as np


class RandomFlip:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __call__(self, x):
        return x[::-1] if {draw} else x

    def describe(self):
        return self.rng.random()
"""
PAIRS = """\
from torch.utils.data import Dataset

from aug import RandomFlip


class Pairs(Dataset):
    def __init__(self):
        self.aug = RandomFlip()

    def __getitem__(self, i):
        return self.aug([i, i + 1])

    def __len__(self):
        return 8
"""
DRAWS = "self.rng.random() < 0.5"  # __call__ draws; "len(x) > 1": only describe() draws


def _check(tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str], *more: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", *more])
    report = json.loads(capsys.readouterr().out)
    return [(Path(f["path"]).name, f["range"]["start"]["line"], f) for f in report["findings"]]


def _tt101(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str]):
    """The DataLoaders' TT101 findings. The generator is also reported where
    it is made, in ``aug.py`` (``test_worker_payload_round4.py``), with the
    same count: checked here once, and left out of what these tests read."""
    files = {"aug.py": AUG.format(draw=DRAWS), "pairs.py": PAIRS, **files}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    made = [f for name, _, f in found if name == "aug.py"]
    loaders = [(name, line, f) for name, line, f in found if name != "aug.py"]
    assert bool(made) is bool(loaders), found
    return loaders


ARGPARSE = """\
import argparse

from torch.utils.data import DataLoader

from pairs import Pairs

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default={n})
    args = parser.parse_args()
    loader = DataLoader(Pairs(), num_workers=args.workers)
"""


@pytest.mark.parametrize(("n", "expected"), [(8, True), (0, False)])
def test_an_argparse_default_is_the_count_and_the_finding_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int, expected: bool
) -> None:
    found = _tt101(tmp_path, capsys, {"train.py": ARGPARSE.format(n=n)})
    assert bool(found) is expected, found
    if expected:
        ((name, line, finding),) = found
        assert (name, line) == ("train.py", 11)
        assert finding["severity"] == "error"
        assert finding["message"].startswith(
            "num_workers=8 (args.workers, default at train.py:9): "
            "every worker gets the same generator"
        )


READS = {
    "yaml": (
        "cfg.yaml",
        "data:\n  batch: 4\n  num_workers: {n}\n",
        "import yaml\ncfg = yaml.safe_load(open('cfg.yaml'))\nW = cfg['data']['num_workers']\n",
        "cfg.yaml:3",
    ),
    "json": (
        "cfg.json",
        '{{"data": {{\n  "num_workers": {n}\n}}}}\n',
        "import json\nwith open('cfg.json') as f:\n    cfg = json.load(f)\n"
        "W = cfg['data']['num_workers']\n",
        "cfg.json:2",
    ),
    "toml": (
        "cfg.toml",
        "[data]\nnum_workers = {n}\n",
        "import tomllib\ncfg = tomllib.load(open('cfg.toml', 'rb'))\n"
        "W = cfg['data']['num_workers']\n",
        "cfg.toml:2",
    ),
    "omegaconf": (
        "configs/train.yaml",
        "data:\n  num_workers: {n}\n",
        "from omegaconf import OmegaConf\ncfg = OmegaConf.load('configs/train.yaml')\n"
        "W = cfg.data.num_workers\n",
        "train.yaml:2",
    ),
}
LOADER = """\
from torch.utils.data import DataLoader

from pairs import Pairs

{read}
loader = DataLoader(Pairs(), num_workers=W)
"""


@pytest.mark.parametrize("fmt", sorted(READS))
@pytest.mark.parametrize(("n", "expected"), [(6, True), (0, False)])
def test_a_count_read_from_a_config_file_by_a_literal_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, n: int, expected: bool
) -> None:
    name, config, read, origin = READS[fmt]
    files = {name: config.format(n=n), "train.py": LOADER.format(read=read)}
    found = _tt101(tmp_path, capsys, files)
    assert bool(found) is expected, found
    if expected:
        assert f"num_workers=6 (W, {origin})" in found[0][2]["message"]


HYDRA = """\
import hydra
from torch.utils.data import DataLoader

from pairs import Pairs


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg):
    return DataLoader(Pairs(), num_workers=cfg.data.num_workers)
"""


@pytest.mark.parametrize(("n", "expected"), [(7, True), (0, False)])
def test_hydra_main_reads_its_config_and_the_defaults_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int, expected: bool
) -> None:
    files = {
        "conf/config.yaml": "defaults:\n  - data: big\n  - _self_\n\nseed: 1\n",
        "conf/data/big.yaml": f"batch: 2\nnum_workers: {n}\n",
        "train.py": HYDRA,
    }
    found = _tt101(tmp_path, capsys, files)
    assert bool(found) is expected, found
    if expected:
        assert "num_workers=7 (cfg.data.num_workers, big.yaml:2)" in found[0][2]["message"]


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        ("min(8, os.cpu_count())", "num_workers > 0 (min(8, os.cpu_count())): every worker"),
        ("max(2, os.cpu_count() // 2)", "num_workers > 0 (max(2, os.cpu_count() // 2))"),
        ("multiprocessing.cpu_count()", "num_workers > 0 (multiprocessing.cpu_count())"),
        ("n_cpu", "num_workers > 0 (n_cpu, os.cpu_count() at train.py:7)"),
        ("min(0, os.cpu_count())", None),
        ("min(4, 0)", None),
        ("max(4, 0)", "num_workers=4 (max(4, 0))"),
    ],
)
def test_cpu_count_and_min_max(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str, expected: str | None
) -> None:
    source = LOADER.format(
        read="import multiprocessing\nimport os\nn_cpu = os.cpu_count()"
    ).replace("num_workers=W", f"num_workers={count}")
    found = _tt101(tmp_path, capsys, {"train.py": source})
    if expected is None:
        assert found == []
    else:
        assert expected in found[0][2]["message"], found


def test_an_unknown_count_is_a_warning_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = LOADER.format(read="import os\nW = int(os.environ['WORKERS'])")
    ((_, _, finding),) = _tt101(tmp_path, capsys, {"train.py": source})
    assert finding["severity"] == "warning"
    assert finding["message"].startswith("num_workers=W (unknown here, may be > 0)")


LIGHTNING = """\
import pytorch_lightning as pl
from torch.utils.data import DataLoader

from pairs import Pairs


class Data(pl.LightningDataModule):
    def __init__(self, workers=0):
        super().__init__()
        self.workers = workers

    def setup(self, stage=None):
        self.train_set = Pairs()

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=2, num_workers=self.workers)


def main(trainer, model):
    trainer.fit(model, datamodule=Data({args}))
"""


@pytest.mark.parametrize(("args", "expected"), [("workers=4", True), ("", False)])
def test_a_lightning_datamodule_s_train_dataloader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: str, expected: bool
) -> None:
    found = _tt101(tmp_path, capsys, {"data.py": LIGHTNING.format(args=args)})
    assert [(name, line) for name, line, _ in found] == ([("data.py", 16)] if expected else [])


HF = """\
from transformers import Trainer, TrainingArguments

from pairs import Pairs


def main(model):
    args = TrainingArguments("out"{extra})
    return Trainer(model=model, args=args, train_dataset=Pairs())
"""


@pytest.mark.parametrize(("extra", "expected"), [(", dataloader_num_workers=4", True), ("", False)])
def test_a_hugging_face_trainer_s_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, expected: bool
) -> None:
    found = _tt101(tmp_path, capsys, {"hf.py": HF.format(extra=extra)})
    assert [(name, line) for name, line, _ in found] == ([("hf.py", 8)] if expected else [])
    if expected:
        assert found[0][2]["message"].startswith("num_workers=4 (dataloader_num_workers)")


def test_accelerate_prepare_keeps_the_loader(tmp_path: Path) -> None:
    source = """\
        from accelerate import Accelerator
        from torch.utils.data import DataLoader

        acc = Accelerator()
        loader = DataLoader([1, 2], num_workers=2)
        model, loader2 = acc.prepare(object(), loader)
        loader3 = acc.prepare(loader)
        other = acc.gather(loader)
    """
    analysis = analyse_project(tmp_path, {"m.py": source})
    (made,) = [lo.obj for lo in loaders(analysis)]
    module = analysis.solver.program.modules["m"]

    def held(name: str) -> set[object]:
        node = analysis.solver.keyed[("g", module.obj.name, name)]
        return set(analysis.solver.pts[node])

    assert made in held("loader2")
    assert made in held("loader3")
    assert made not in held("other")  # another method: a new value
    assert all(isinstance(o, ExtCallObj) for o in held("loader3"))


TRANSFORM = """\
import numpy as np

RNG = np.random.default_rng(0)


def jitter(x, rng):
    return x + rng.normal()


def identity(x, rng):
    return x
"""
HOLDER = """\
from torch.utils.data import DataLoader, Dataset

from transform import RNG, {fn}


class Jittered(Dataset):
    def __init__(self):
        self.rng = RNG

    def __getitem__(self, i):
        return {fn}(i, self.rng)

    def __len__(self):
        return 8


loader = DataLoader(Jittered(), num_workers=2)
"""


@pytest.mark.parametrize(("fn", "expected"), [("jitter", True), ("identity", False)])
def test_tt101_needs_a_draw_in_the_code_the_workers_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fn: str, expected: bool
) -> None:
    files = {"transform.py": TRANSFORM, "data.py": HOLDER.format(fn=fn)}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    # at the DataLoader, and where the generator is made (another file)
    expect = [("data.py", 17), ("transform.py", 3)] if expected else []
    assert sorted((name, line) for name, line, _ in found) == expect


@pytest.mark.parametrize(("draw", "expected"), [(DRAWS, True), ("len(x) > 1", False)])
def test_tt101_a_generator_drawn_only_outside_the_workers_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], draw: str, expected: bool
) -> None:
    files = {
        "aug.py": AUG.format(draw=draw),
        "pairs.py": PAIRS,
        "train.py": LOADER.format(read="W = 4"),
    }
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert bool(found) is expected, found


AUGMENT = """\
import numpy as np


def jitter(x):
    return x + np.random.rand()


def shift(x):
    return x + 1
"""
JITTERED = """\
import numpy as np
from torch.utils.data import Dataset

from augment import {fn}


class Jittered(Dataset):
    def __getitem__(self, i):
        {seed}return {fn}(i)

    def __len__(self):
        return 8
"""
TRAIN = """\
from torch.utils.data import DataLoader

from jittered import Jittered

loader = DataLoader(Jittered(), num_workers=4)
"""


@pytest.mark.parametrize(
    ("fn", "seed", "expected"),
    [
        ("jitter", "", True),
        ("shift", "", False),  # the transform draws nothing
        ("jitter", "np.random.seed(i)\n        ", False),  # re-seeded in the worker
    ],
)
def test_tt102_a_global_numpy_draw_in_a_transform_in_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fn: str, seed: str, expected: bool
) -> None:
    files = {
        "augment.py": AUGMENT,
        "jittered.py": JITTERED.format(fn=fn, seed=seed),
        "train.py": TRAIN,
    }
    more = ("--select", "TT102", "--torch-version", "1.8")
    found = _check(tmp_path, files, capsys, *more)
    assert [(name, line) for name, line, _ in found] == ([("train.py", 5)] if expected else [])
    if expected:
        finding = found[0][2]
        assert finding["message"] == (
            "num_workers=4: workers draw the same numbers from `np.random.rand` (augment.py:5) "
            "on torch 1.8"
        )
        assert finding["severity"] == "error"
    # torch >= 1.9 seeds numpy in each worker
    assert _check(tmp_path, files, capsys, "--select", "TT102", "--torch-version", "1.9") == []


LAZY = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset

from aug import RandomFlip


class Lazy(Dataset):
    def __init__(self):
        self.aug = RandomFlip()

    def __getitem__(self, i):
        {lazy}return self.aug([i])

    def __len__(self):
        return 8


loader = DataLoader(Lazy(), num_workers=2)
"""


@pytest.mark.parametrize(
    ("lazy", "expected"),
    [("", True), ("self.aug.rng = np.random.default_rng()\n        ", False)],
)
def test_tt101_a_generator_made_again_in_the_worker_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lazy: str, expected: bool
) -> None:
    files = {"aug.py": AUG.format(draw=DRAWS), "lazy.py": LAZY.format(lazy=lazy)}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert bool(found) is expected, found
