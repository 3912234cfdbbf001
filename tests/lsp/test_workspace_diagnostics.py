"""``torchtrap.diagnosticMode`` and *Check Workspace* over real LSP stdio:
in workspace mode a closed file's findings are published (with the
project's evidence), follow the file on disk and give way to the open
document's own lint; in openFilesOnly mode nothing of a closed file is."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import Harness, session

FLAT = Path(__file__).resolve().parents[1] / "projects" / "flat"
NOISY_RNG = 9  # 0-based line of `self.rng = ...` in datasets.py


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    target = tmp_path / "flat"
    shutil.copytree(FLAT, target)
    return target


async def _publish(
    h: Harness,
    uri: str,
    test: Callable[[list[types.Diagnostic]], bool],
    after: int = 0,
    timeout: float = 20,
) -> list[types.Diagnostic]:
    return await h.eventually(uri, test, after=after, timeout=timeout)


def _noisy_tt101(diags: list[types.Diagnostic]) -> bool:
    """TT101 on Noisy's generator, with train.py's DataLoader as evidence
    (the project index's: the file alone has no DataLoader)."""
    return any(
        d.code == "TT101" and d.range.start.line == NOISY_RNG and "train.py" in d.message
        for d in diags
    )


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def test_workspace_mode_publishes_a_closed_files_findings(flat: Path) -> None:
    datasets = (flat / "datasets.py").as_uri()
    async with session(flat, settings={"diagnosticMode": "workspace"}) as h:
        diags = await _publish(h, datasets, _noisy_tt101)
        assert all(p.version is None for p in h.publishes if p.uri == datasets)
        # Changed on disk (the rng moved into __getitem__'s reach: gone):
        # the published findings follow the file.
        text = (flat / "datasets.py").read_text()
        assert "self.rng = np.random.default_rng(0)" in text
        _write(flat / "datasets.py", text.replace("self.rng = np.random.default_rng(0)", "pass"))
        mark = len(h.publishes)
        h.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(datasets, types.FileChangeType.Changed)]
            )
        )
        await _publish(h, datasets, lambda d: not _noisy_tt101(d), after=mark)
        # Deleted: its findings go.
        mark = len(h.publishes)
        (flat / "datasets.py").unlink()
        h.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(datasets, types.FileChangeType.Deleted)]
            )
        )
        await _publish(h, datasets, lambda d: d == [], after=mark)
        assert diags


async def test_open_file_wins_and_closing_brings_the_disk_findings_back(flat: Path) -> None:
    datasets = (flat / "datasets.py").as_uri()
    text = (flat / "datasets.py").read_text()
    async with session(flat, settings={"diagnosticMode": "workspace"}) as h:
        await _publish(h, datasets, _noisy_tt101)
        # Opened with the bug removed (unsaved): the editor's text wins, and
        # no later disk publish brings the TT101 back while it is open.
        h.open(datasets, text.replace("self.rng = np.random.default_rng(0)", "pass"))
        await h.diagnostics(datasets, 1)
        await asyncio.sleep(1.0)
        last = h.last(datasets)
        assert last is not None and last.version == 1 and not _noisy_tt101(last.diagnostics)
        mark = len(h.publishes)
        h.close(datasets)
        await _publish(h, datasets, _noisy_tt101, after=mark)


async def test_open_files_only_publishes_nothing_for_closed_files(flat: Path) -> None:
    datasets = (flat / "datasets.py").as_uri()
    async with session(flat) as h:
        train = h.open("train.py", (flat / "train.py").read_text())
        await h.diagnostics(train, 1)
        await asyncio.sleep(1.0)
        assert [p.uri for p in h.publishes] and all(p.uri == train for p in h.publishes)
        # Check Workspace publishes once, in this mode too, and counts.
        result = await h.command("torchtrap.checkWorkspace")
        assert result["files"] == 5 and result["truncated"] == 0
        assert result["findings"] >= 1 and result["filesWithFindings"] >= 1
        diags = await _publish(h, datasets, _noisy_tt101)
        assert diags
        # Nothing for the open file from the disk.
        assert all(p.version == 1 for p in h.publishes if p.uri == train)


async def test_switching_back_to_open_files_only_clears_the_closed_files(flat: Path) -> None:
    datasets = (flat / "datasets.py").as_uri()
    async with session(flat, settings={"diagnosticMode": "workspace"}) as h:
        await _publish(h, datasets, _noisy_tt101)
        mark = len(h.publishes)
        h.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"torchtrap": {"debounceMs": 20, "diagnosticMode": "openFilesOnly"}}
            )
        )
        await _publish(h, datasets, lambda d: d == [], after=mark)
        info = await h.command("torchtrap.debugInfo")
        assert info["settings"]["diagnosticMode"] == "openFilesOnly"


