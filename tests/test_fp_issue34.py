"""Issue 34: the false positives of the 40-project audit, each shaped like
the real code, where a rule's own Valid/Invalid examples cannot say it
(several findings of different severity in one file, notebooks, projects)."""

from __future__ import annotations

import textwrap

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
