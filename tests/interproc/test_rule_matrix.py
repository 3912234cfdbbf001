"""The rules' transport matrix (issue 32): each producer of a bad value, each
way it travels, as ``torchtrap check`` reports it; each with a near-miss
twin that must stay silent (``rule_cases.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interproc.rule_cases import (
    PRODUCERS,
    TRANSPORTS,
    Producer,
    Transport,
    findings,
    write_case,
)

# What the rules do not follow yet, each for a stated reason (strict: a case
# that starts passing must leave this list).
KNOWN_MISSES = {
    ("module in a plain list (TT218)", "module global in another file"): "a module "
    "global is a shared reference, not a member made for this list: whether another "
    "module registers it cannot be told, so TT218 stays silent",
}


@pytest.mark.parametrize("transport", TRANSPORTS, ids=lambda t: t.name.replace(" ", "-"))
@pytest.mark.parametrize("producer", PRODUCERS, ids=lambda p: p.name.replace(" ", "-"))
def test_found_through_each_transport_and_silent_on_its_twin(
    tmp_path: Path, producer: Producer, transport: Transport
) -> None:
    write_case(tmp_path / "twin", producer, transport, producer.decoy)
    assert findings(tmp_path / "twin", producer.code) == []
    write_case(tmp_path / "bug", producer, transport, producer.make)
    found = findings(tmp_path / "bug", producer.code)
    reason = KNOWN_MISSES.get((producer.name, transport.name))
    if reason is not None:
        assert not found, f"now found: remove it from KNOWN_MISSES ({reason})"
        pytest.xfail(reason)
    assert found, (producer.name, transport.name)


LAYERS = """\
import torch.nn as nn


class Clone(nn.Module):
    def forward(self, x, n):
        return [x] * n


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x)
"""
DECODER = """\
import torch.nn as nn

from layers import *  # noqa: F403


class Decoder(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.members = [{member}() for _ in range(n)]

    def forward(self, x):
        return x


Decoder(3)
"""


@pytest.mark.parametrize(("member", "reported"), [("Block", True), ("Clone", False)])
def test_a_member_class_from_a_star_import_counts_when_it_has_parameters(
    tmp_path: Path, member: str, reported: bool
) -> None:
    # Transformer-MM-Explainability's `[Clone() for _ in ...]`: a parameter-free
    # module loses nothing unregistered; a Block with a Linear loses its weights.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'case'\n")
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "decoder.py").write_text(DECODER.format(member=member))
    assert bool(findings(tmp_path, "TT218")) is reported