async def test_an_unknown_mode_is_reported_and_ignored(flat: Path) -> None:
    async with session(flat, settings={"diagnosticMode": "everything"}) as h:
        info = await h.command("torchtrap.debugInfo")
        assert info["settings"]["diagnosticMode"] == "openFilesOnly"


async def test_the_index_cache_stays_out_of_the_workspace(
    flat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a folder adds no .torchtrap_cache/ to it: the editor passes
    its storage as cacheDirectory (else the user's cache directory)."""
    monkeypatch.delenv("TORCHTRAP_CACHE_DIR")
    storage = tmp_path / "storage"
    for i in range(70):  # enough modules for the indexing process and its cache
        (flat / f"filler_{i}.py").write_text(f"VALUE = {i}\n")
    async with session(flat, settings={"cacheDirectory": str(storage)}) as h:
        info = await h.command("torchtrap.debugInfo")
        assert info["projectIndex"]["files"] == 75
    assert not (flat / ".torchtrap_cache").exists()
    pickles = list(storage.rglob("check.pickle"))
    assert len(pickles) == 1 and pickles[0].relative_to(storage).parts[0].startswith("flat-")
    # Without cacheDirectory (another editor): the user's cache directory.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    async with session(flat) as h:
        assert (await h.command("torchtrap.debugInfo"))["projectIndex"]["files"] == 75
    assert not (flat / ".torchtrap_cache").exists()
    assert len(list((tmp_path / "xdg" / "torchtrap" / "lsp").glob("flat-*/*/check.pickle"))) == 1


async def test_check_workspace_results_go_when_workspace_mode_is_switched_off(flat: Path) -> None:
    """Started in workspace mode, Check Workspace run, then openFilesOnly:
    the closed files' findings are cleared (the mode at start counts)."""
    datasets = (flat / "datasets.py").as_uri()
    async with session(flat, settings={"diagnosticMode": "workspace"}) as h:
        await h.command("torchtrap.checkWorkspace")
        await _publish(h, datasets, _noisy_tt101)
        mark = len(h.publishes)
        h.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"torchtrap": {"debounceMs": 20, "diagnosticMode": "openFilesOnly"}}
            )
        )
        await _publish(h, datasets, lambda d: d == [], after=mark)


SERVER_DIR = Path(__file__).resolve().parents[2] / "server"


def _check(folder: Path) -> dict[str, set[tuple[str, int]]]:
    """`torchtrap check` on the folder: file name -> {(code, 0-based line)}."""
    proc = subprocess.run(
        [sys.executable, "-m", "torchtrap", "check", "--format", "json", "--no-cache"]
        + ["--exit-zero", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(SERVER_DIR)},
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, set[tuple[str, int]]] = {p.name: set() for p in folder.glob("*.py")}
    for f in json.loads(proc.stdout)["findings"]:
        out[Path(f["path"]).name].add((f["code"], f["range"]["start"]["line"] - 1))
    return out


async def _problems_equal_check(h: Harness, folder: Path, timeout: float = 30) -> None:
    """Waits until the last problems published for every file equal what
    `torchtrap check` says of the same files."""
    expected = _check(folder)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        shown = {}
        for name in expected:
            last = h.last((folder / name).as_uri())
            diags = last.diagnostics if last is not None else []
            shown[name] = {(str(d.code), d.range.start.line) for d in diags}
        if shown == expected:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"problems {shown} != check {expected}")
        await asyncio.sleep(0.05)


async def test_a_change_rechecks_the_closed_files_that_depend_on_it(flat: Path) -> None:
    """Workspace mode: setting num_workers=0 in train.py (open) clears the
    TT101 of the closed datasets.py, in the buffer already; saved, every
    file's problems equal `torchtrap check`; put back on disk with train.py
    closed (a git checkout), the TT101 comes back."""
    datasets = (flat / "datasets.py").as_uri()
    train_path = flat / "train.py"
    before = train_path.read_text()
    after = before.replace(
        "Noisy(), batch_size=2, num_workers=4", "Noisy(), batch_size=2, num_workers=0"
    )
    assert after != before
    async with session(flat, settings={"diagnosticMode": "workspace"}) as h:
        await _publish(h, datasets, _noisy_tt101)
        await _problems_equal_check(h, flat)
        train = h.open("train.py", before)
        await h.diagnostics(train, 1)
        mark = len(h.publishes)
        h.change(train, after)  # unsaved
        await _publish(h, datasets, lambda d: not _noisy_tt101(d), after=mark)
        train_path.write_text(after)
        h.save(train)
        await _problems_equal_check(h, flat)
        h.close(train)
        mark = len(h.publishes)
        train_path.write_text(before)
        h.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(train, types.FileChangeType.Changed)]
            )
        )
        await _publish(h, datasets, _noisy_tt101, after=mark)
        await _problems_equal_check(h, flat)
