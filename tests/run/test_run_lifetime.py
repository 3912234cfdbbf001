"""Nothing outlives `torchtrap run` (issue 36, item 5): SIGKILL the CLI and
neither the script, nor its DataLoader workers, nor a process it spawned,
nor the temporary folder stays; a Ctrl+C gives the script all the time it
needs (a long checkpoint save) and a second one kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.helpers import torchtrap_env
from tests.run.test_run_launch import _ours, write

# The script reads a DataLoader with two workers and starts a process of its own
# (multiprocessing, not a daemon); "ready" once all of them run. With `--save`
# a Ctrl+C starts a checkpoint save that lasts until the test writes "release".
_TRAIN = """
import multiprocessing as mp
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


class Endless(Dataset):
    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        return torch.zeros(2)


def helper():
    while True:
        time.sleep(0.1)


def save_checkpoint(model):
    Path("saving").write_text("saving")
    while not Path("release").exists():
        time.sleep(0.02)
    torch.save(model.state_dict(), "checkpoint.pt")


if __name__ == "__main__":
    model = torch.nn.Linear(2, 1)
    if "--helper" in sys.argv:
        mp.get_context("spawn").Process(target=helper, daemon=False).start()
    try:
        for n, batch in enumerate(DataLoader(Endless(), batch_size=2, num_workers=2)):
            model(batch).sum().backward()
            if n == 0:
                Path("ready").write_text("ready")
            if "--finish" in sys.argv and n == 5:
                break
            time.sleep(0.01)
    except KeyboardInterrupt:
        if "--save" in sys.argv:
            save_checkpoint(model)
        raise
"""


def _wait_for(what: str, done: object, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while not done():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _start(tmp_path: Path, marker: str, *args: str) -> tuple[subprocess.Popen[str], Path]:
    write(tmp_path, marker, _TRAIN)
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    cli = subprocess.Popen(
        [sys.executable, "-m", "torchtrap", "run", "-o", "report.json", "--format", "json"]
        + [marker, *args],
        cwd=tmp_path,
        env=torchtrap_env(TMPDIR=str(temp)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def ready() -> bool:
        if cli.poll() is not None:
            out, err = cli.communicate()
            pytest.fail(f"the script ended before it was ready: {cli.returncode}\n{out}\n{err}")
        return (tmp_path / "ready").exists()

    _wait_for("the script to start", ready)
    return cli, temp


def _leftovers(temp: Path) -> list[str]:
    return sorted(p.name for p in temp.glob("torchtrap-run-*"))


def _nothing_left(marker: str, temp: Path) -> None:
    # The kill is immediate, the watchdog's cleanup takes its own few milliseconds.
    deadline = time.monotonic() + 30
    while (_ours(marker) or _ours(str(temp)) or _leftovers(temp)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ours(marker) == []
    assert _ours(str(temp)) == []  # the watchdog went too
    assert _leftovers(temp) == []


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGKILL")
def test_sigkill_of_run_leaves_no_process_and_no_temporary_folder(tmp_path: Path) -> None:
    marker = f"orphans_{os.getpid()}.py"
    cli, temp = _start(tmp_path, marker, "--helper")
    try:
        # the script, 2 DataLoader workers, its helper (and spawn's resource tracker)
        _wait_for("the helper process", lambda: len(_ours(marker)) >= 4)
        assert _leftovers(temp) != []
        cli.send_signal(signal.SIGKILL)
        cli.communicate(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == -signal.SIGKILL
    _nothing_left(marker, temp)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="process groups")
def test_twin_a_run_that_ends_leaves_nothing_either(tmp_path: Path) -> None:
    marker = f"finishes_{os.getpid()}.py"
    cli, temp = _start(tmp_path, marker, "--finish")
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    _nothing_left(marker, temp)


def test_stale_folders_of_dead_runs_are_removed(tmp_path: Path) -> None:
    from torchtrap.run.launcher import remove_stale_folders

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"torchtrap-run-{dead.pid}-abc"
    (stale / "events").mkdir(parents=True)
    (stale / "events" / "events-1.jsonl").write_text("{}\n")
    live = tmp_path / f"torchtrap-run-{os.getppid()}-def"  # a live process's run
    live.mkdir()
    other = tmp_path / "torchtrap-run-notapid"
    other.mkdir()
    assert remove_stale_folders(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_ctrl_c_waits_for_a_long_checkpoint_save(tmp_path: Path) -> None:
    """The save outlasts the 10 s the first round cut it off at; the run waits,
    says that a second Ctrl+C kills, and the checkpoint is written."""
    marker = f"saves_{os.getpid()}.py"
    cli, temp = _start(tmp_path, marker, "--save")
    try:
        sent = time.monotonic()
        cli.send_signal(signal.SIGINT)
        _wait_for("the save to start", lambda: (tmp_path / "saving").exists())
        # Past the old cut-off: no timer may end the save.
        _wait_for("11 s", lambda: time.monotonic() - sent > 11, 20)
        assert cli.poll() is None
        (tmp_path / "release").write_text("go")
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, err
    assert (tmp_path / "checkpoint.pt").exists()
    said = "waiting for the script to stop; Ctrl+C again kills it"
    assert said in err and err.index(said) < err.index("KeyboardInterrupt"), err
    _nothing_left(marker, temp)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_twin_a_second_ctrl_c_kills_the_save(tmp_path: Path) -> None:
    marker = f"killed_{os.getpid()}.py"
    cli, temp = _start(tmp_path, marker, "--save")
    try:
        cli.send_signal(signal.SIGINT)
        _wait_for("the save to start", lambda: (tmp_path / "saving").exists())
        cli.send_signal(signal.SIGINT)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 128 + signal.SIGKILL, err
    assert not (tmp_path / "checkpoint.pt").exists()
    import json

    notes = json.loads((tmp_path / "report.json").read_text())["notes"]
    assert any("the script was killed" in note for note in notes), notes
    _nothing_left(marker, temp)
