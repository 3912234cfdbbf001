"""A hung run says which worker and which item were in flight (issue 36,
item 8): a dataset whose item 7 never returns, interrupted with Ctrl+C; its
twin, which does not hang, reports nothing of the kind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.helpers import SCRIPTS, line_of, run_cli, torchtrap_env
from tests.run.test_run_launch import write

SCRIPT = SCRIPTS / "hang_fires.py"


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_a_hung_worker_is_named_with_its_item(tmp_path: Path) -> None:
    write(tmp_path, "hang.py", SCRIPT.read_text(encoding="utf-8"))
    cli = subprocess.Popen(
        [sys.executable, "-m", "torchtrap", "run", "-o", "report.json", "--format", "json"]
        + ["hang.py"],
        cwd=tmp_path,
        env=torchtrap_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "stuck").exists():
            assert cli.poll() is None, cli.communicate()
            assert time.monotonic() < deadline, "the worker never reached item 7"
            time.sleep(0.05)
        cli.send_signal(signal.SIGINT)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, err
    # batches 0-2 came; batch 3 (items 6, 7) went to worker 1 (round robin)
    assert "interrupted while waiting for batch 3 from DataLoader worker 1" in err
    doc = json.loads((tmp_path / "report.json").read_text())
    waiting = next(i for i in doc["in_flight"] if i["kind"] == "waiting")
    assert (waiting["batch"], waiting["worker"], waiting["indices"]) == (3, 1, [6, 7])
    stuck = next(i for i in doc["in_flight"] if i["kind"] == "worker_interrupted")
    assert (stuck["worker"], stuck["indices"], stuck["item"]) == (1, [6, 7], 7)
    assert stuck["where"]["line"] == line_of(SCRIPT, "time.sleep(0.05)")
    assert stuck["where"]["function"] == "__getitem__"
    loop = line_of(SCRIPT, "for batch in loader:")
    notes = "\n".join(doc["notes"])
    assert (
        "when interrupted, the main process was waiting for batch 3 from DataLoader worker 1,"
        f" items [6, 7] (the DataLoader iterated at hang.py:{loop})"
    ) in notes, notes
    assert (
        "DataLoader worker 1 was fetching items [6, 7] on item 7 at hang.py:"
        f"{stuck['where']['line']} in __getitem__()"
    ) in notes, notes
    assert doc["interrupted_at"]["line"] == loop


def test_twin_a_run_that_does_not_hang_names_nothing() -> None:
    proc, doc = run_cli(SCRIPT.name, "--no-hang")
    assert proc.returncode == 0, proc.stderr
    assert doc is not None
    assert doc["in_flight"] == [] and doc["interrupted_at"] is None
    assert doc["notes"] == [] and not doc["interrupted"]
    assert len(proc.stdout.splitlines()) == 8
