"""The worker payload, round 4 (issue 33): transports the real projects of
the dev rows use and the core did not follow. Each case in the shape of the
real code, each with a near-miss twin that must stay silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli


def _check(tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str], *more: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", *more])
    report = json.loads(capsys.readouterr().out)
    return [
        (
            Path(f["path"]).relative_to(tmp_path).as_posix(),
            f["range"]["start"]["line"],
            f["code"],
            f,
        )
        for f in report["findings"]
    ]


def _codes(found: list[tuple[str, int, str, dict]]) -> set[tuple[str, int, str]]:
    return {(name, line, code) for name, line, code, _ in found}


# -- a generator passed through a helper inside the dataset's own __init__ ----

RNG_DATA = """\
import numpy as np
from torch.utils.data import Dataset


def as_state(rng):
    return rng


class Frames(Dataset):
    def __init__(self, n):
        self.n = n
        self._data_rng = {store}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i + self._data_rng.normal()
"""
RNG_MAIN = """\
from torch.utils.data import DataLoader

from frames import Frames

loader = DataLoader(Frames(16), batch_size=2, num_workers=4)
"""


def test_a_generator_through_a_helper_in_the_datasets_init(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "frames.py": RNG_DATA.format(store="as_state(np.random.RandomState(123))"),
        "main.py": RNG_MAIN,
    }
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert ("main.py", 5, "TT101") in _codes(found), found
    finding = next(f for name, _, _, f in found if name == "main.py")
    assert "num_workers=4" in finding["message"]
    assert "`._data_rng`" in finding["message"]


def test_a_generator_stored_as_made_is_said_once_by_the_files_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The twin: `self._data_rng = np.random.RandomState(123)` is the file
    # rule's (at the store); the payload does not say it again at the loader.
    files = {"frames.py": RNG_DATA.format(store="np.random.RandomState(123)"), "main.py": RNG_MAIN}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert _codes(found) == {("frames.py", 12, "TT101")}, found


def test_a_helper_that_returns_no_generator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "frames.py": RNG_DATA.format(
            store="as_state(np.random.RandomState(123).get_state())"
        ).replace("self._data_rng.normal()", "len(self._data_rng)"),
        "main.py": RNG_MAIN,
    }
    assert _check(tmp_path, files, capsys, "--select", "TT101") == []


# -- `import _init_paths`: a folder put on sys.path by a literal path --------

INIT_PATHS = """\
import os.path as osp
import sys


def add_path(path):
    if path not in sys.path:
        sys.path.insert(0, path)


this_dir = osp.dirname(__file__)

lib_path = osp.join(this_dir, {folder})
add_path(lib_path)
"""
DETECTOR = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)


class Detector:
    def __init__(self):
        self.model = Net()

    def pre_process(self, image):
        return image
"""
PREFETCH = """\
import _init_paths

import torch
from detectors.detector import Detector


class PrefetchDataset(torch.utils.data.Dataset):
    def __init__(self, images, pre_process_func):
        self.images = images
        self.pre_process_func = pre_process_func

    def __getitem__(self, index):
        return self.pre_process_func(self.images[index])

    def __len__(self):
        return len(self.images)


def prefetch_test():
    detector = Detector()
    data_loader = torch.utils.data.DataLoader(
        PrefetchDataset([1, 2], detector.pre_process), batch_size=1, num_workers=1
    )
    return data_loader


prefetch_test()
"""


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("'lib'", True),
        # the twins: a folder that is not there, a folder from the environment
        ("'lib2'", False),
        ("os.environ['LIB']", False),
    ],
)
def test_modules_under_a_folder_init_paths_puts_on_sys_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str, expected: bool
) -> None:
    init = INIT_PATHS.format(folder=folder)
    if "environ" in folder:
        init = "import os\n" + init
    files = {
        "src/_init_paths.py": init,
        "src/test.py": PREFETCH,
        "src/lib/detectors/__init__.py": "",
        "src/lib/detectors/detector.py": DETECTOR,
    }
    found = _check(tmp_path, files, capsys, "--select", "TT104")
    assert (("src/test.py", 21, "TT104") in _codes(found)) is expected, found
    if expected:
        finding = next(f for name, _, _, f in found if name == "src/test.py")
        assert "`Net`" in finding["message"], finding["message"]


# -- a generator reported where it is made, the DataLoader in another file ---

