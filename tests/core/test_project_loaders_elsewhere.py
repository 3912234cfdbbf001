"""A Dataset whose every visible DataLoader has no workers stays silent even
when some other file has a DataLoader with workers over a dataset the index
cannot trace, unless that file could build the Dataset itself (it imports
the class or its module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli

DATASETS = """\
import numpy as np
import torch


class Embeddings(torch.utils.data.Dataset):
    def __init__(self, ids):
        self.ids = ids

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return np.random.choice(self.ids)
"""
TRAIN = """\
from torch.utils.data import DataLoader

from pkg.datasets import Embeddings


def fit(ids):
    return DataLoader(Embeddings(ids), batch_size=8, num_workers=0)
"""
# A DataLoader with workers over a parameter: nothing says what it gets.
AUDIO = """\
import torch

import pkg


def balanced(dataset, workers):
    return torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=workers)
"""


def _tt102(tmp_path: Path, audio: str, capsys: pytest.CaptureFixture[str]) -> list[int]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "datasets.py").write_text(DATASETS)
    (pkg / "train.py").write_text(TRAIN)
    (pkg / "audio.py").write_text(audio)
    argv = ["check", "--no-cache", "--format", "json", "--torch-version", "1.8"]
    cli.main([*argv, "--select", "TT102", str(tmp_path)])
    found = json.loads(capsys.readouterr().out)["findings"]
    return [f["range"]["start"]["line"] for f in found if f["path"].endswith("datasets.py")]


def test_an_untraced_loader_in_a_file_that_cannot_name_the_class_is_no_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tt102(tmp_path, AUDIO, capsys) == []


def test_an_untraced_loader_in_a_file_that_imports_the_class_may_receive_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audio = AUDIO.replace("import pkg\n", "from pkg.datasets import Embeddings\n")
    assert _tt102(tmp_path, audio, capsys) == [13]


WORKER_DATASET = """\
import numpy as np
import torch


class Noisy(torch.utils.data.Dataset):
    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def init_worker(self, worker_id):
        self.rng = np.random.default_rng(self.seed + worker_id)

    def __len__(self):
        return 8

    def __getitem__(self, index):
        return self.rng.normal()
"""
WORKER_TRAIN = """\
import torch
from torch.utils.data import DataLoader

from pkg.data import Noisy


def worker_init_fn(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.CALL(worker_id)


loader = DataLoader(Noisy(0), num_workers=4, worker_init_fn=worker_init_fn)
"""


def _tt101(tmp_path: Path, called: str, capsys: pytest.CaptureFixture[str]) -> list[int]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text(WORKER_DATASET)
    (pkg / "train.py").write_text(WORKER_TRAIN.replace("CALL", called))
    cli.main(["check", "--no-cache", "--format", "json", "--select", "TT101", str(tmp_path)])
    found = json.loads(capsys.readouterr().out)["findings"]
    return [f["range"]["start"]["line"] for f in found if f["path"].endswith("data.py")]


def test_a_generator_made_in_each_worker_by_the_projects_worker_init_fn_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tt101(tmp_path, "init_worker", capsys) == []


def test_a_worker_init_fn_calling_another_dataset_method_proves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tt101(tmp_path, "__len__", capsys) == [8]
