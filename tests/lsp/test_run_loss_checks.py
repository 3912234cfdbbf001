"""The loss checks of `torchtrap run` in the editor (issue 36, items 1-3):
torchtrap.runFile on a script with a non-finite loss, a broadcasting
MSELoss and an AverageMeter (in another module) that keeps the loss graphs
puts each finding on the user's line, in the file that holds it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.lsp.lsp_harness import published, run_diagnostics, session

SCRIPTS = Path(__file__).resolve().parents[1] / "run" / "scripts"


def _line(path: Path, text: str) -> int:
    """0-based, as LSP counts."""
    return next(i for i, line in enumerate(path.read_text().splitlines()) if text in line)


@pytest.mark.slow
async def test_loss_checks_reach_the_editor_on_the_users_lines(root: Path) -> None:
    script = root / "train.py"
    shutil.copy(SCRIPTS / "editor_losses.py", script)
    shutil.copy(SCRIPTS / "meters.py", root / "meters.py")
    text = script.read_text()
    async with session(root) as h:
        uri = h.open("train.py", text)
        static = await h.diagnostics(uri, 1)
        result = await h.command("torchtrap.runFile", {"uri": uri, "id": "losses"})
        assert result["findings"] == 3, result["summary"]
        diags = await published(h, uri, lambda ds: len(run_diagnostics(ds)) == 1)
        run = {d.code: d for d in run_diagnostics(diags)}
        assert run["TTR202"].range.start.line == _line(script, "loss = criterion(regressor(x), y)")
        assert run["TTR202"].data["measured"]["broadcast_shape"] == [16, 16]
        # One diagnostic per problem: the static TT201 at the same place
        # carries the run's finding (its line, its backward) and says so.
        assert any(d.code == "TT201" for d in static)
        (tt201,) = [d for d in diags if d.code == "TT201"]
        assert tt201.source == "torchtrap" and tt201.message.endswith("(confirmed when run)")
        assert tt201.range.start.line == _line(script, "return torch.log(self.softmax(")
        related = tt201.related_information or ()
        seen = [r for r in related if r.message.startswith("torchtrap-run:")]
        assert seen and "the loss is inf at backward 3" in seen[0].message
        lines = {r.location.range.start.line for r in related}
        assert _line(script, "    loss.backward()") in lines

        meters = (root / "meters.py").as_uri()
        kept = run_diagnostics(await published(h, meters, lambda ds: bool(run_diagnostics(ds))))
        assert [(d.code, d.range.start.line) for d in kept] == [
            ("TT214", _line(root / "meters.py", "self.sum += val * n"))
        ]
        assert "AverageMeter.sum" in kept[0].message
        callers = {
            (r.location.uri, r.location.range.start.line) for r in kept[0].related_information or ()
        }
        assert (uri, _line(script, "meter.update(loss, x.size(0))")) in callers