AUGMENT = """\
import numpy as np


class RandomFlip:
    def __init__(self, seed=47):
        self.rs = np.random.RandomState(seed)

    def __call__(self, x):
        if self.rs.uniform() > 0.5:
            return x[::-1]
        return x
"""
VOLUMES = """\
from torch.utils.data import Dataset

from augment import RandomFlip


class Volumes(Dataset):
    def __init__(self):
        self.transform = RandomFlip()

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform([i, i + 1])
"""
TRAIN = """\
from torch.utils.data import DataLoader

from volumes import Volumes


def get_train_loaders(workers):
    return DataLoader(Volumes(), batch_size=2, num_workers=workers{init})


loader = get_train_loaders({workers})
"""


@pytest.mark.parametrize(
    ("workers", "init", "expected"),
    [
        ("8", "", "error"),
        # the twins: no workers; a worker_init_fn that may re-create it
        ("0", "", None),
        ("8", ", worker_init_fn=seed_worker", None),
    ],
)
def test_a_generator_is_reported_where_it_is_made(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    workers: str,
    init: str,
    expected: str | None,
) -> None:
    train = TRAIN.format(workers=workers, init=init)
    if init:
        train = "def seed_worker(worker_id):\n    pass\n\n\n" + train
    files = {"augment.py": AUGMENT, "volumes.py": VOLUMES, "train.py": train}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    here = [f for name, line, _, f in found if (name, line) == ("augment.py", 6)]
    if expected is None:
        assert here == [], found
        return
    assert len(here) == 1, found
    finding = here[0]
    assert finding["severity"] == expected
    assert "num_workers=8" in finding["message"] and "train.py:7" in finding["message"]
    notes = [(r["path"] and Path(r["path"]).name, r["message"]) for r in finding["related"]]
    assert any(name == "train.py" and "the DataLoader" in m for name, m in notes), notes
    assert ("volumes.py", "dataset: `Volumes` made here") not in notes  # made in train.py
    # the DataLoader's own finding stays
    assert any(name == "train.py" for name, _, _, _ in found), found


def test_a_generator_the_workers_reseed_is_not_reported_where_it_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    volumes = VOLUMES.replace(
        "        return self.transform([i, i + 1])",
        "        self.transform.rs.seed(i)\n        return self.transform([i, i + 1])",
    )
    files = {
        "augment.py": AUGMENT,
        "volumes.py": volumes,
        "train.py": TRAIN.format(workers=8, init=""),
    }
    assert _check(tmp_path, files, capsys, "--select", "TT101") == []


# -- a deep copy holds what its original holds -------------------------------

REPRESENTATION = """\
from numpy.random import default_rng


class DataRepresentation:
    def __init__(self, seed=None):
        self.rng = default_rng(seed)

    def __call__(self, x):
        return {draw}
"""
GRAPHS = """\
from copy import deepcopy

from torch.utils.data import DataLoader, Dataset

from representation import DataRepresentation


class Graphs(Dataset):
    def __init__(self, data_representation):
        self._data_representation = deepcopy(data_representation)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self._data_representation(i)


def make_dataloader(data_representation, num_workers=10):
    return DataLoader(Graphs(data_representation), num_workers=num_workers)


loader = make_dataloader(DataRepresentation(seed=7))
"""


@pytest.mark.parametrize(
    ("draw", "expected"),
    [
        ("x + self.rng.normal()", True),
        # the twin: the copy's generator is only looked at, never drawn from
        ("(x, self.rng is None)", False),
    ],
)
def test_a_generator_in_a_deep_copy_the_dataset_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], draw: str, expected: bool
) -> None:
    files = {"representation.py": REPRESENTATION.format(draw=draw), "graphs.py": GRAPHS}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert (("graphs.py", 20, "TT101") in _codes(found)) is expected, found
    # and where the generator is made, the DataLoader being in another file
    assert (("representation.py", 6, "TT101") in _codes(found)) is expected, found
    if expected:
        finding = next(f for name, _, _, f in found if name == "graphs.py")
        assert "num_workers=10" in finding["message"], finding["message"]


# -- issue 33's first probe: the generator in a Compose of transform objects --

COMPOSED = """\
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from augment import RandomFlip


class Normalize:
    def __call__(self, x):
        return x


class Volumes(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform([i, i + 1])


data = Volumes(transforms.Compose([Normalize(), {last}]))
loader = DataLoader(data, batch_size=2, num_workers=4)
"""


@pytest.mark.parametrize(("last", "expected"), [("RandomFlip()", True), ("Normalize()", False)])
def test_tt101_a_generator_in_a_compose_of_transform_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], last: str, expected: bool
) -> None:
    files = {"augment.py": AUGMENT, "volumes.py": COMPOSED.format(last=last)}
    found = _check(tmp_path, files, capsys, "--select", "TT101")
    assert (("volumes.py", 24, "TT101") in _codes(found)) is expected, found
    assert (("augment.py", 6, "TT101") in _codes(found)) is expected, found
    if expected:
        finding = next(f for name, _, _, f in found if name == "volumes.py")
        assert "argument of Compose" in finding["message"] or "`.rs`" in finding["message"]


