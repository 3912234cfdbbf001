"""Issue 34: the false positives of the 40-project audit, each shaped like
the real code, where a rule's own Valid/Invalid examples cannot say it
(several findings of different severity in one file, notebooks, projects)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchtrap import cli
from torchtrap.config import from_table
from torchtrap.engine import lint
from torchtrap.findings import Severity


def _by_line(code: str, rule: str) -> dict[int, tuple[Severity, str]]:
    source = textwrap.dedent(code)
    found = lint(source, "example.py", from_table({}))
    return {f.range.start.line: (f.severity, f.message) for f in found if f.code == rule}


def test_tt210_target_beside_an_input_is_a_hint() -> None:
    found = _by_line(
        """
        import torch
        from torch.autograd import Variable

        def infer(valid_queue, model, criterion):
            model.eval()
            for step, (input, target) in enumerate(valid_queue):
                input = Variable(input, volatile=True).cuda()
                target = Variable(target, volatile=True).cuda(non_blocking=True)
                logits = model(input)
                loss = criterion(logits, target)
                correct = logits.argmax(1).eq(target.data).sum()
                n = target.size(0)
        """,
        "TT210",
    )
    assert found[8][0] == Severity.WARNING and "torch.no_grad" in found[8][1]
    assert found[9][0] == Severity.HINT and "no_grad" not in found[9][1]


def test_tt210_constant_accumulator_is_a_hint() -> None:
    found = _by_line(
        """
        import torch
        from torch.autograd import Variable

        def validate(net, val_loader):
            net.eval()
            losses = Variable(torch.zeros(100), volatile=True).cuda()
            for i, (images, _) in enumerate(val_loader):
                losses[i] = net(images).mean()
            z = Variable(torch.randn(64, 100), volatile=True).cuda()
            return losses.sum().item(), net(z)
        """,
        "TT210",
    )
    assert found[7][0] == Severity.HINT
    assert found[10][0] == Severity.WARNING, "a constant fed to the model still records"


FEATURES = """\
import torch
import torch.nn as nn


class LogMel(nn.Module):
    def __init__(self, n_fft: int = 400, n_mels: int = 80):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("fbank", torch.rand(n_mels, n_fft // 2 + 1))

    def forward(self, wav):
        spec = torch.stft(wav, self.n_fft, window=self.window, return_complex=True)
        return (self.fbank @ spec.abs() ** 2).clamp(min=1e-10).log()


class Learned(nn.Module):
    def __init__(self, n_mels: int = 80):
        super().__init__()
        self.proj = nn.Linear(201, n_mels)

    def forward(self, spec):
        return self.proj(spec)
"""
DATA = """\
from torch.utils.data import Dataset

from audio.features import Learned, LogMel


class Holder:
    def __init__(self, kind):
        self.extract = LogMel() if kind == "mel" else LogMel(n_fft=512)


class Speech(Dataset):
    def __init__(self, waves):
        self.waves = waves
        self.holder = Holder("mel")

    def __len__(self):
        return len(self.waves)

    def __getitem__(self, i):
        return self.holder.extract(self.waves[i])


class Mels(Speech):
    def __init__(self, waves):
        self.waves = waves
        self.extract = LogMel()


class Projected(Speech):
    def __init__(self, waves):
        self.waves = waves
        self.extract = Learned()
"""
TRAIN = """\
from torch.utils.data import DataLoader

from audio.data import Mels, Projected, Speech


def main(waves):
    for ds in (Speech(waves), Mels(waves), Projected(waves)):
        for batch in DataLoader(ds, batch_size=2, num_workers=2):
            print(batch.shape)
"""


def test_tt104_feature_extractor_in_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "audio").mkdir()
    (tmp_path / "audio" / "__init__.py").write_text("")
    (tmp_path / "audio" / "features.py").write_text(FEATURES)
    (tmp_path / "audio" / "data.py").write_text(DATA)
    (tmp_path / "train.py").write_text(TRAIN)
    code = cli.main(["check", "--no-cache", "--format", "json", "--select", "TT104", str(tmp_path)])
    found = json.loads(capsys.readouterr().out)["findings"]
    # Only the learned projection; the mel extractors (buffers only) are silent.
    messages = [f["message"] for f in found]
    assert not [m for m in messages if "Speech" in m or "Mels" in m or "LogMel" in m], messages
    assert any("Projected" in m for m in messages), messages
    assert code == 1
