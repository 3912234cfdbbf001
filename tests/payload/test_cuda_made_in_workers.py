"""CUDA values that reach DataLoader workers, reported in the file where
they enter the worker code or the dataset (issue 33, the dev rows' TT103
misses): ``.to(self.device)`` in ``__getitem__`` with the device passed in
from another file (FSCT), a transform in a ``Compose`` that makes tensors
on ``torch.device("cuda" if available else "cpu")`` (TFG's ``ToTensor``),
a dataset that keeps what a camera helper in another file puts on the GPU,
imported as ``src.cameras`` from a script under ``src/`` (TFG's rays). Each
case has a near-miss twin that differs in one place and stays silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchtrap import cli


def _check(
    tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> list[tuple[str, int, str, dict]]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT103"])
    report = json.loads(capsys.readouterr().out)
    return [
        (
            Path(f["path"]).as_posix().split(tmp_path.name + "/")[-1],
            f["range"]["start"]["line"],
            f["code"],
            f,
        )
        for f in report["findings"]
    ]


POINTS = """\
import numpy as np
import torch
from torch.utils.data import Dataset


class Points(Dataset):
    def __init__(self, files, device):
        self.files = files
        self.device = device

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        x = np.load(self.files[i])
        return torch.from_numpy(x).float().to(self.device)
"""
TRAIN = """\
{loader_import}

from points import Points

params = dict(device="{device}", workers={workers})
loader = DataLoader(Points(["a.npy"], device=params["device"]), num_workers=params["workers"])
"""


@pytest.mark.parametrize(
    ("device", "workers", "loader_import", "expected"),
    [
        ("cuda", 2, "from torch.utils.data import DataLoader", True),
        ("cuda", 2, "from torch_geometric.loader import DataLoader", True),
        ("cpu", 2, "from torch.utils.data import DataLoader", False),
        ("cuda", 0, "from torch.utils.data import DataLoader", False),
    ],
)
def test_getitem_moves_to_a_cuda_device_passed_from_another_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    device: str,
    workers: int,
    loader_import: str,
    expected: bool,
) -> None:
    files = {
        "points.py": POINTS,
        "train.py": TRAIN.format(device=device, workers=workers, loader_import=loader_import),
    }
    found = _check(tmp_path, files, capsys)
    at_getitem = [f for f in found if f[0] == "points.py" and f[1] == 16]
    assert bool(at_getitem) is expected, found
    if expected:
        finding = at_getitem[0][3]
        assert finding["severity"] == "error"
        assert "`__getitem__` puts data on the GPU" in finding["message"]
        assert f"num_workers={workers}" in finding["message"]


CONFIG = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""
TRANSFORMS = """\
import torch

from config import device


class ToTensor:
    def __call__(self, item):
        return torch.tensor(item, device={device})


class Scale:
    def __call__(self, item):
        return [v * 2 for v in item]
"""
SAMPLES = """\
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from tfm import Scale, ToTensor


class Samples(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.transform([i, i + 1])


data = Samples(transform=transforms.Compose([Scale(), {last}]))
loader = DataLoader(data, batch_size=2, num_workers=4)
"""


@pytest.mark.parametrize(
    ("device", "last", "expected"),
    [("device", "ToTensor()", True), ('"cpu"', "ToTensor()", False), ("device", "Scale()", False)],
)
def test_a_composed_transform_makes_cuda_tensors_in_the_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str, last: str, expected: bool
) -> None:
    files = {
        "config.py": CONFIG,
        "tfm.py": TRANSFORMS.format(device=device),
        "samples.py": SAMPLES.format(last=last),
    }
    found = _check(tmp_path, files, capsys)
    in_transform = [f for f in found if f[0] == "tfm.py"]
    assert bool(in_transform) is expected, found
    if expected:
        finding = in_transform[0][3]
        assert in_transform[0][1] == 8
        # "cuda" only when available: a warning that says it may happen
        assert finding["severity"] == "warning"
        assert "`__call__` puts data on the GPU" in finding["message"]
        assert "a possible crash or zeros" in finding["message"]


CAMERA = """\
import torch

from src.config import device


class Camera:
    def __init__(self, n):
        self.n = n

    def get_rays(self):
        rays = torch.randn(self.n, 3)
        return rays{move}
"""
RAYS = """\
from torch.utils.data import Dataset

from src.cameras import Camera


class Rays(Dataset):
    def __init__(self, n):
        self.items = []
        for i in range(n):
            rays = Camera(8).get_rays()
            self.items.append((i, rays))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]
