"""Capabilities the held-out set of 2026-12-07 showed missing (branch
``heldfix``), each as a small project shaped like the real code that missed,
with a near-miss twin: the value arrives through a helper, another class,
a callee, or how the model or loss is written."""

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


# -- TT108: the loader and its sampler ---------------------------------------------

ALIAS = """\
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler


def train(args, loader, model):
    for epoch in range(args.epochs):
        it = iter(loader)
        for step in range(100):
            try:
                x = next(it)
            except StopIteration:
                it = iter(loader)
                x = next(it)
            model(x).sum().backward()


def main(args, ds, other, model):
    sampler = RandomSampler if args.local_rank == -1 else DistributedSampler
    loader = DataLoader(ds, sampler=sampler(ds), batch_size=4)  # 18
    plain = RandomSampler if args.local_rank == -1 else MySampler
    train(args, loader, model)
    train(args, DataLoader(other, sampler=plain(other)), model)  # 21: not a torch sampler
"""


def test_sampler_class_through_an_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lines(tmp_path, {"train.py": ALIAS}, "TT108", capsys) == [("train.py", 18)]


RETURNED = """\
from torch.utils.data import DataLoader, DistributedSampler


def get_dataloaders(train_ds, val_ds):
    train_sampler = DistributedSampler(train_ds, shuffle=True)  # 5
    train_loader = DataLoader(train_ds, batch_size=4, sampler=train_sampler)
    val_sampler = DistributedSampler(val_ds, shuffle=False)  # 7: no shuffle
    val_loader = DataLoader(val_ds, batch_size=4, sampler=val_sampler)
    return train_loader, val_loader


def get_one(ds):
    return DataLoader(ds, sampler=DistributedSampler(ds))  # 13


def get_dict(ds):
    return {"train": DataLoader(ds, sampler=DistributedSampler(ds))}  # 17


def train(train_ds, val_ds, model, epochs):
    train_loader, val_loader = get_dataloaders(train_ds, val_ds)
    one = get_one(train_ds)
    loaders = get_dict(train_ds)
    for epoch in range(epochs):
        for x in train_loader:
            model(x).sum().backward()
        for x in one:
            model(x).sum().backward()
        for x in loaders["train"]:
            model(x).sum().backward()
        for x in val_loader:
            model(x).sum().backward()
"""

SEEDED = """\
from torch.utils.data import DataLoader, DistributedSampler


def get_seeded(ds):
    return DataLoader(ds, sampler=DistributedSampler(ds))  # the loop sets the epoch


def train_seeded(ds, model, epochs):
    seeded = get_seeded(ds)
    for epoch in range(epochs):
        seeded.sampler.set_epoch(epoch)
        for x in seeded:
            model(x).sum().backward()
"""


def test_loader_returned_by_a_helper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _lines(tmp_path, {"train.py": RETURNED, "seeded.py": SEEDED}, "TT108", capsys)
    assert found == [("train.py", 5), ("train.py", 13), ("train.py", 17)]


SUBCLASS = """\
import torch.distributed as dist
from torch.utils import data


class Trainer(object):
    def __init__(self, model, optimizer, train_loader, test_loader):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.test_loader = test_loader

    def fit(self, epochs):
        for epoch in range(1, epochs + 1):
            self.train()

    def train(self):
        for x, y in self.train_loader:
            loss = self.model(x).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


class MyLoader(data.DataLoader):
    def __init__(self, dataset, batch_size, train=True):
        sampler = None
        if train and dist.is_initialized():
            sampler = data.DistributedSampler(dataset)  # 28
        super(MyLoader, self).__init__(
            dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler
        )


class FixedLoader(data.DataLoader):
    def __init__(self, dataset):
        sampler = data.DistributedSampler(dataset, shuffle=False)  # 36: no shuffle
        super().__init__(dataset, sampler=sampler)


def run(model, optimizer, dataset, epochs):
    trainer = Trainer(model, optimizer, MyLoader(dataset, 32), FixedLoader(dataset))
    trainer.fit(epochs)
"""


def test_loader_subclass_kept_by_another_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lines(tmp_path, {"main.py": SUBCLASS}, "TT108", capsys) == [("main.py", 28)]


KWARGS = """\
from torch.utils.data import DataLoader, DistributedSampler


def get_loaders(ds, distributed):
    params = {"batch_size": 4, "num_workers": 2}
    if distributed:
        params["sampler"] = DistributedSampler(ds)  # 7
    return {"train": DataLoader(ds, **params)}


def get_valid(ds):
    params = {"batch_size": 4, "sampler": DistributedSampler(ds, shuffle=False)}  # 12
    return DataLoader(ds, **params)


def run(ds, model, epochs, distributed):
    loaders = get_loaders(ds, distributed)
    valid = get_valid(ds)
    for epoch in range(epochs):
        for x in loaders["train"]:
            model(x).sum().backward()
        for x in valid:
            model(x).sum().backward()
"""