# -- a DataLoader subclass: `super().__init__(dataset, ...)` builds the loader --

TEXTS = """\
import torch
from torch.utils.data import Dataset


class MonoTextData(Dataset):
    def __init__(self, device=None):
        self.device = device

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return i

    def collate(self, batch):
        return torch.tensor(batch, device=self.device)
"""
ITERATORS = """\
from torch.utils.data import DataLoader


class SingleDatasetIterator(DataLoader):
    def __init__(self, dataset):
        num_workers = 2
        super().__init__(dataset, batch_size=2, collate_fn=dataset.collate, num_workers=num_workers)
"""
VAE_TRAIN = """\
import torch

from data import MonoTextData
from iterators import SingleDatasetIterator


def main():
    device = torch.device({device})
    for batch in SingleDatasetIterator(MonoTextData(device=device)):
        print(batch)


main()
"""


@pytest.mark.parametrize(("device", "expected"), [('"cuda"', True), ('"cpu"', False)])
def test_a_dataloader_subclass_builds_its_loader_in_super_init(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str, expected: bool
) -> None:
    files = {
        "data.py": TEXTS,
        "iterators.py": ITERATORS,
        "vae_train.py": VAE_TRAIN.format(device=device),
    }
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    assert (("data.py", 16, "TT103") in _codes(found)) is expected, found
    if expected:
        finding = next(f for name, _, _, f in found if name == "data.py")
        assert "num_workers=2" in finding["message"], finding["message"]
        notes = [(r["path"] and Path(r["path"]).name, r["message"]) for r in finding["related"]]
        assert ("iterators.py", "the DataLoader (num_workers=2)") in notes, notes
        assert next(r for r in finding["related"])["range"]["start"]["line"] == 7


# -- a field set only inside the loop over the loader: not what workers get --

TRACKER = """\
import torch


class Detector:
    def __init__(self, device):
        self.device = device
        self.pre_images = None

    def pre_process(self, image):
        return image

    def run(self, image):
        images = torch.as_tensor(image).to(self.device)
        self.pre_images = images
        return images
"""
PREFETCH_TRACK = """\
import torch

from detector import Detector


class PrefetchDataset(torch.utils.data.Dataset):
    def __init__(self, images, pre_process_func):
        self.images = images
        self.pre_process_func = pre_process_func

    def __getitem__(self, index):
        return self.pre_process_func(self.images[index])

    def __len__(self):
        return len(self.images)


def prefetch_test():
    detector = Detector(torch.device("cuda"))
{warmup}    data_loader = torch.utils.data.DataLoader(
        PrefetchDataset([1, 2], detector.pre_process), batch_size=1, num_workers=1
    )
    for ind, image in enumerate(data_loader):
        detector.run(image)


prefetch_test()
"""


@pytest.mark.parametrize(
    ("warmup", "expected"),
    [
        # the CUDA tensor is kept before the workers start
        ("    detector.run([0.0])\n", True),
        # the twin: kept only inside the loop, after the workers started
        ("", False),
    ],
)
def test_a_field_set_only_inside_the_loop_over_the_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], warmup: str, expected: bool
) -> None:
    files = {"detector.py": TRACKER, "test.py": PREFETCH_TRACK.format(warmup=warmup)}
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    line = 21 if warmup else 20
    assert (("test.py", line, "TT103") in _codes(found)) is expected, found


def test_a_field_set_in_the_loop_on_an_object_passed_on_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `detector` itself leaves the function (another function may call run)
    test = PREFETCH_TRACK.format(warmup="    keep(detector)\n").replace(
        "def prefetch_test", "def keep(d):\n    d.run([0.0])\n\n\ndef prefetch_test"
    )
    files = {"detector.py": TRACKER, "test.py": test}
    found = _check(tmp_path, files, capsys, "--select", "TT103")
    assert ("test.py", 25, "TT103") in _codes(found), found


def test_a_folder_another_folders_script_puts_on_sys_path_is_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/conf.py puts src/lib on sys.path for the docs; src/test.py runs
    # without it (and its own `import _init_paths` adds nothing here)
    files = {
        "docs/conf.py": INIT_PATHS.format(folder="'../src/lib'"),
        "src/_init_paths.py": "",
        "src/test.py": PREFETCH,
        "src/lib/detectors/__init__.py": "",
        "src/lib/detectors/detector.py": DETECTOR,
    }
    assert _check(tmp_path, files, capsys, "--select", "TT104") == []