"""
RENDER = """\
import torch

from {package}.rays import Rays

loader = torch.utils.data.DataLoader(Rays(4), batch_size=2, num_workers=4)
"""


@pytest.mark.parametrize(
    ("move", "package", "expected"),
    [(".to(device)", "src", True), ("", "src", False), (".to(device)", "srcx", False)],
)
def test_a_dataset_keeps_cuda_rays_from_a_helper_imported_through_src(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], move: str, package: str, expected: bool
) -> None:
    files = {
        "src/config.py": CONFIG,
        "src/cameras.py": CAMERA.format(move=move),
        "src/rays.py": RAYS,
        "src/render.py": RENDER.format(package=package),
    }
    found = _check(tmp_path, files, capsys)
    in_dataset = [f for f in found if f[0] == "src/rays.py"]
    at_loader = [f for f in found if f[0] == "src/render.py"]
    assert bool(in_dataset) is expected, found
    assert bool(at_loader) is expected, found
    if expected:
        assert in_dataset[0][1] == 10  # `Camera(8).get_rays()`, where the dataset gets it
        message = in_dataset[0][3]["message"]
        assert message.startswith("`Rays` keeps this CUDA tensor: DataLoader workers get a copy")
        notes = [r["message"] for r in in_dataset[0][3].get("related", [])]
        assert any("the CUDA tensor made here" in n for n in notes), notes


SIGNAL = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Signal:
    def __init__(self, data):
        self.data = data

    def to(self, device):
        self.data = self.data.to(device)
        return self


class Clips(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return Signal(torch.zeros(4)).to({worker_device}).data


def run(device="cuda"):
    loader = DataLoader(Clips(), batch_size=2, num_workers=4)
    for batch in loader:
        Signal(batch).to(device)
"""


@pytest.mark.parametrize(("worker_device", "expected"), [('"cpu"', False), ('"cuda"', True)])
def test_a_method_the_main_process_also_calls_with_cuda(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], worker_device: str, expected: bool
) -> None:
    """``Signal.to`` runs in the workers with "cpu" and in the main process
    with "cuda": one analysis of the method holds both devices, which says
    nothing about the workers (descriptinc/audiotools' ``AudioSignal.to``)."""
    found = _check(tmp_path, {"clips.py": SIGNAL.format(worker_device=worker_device)}, capsys)
    assert bool(found) is expected, found


EMBEDDING = """\
import torch
from torch import nn


def load_embedding(n):
    emb = nn.Embedding(n, 8)
    return {returned}
"""
TEXT = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class TextDataset(Dataset):
    def __init__(self, ids, model_emb=None):
        self.ids = ids
        self.model_emb = model_emb

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        with torch.no_grad():
            return np.array(self.model_emb(torch.tensor(self.ids[i])))


def load_data(ids, model_emb):
    return DataLoader(TextDataset(ids, model_emb=model_emb), batch_size=2, num_workers=4)
"""
TRAIN_TEXT = """\
from emb import load_embedding
from text import load_data

loader = load_data([[1, 2], [3, 4]], load_embedding(10))
"""


@pytest.mark.parametrize(("returned", "expected"), [("emb", True), ("emb.weight.detach()", False)])
def test_a_dataset_keeps_a_model_made_in_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], returned: str, expected: bool
) -> None:
    """DiffuSeq: the dataset keeps the word-embedding module passed in from
    the training script and runs it in ``__getitem__``; every worker gets a
    copy of it (pickled under spawn). Twin: the helper returns its weights."""
    files = {
        "emb.py": EMBEDDING.format(returned=returned),
        "text.py": TEXT,
        "train.py": TRAIN_TEXT,
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT104"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert bool(found) is expected, found
    if expected:
        assert Path(found[0]["path"]).name == "text.py"
        assert found[0]["range"]["start"]["line"] == 20  # the DataLoader
        assert "every worker gets a copy of the model `Embedding`" in found[0]["message"]


CAMERAS = """\
import torch
from torch import nn


class Camera(nn.Module):
    def __init__(self, image, pose):
        super().__init__()
        self.image = image
        self.pose = pose


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)


def make_views(n):
    return [{made} for i in range(n)]
"""
VIEWS = """\
from torch.utils.data import DataLoader

from cameras import make_views