def test_sampler_in_a_kwargs_dict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lines(tmp_path, {"exp.py": KWARGS}, "TT108", capsys) == [("exp.py", 7)]


# -- model structure ---------------------------------------------------------------

BLOCKS = """\
from collections import OrderedDict

import torch.nn as nn


def conv2d(c_in, c_out):
    return nn.Sequential(
        OrderedDict([("conv", nn.Conv2d(c_in, c_out, 3)), ("bn", nn.BatchNorm2d(c_out))])
    )


class conv_block(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(ch_in, ch_out, 3), nn.BatchNorm2d(ch_out))

    def forward(self, x):
        return self.conv(x)


class plain_block(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(ch_in, ch_out, 3), nn.ReLU())

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = conv_block(1, 8)

    def forward(self, x):
        return self.block(x)


class YoloBody(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = conv2d(3, 8)

    def forward(self, x):
        return self.last(x)


class PlainNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = plain_block(1, 8)

    def forward(self, x):
        return self.block(x)
"""

SOLVER = """\
import torch
from models import PlainNet, UNet, YoloBody


class Solver(object):
    def __init__(self, loader, kind):
        self.net = None
        self.loader = loader
        self.kind = kind
        self.build_model()

    def build_model(self):
        if self.kind == "unet":
            self.net = UNet()
        else:
            self.net = YoloBody()

    def test(self):
        with torch.no_grad():
            for images in self.loader:
                out = self.net(images)  # 21


class PlainSolver(object):
    def __init__(self, loader):
        self.net = None
        self.loader = loader
        self.net = PlainNet()

    def test(self):
        with torch.no_grad():
            for images in self.loader:
                out = self.net(images)  # no train-mode layer at any depth
"""


def test_batchnorm_one_class_or_one_helper_deeper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"models.py": BLOCKS, "solver.py": SOLVER}
    assert _lines(tmp_path, files, "TT207", capsys) == [("solver.py", 21)]


NETS = """\
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return F.softmax(self.fc(x))


class Logits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(x)
"""

MOVED_LOSS = """\
import torch.nn as nn


def source_only(classifier, logits, loader):
    criterion = nn.CrossEntropyLoss().cuda()
    for x, y in loader:
        loss = criterion(classifier(x), y)  # 7
        loss = loss + criterion(logits(x), y)  # logits: fine
        loss.backward()
"""

MAIN = """\
import nets
import train

train.source_only(nets.Classifier().cuda(), nets.Logits().cuda(), [])
"""


def test_loss_module_moved_with_cuda(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"nets.py": NETS, "train.py": MOVED_LOSS, "main.py": MAIN}
    assert _lines(tmp_path, files, "TT213", capsys) == [("train.py", 7)]


EXPLICIT_FORWARD = """\
import torch


def build_model(input_dim, output_dim):
    model = torch.nn.Sequential()
    model.add_module("linear_1", torch.nn.Linear(input_dim, 512, bias=False))
    model.add_module("relu_1", torch.nn.ReLU())
    model.add_module("linear_2", torch.nn.Linear(512, output_dim, bias=False))
    model.add_module("softmax", torch.nn.Softmax())
    return model


def build_logits(input_dim, output_dim):
    model = torch.nn.Sequential()
    model.add_module("linear_1", torch.nn.Linear(input_dim, output_dim, bias=False))
    return model


def train(model, loss, optimizer, x_val, y_val):
    optimizer.zero_grad()
    fx = model.forward(x_val)
    output = loss.forward(fx, y_val)  # 22
    output.backward()
    optimizer.step()
    return output.item()


def train_logits(model, loss, x_val, y_val):
    fx = model.forward(x_val)
    output = loss.forward(fx, y_val)  # logits: fine
    output.backward()


def main():
    model = build_model(784, 10)
    logits = build_logits(784, 10)
    loss = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(100):
        train(model, loss, optimizer, None, None)
        train_logits(logits, loss, None, None)


main()
"""


def test_explicit_forward_calls_and_add_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _lines(tmp_path, {"nn3.py": EXPLICIT_FORWARD}, "TT213", capsys)
    assert found == [("nn3.py", 22)]


LIGHTNING = """\
import pytorch_lightning as pl
from torch import nn
from torch.nn import functional as F


class LogisticRegression(pl.LightningModule):
    def __init__(self, input_dim, num_classes):
        super().__init__()
        self.linear = nn.Linear(input_dim, num_classes)

    def forward(self, x):
        return F.softmax(self.linear(x), dim=-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        return F.cross_entropy(y_hat, y)  # 17


class Logistic(pl.LightningModule):
    def __init__(self, input_dim, num_classes):
        super().__init__()
        self.linear = nn.Linear(input_dim, num_classes)

    def forward(self, x):
        return self.linear(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)  # logits: fine


def cli_main(loader):
    trainer = pl.Trainer()
    trainer.fit(LogisticRegression(input_dim=4, num_classes=3), loader)
    trainer.fit(Logistic(input_dim=4, num_classes=3), loader)
"""


def test_lightning_module_handed_to_the_trainer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _lines(tmp_path, {"lr.py": LIGHTNING}, "TT213", capsys) == [("lr.py", 17)]


# -- callee effects ----------------------------------------------------------------

SET_MODE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def set_mode(mode, models):
    assert mode in ["train", "eval"]
    for m in models:
        if m is None:
            continue
        if mode == "train":
            m.train()
        if mode == "eval":
            m.eval()


def check_accuracy(pg, ee, loader):
    set_mode("eval", [pg, ee])
    for x in loader:
        with torch.no_grad():
            pg(x)
    set_mode("eval", [pg, ee])


def train_loop(loader, val_loader, iterations):
    pg = Net()
    ee = Net()
    opt = torch.optim.SGD(pg.parameters(), lr=0.1)
    set_mode("train", [pg, ee])
    t = 0
    while t < iterations:
        for x in loader:
            t += 1
            opt.zero_grad()
            loss = ee(pg(x)).sum()
            loss.backward()
            opt.step()
            if t % 100 == 0:
                check_accuracy(pg, ee, val_loader)  # 48
"""

SET_MODE_RESTORED = """\
import torch

from train_model import Net, check_accuracy, set_mode


def train_loop_restored(loader, val_loader, iterations):
    pg = Net()
    ee = Net()
    opt = torch.optim.SGD(pg.parameters(), lr=0.1)
    set_mode("train", [pg, ee])
    t = 0
    while t < iterations:
        for x in loader:
            t += 1
            opt.zero_grad()
            loss = ee(pg(x)).sum()
            loss.backward()
            opt.step()
            if t % 100 == 0:
                check_accuracy(pg, ee, val_loader)
                set_mode("train", [pg, ee])  # restores both
"""


def test_mode_switched_by_a_helper_over_a_list_of_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"train_model.py": SET_MODE, "restored.py": SET_MODE_RESTORED}
    assert _lines(tmp_path, files, "TT216", capsys) == [("train_model.py", 48)]


CALLER_NO_GRAD = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.fc(x))


def eval_one_epoch(model, loader):
    model.train()
    total = 0.0
    for x in loader:
        total += model(x).sum().item()  # 19
    return total


def eval_properly(model, loader):
    model.eval()
    return sum(model(x).sum().item() for x in loader)


def train_and_eval(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            eval_one_epoch(model, val_loader)


def test(model, val_loader):
    with torch.no_grad():
        return eval_properly(model, val_loader)


def main(loader, val_loader):
    model = Net()
    train_and_eval(model, loader, val_loader, torch.optim.SGD(model.parameters(), lr=0.1), 3)
    test(Net(), val_loader)
"""


def test_no_grad_entered_by_the_caller(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _lines(tmp_path, {"train_and_eval.py": CALLER_NO_GRAD}, "TT207", capsys)
    assert found == [("train_and_eval.py", 19)]


METERS = """\
class LossesTrack:
    def __init__(self):
        self.train_losses = {"total": 0}
        self.val_losses = {"total": 0}

    def update_train_losses(self, loss):
        for key in loss:
            self.train_losses[key] += loss[key]

    def update_logged(self, loss):
        for key in loss:
            self.val_losses[key] += loss[key].item()


class AverageMeter(object):
    def __init__(self, n):
        self._sum = [0] * n

    def update(self, values):
        for idx, v in enumerate(values):
            self._sum[idx] += v
"""

METERED = """\
from metrics import AverageMeter, LossesTrack


def train(model, loader, optimizer):
    track = LossesTrack()
    meter = AverageMeter(2)
    for x in loader:
        loss = {"total": model(x).sum()}
        optimizer.zero_grad()
        loss["total"].backward()
        optimizer.step()
        track.update_train_losses(loss)  # 12
        track.update_logged(loss)  # .item(): fine
        meter.update([loss["total"] * 10, loss["total"]])  # 14
"""


def test_accumulator_in_another_objects_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _lines(tmp_path, {"metrics.py": METERS, "train.py": METERED}, "TT214", capsys)
    assert found == [("train.py", 12), ("train.py", 14)]


INERT_NETS = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.BatchNorm2d(c, track_running_stats=False)

    def forward(self, x):
        return self.norm(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(4)

    def forward(self, x):
        return self.block(x)
"""

INERT_LOOP = """\
import torch
from nets import Net


def run(loader, steps):
    score = Net()
    optimizer = torch.optim.Adam(score.parameters())
    for step, x in enumerate(loader):
        loss = score(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            score.eval()  # the same in both modes: no train-mode layer
"""


def test_layers_without_a_mode_are_no_train_mode_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"nets.py": INERT_NETS, "runner.py": INERT_LOOP}
    assert _lines(tmp_path, files, "TT216", capsys) == []