loader = DataLoader(make_views(4), batch_size=1, num_workers=8, collate_fn=list)
"""


@pytest.mark.parametrize(
    ("made", "expected"),
    [("Encoder()", True), ("Camera(torch.zeros(3, 8, 8), torch.eye(4))", False)],
)
def test_a_module_without_weights_is_no_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made: str, expected: bool
) -> None:
    """4DGaussians: a list of ``Camera(nn.Module)`` objects that hold an
    image and a pose, no layer or Parameter, is data, not a model. Twin:
    a list of modules with an ``nn.Linear``."""
    files = {"cameras.py": CAMERAS.format(made=made), "views.py": VIEWS}
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT104"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert bool(found) is expected, found


TASK = """\
import pytorch_lightning as pl
from torch import nn
from torch.utils.data import DataLoader, IterableDataset


class TrainDataset(IterableDataset):
    def __init__(self, task):
        self.task = task

    def __iter__(self):
        return iter(range(4))


class Task(pl.LightningDataModule):
    def __init__(self, workers=4):
        super().__init__()
        self.workers = workers

    def train_dataloader(self):
        return DataLoader(TrainDataset(self), num_workers=self.workers)
"""
MODEL = """\
import pytorch_lightning as pl
from torch import nn

from task import Task


class Segmenter(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 2)


task = Task()
{wire}
"""


@pytest.mark.parametrize(("wire", "expected"), [("task.model = Segmenter()", True), ("", False)])
def test_a_lightning_datamodule_is_no_model_but_the_model_it_holds_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wire: str, expected: bool
) -> None:
    """pyannote-audio: the dataset keeps the Task (a LightningDataModule)
    and the Task holds the trained model. The Task itself is no model."""
    files = {"task.py": TASK, "model.py": MODEL.format(wire=wire)}
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT104"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert bool(found) is expected, found
    if expected:
        assert "the model `Segmenter`" in found[0]["message"]


SLICES = """\
from torch.utils.data import DataLoader, Dataset


class SliceDataset(Dataset):
    def __init__(self, transform):
        self.transform = transform
        self.examples = []
        self.examples.append(0)
        self.examples.append(1)
        self.examples.append(2)
        self.examples.append(3)
        self.examples.append(4)
        self.examples.append(5)
        self.examples.append(6)
        self.examples.append(7)
        self.examples.append(8)
        self.examples.append(9)
        self.examples.append(10)
        self.examples.append(11)
        self.examples.append(12)
        self.examples.append(13)
        self.examples.append(14)
        self.examples.append(15)
        self.examples.append(16)
        self.examples.append(17)
        self.examples.append(18)
        self.examples.append(19)
        self.examples.append(20)
        self.examples.append(21)
        self.examples.append(22)
        self.examples.append(23)
        self.examples.append(24)
        self.examples.append(25)
        self.examples.append(26)
        self.examples.append(27)
        self.examples.append(28)
        self.examples.append(29)
        self.examples.append(30)
        self.examples.append(31)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform(i)


def build(ds, workers):
    return DataLoader(ds, num_workers=workers)
"""
MASKS = """\
import numpy as np


class RandomMask:
    def __init__(self):
        self.rng = np.random.RandomState()

    def __call__(self, i):
        return i + self.rng.rand()


class Plain:
    def __call__(self, i):
        return i
"""
INFER = """\
from torch.utils.data import DataLoader

from masks import {transform}
from slices import SliceDataset

loader = DataLoader(SliceDataset(transform={transform}()), num_workers=4)
"""
DEMO = """\
from masks import RandomMask
from slices import SliceDataset, build

loader = build(SliceDataset(transform=RandomMask()), workers=0)
"""


@pytest.mark.parametrize(("transform", "expected"), [("Plain", False), ("RandomMask", True)])
def test_a_field_does_not_take_what_another_script_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], transform: str, expected: bool
) -> None:
    """fastMRI: ``SliceDataset.__init__`` (too long to copy per call site)
    is analysed once for every caller, so ``self.transform`` holds the demo script's ``RandomMask``
    too; the inference script, which passes ``Plain()``, must not be told
    its workers share that generator."""
    files = {
        "slices.py": SLICES,
        "masks.py": MASKS,
        "infer.py": INFER.format(transform=transform),
        "demo.py": DEMO,
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    cli.main(["check", str(tmp_path), "--no-cache", "--format", "json", "--select", "TT101"])
    found = json.loads(capsys.readouterr().out)["findings"]
    at_infer = [f for f in found if Path(f["path"]).name == "infer.py"]
    assert bool(at_infer) is expected, found
