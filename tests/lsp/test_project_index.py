"""The project index over real LSP stdio: rules see the other files of the
workspace, and open files are refreshed when a file they depend on changes
(in the editor, on disk, or broken by a syntax error)."""

from __future__ import annotations

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
SERVER = Path(__file__).resolve().parents[2] / "server"
# datasets.py: `self.rng = ...` of Noisy (0-based line), loaded with
# num_workers=4 in train.py.
NOISY_RNG = 9


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    target = tmp_path / "flat"
    shutil.copytree(FLAT, target)
    return target


async def _wait_for(
    h: Harness, uri: str, want: bool | None, after: int = 0, timeout: float = 20
) -> list[types.Diagnostic]:
    """The first diagnostics for ``uri`` published from ``after`` on that
    have a TT101 on Noisy's generator naming train.py's DataLoader
    (``want``), no TT101 there (not ``want``), or the single-file one that
    names no other file (None)."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        for publish in h.publishes[after:]:
            if publish.uri != uri:
                continue
            here = [
                d
                for d in publish.diagnostics
                if d.code == "TT101" and d.range.start.line == NOISY_RNG
            ]
            remote = any("train.py" in d.message for d in here)
            if (want and remote) or (want is False and not here) or (want is None and not remote):
                return publish.diagnostics
        if time.monotonic() > deadline:
            seen = [(p.uri.rsplit("/", 1)[-1], p.version) for p in h.publishes]
            raise AssertionError(f"no publish for {uri} with TT101={want}; got {seen}")
        await asyncio.sleep(0.02)


def _text(root: Path, name: str) -> str:
    return (root / name).read_text()


async def _open_and_clear(h: Harness, flat: Path) -> tuple[str, str, str]:
    """Open datasets.py and train.py, see the TT101 that names train.py's
    DataLoader, then set `num_workers=0` there (unsaved) and see it cleared:
    (datasets URI, train URI, train.py's original text)."""
    datasets = h.open("datasets.py", _text(flat, "datasets.py"))
    train_text = _text(flat, "train.py")
    train = h.open("train.py", train_text)
    await _wait_for(h, datasets, True)
    mark = len(h.publishes)
    h.change(train, train_text.replace("num_workers=4", "num_workers=0"))
    diags = await _wait_for(h, datasets, False, after=mark)
    assert not any(d.code == "TT103" for d in diags)  # the GPU tensor: same loader
    return datasets, train, train_text


async def test_other_files_dataloader_and_related_link(flat: Path) -> None:
    async with session(flat) as h:
        uri = h.open("datasets.py", _text(flat, "datasets.py"))
        diags = await _wait_for(h, uri, True)
        found = next(d for d in diags if d.code == "TT101" and d.range.start.line == NOISY_RNG)
        assert "train.py:5" in found.message
        related = found.related_information or []
        # The DataLoader in train.py first, then notes on the assignment here.
        assert related[0].location.uri == (flat / "train.py").as_uri()
        assert {r.location.uri for r in related[1:]} <= {uri}
        assert related[0].location.range.start.line == 4  # train.py:5, 0-based
        reports = [v for values in h.client.progress_reports.values() for v in values]
        begins = [v for v in reports if isinstance(v, types.WorkDoneProgressBegin)]
        assert any((b.message or "").startswith("Indexing 5 files") for b in begins)


async def test_the_hover_shows_where_the_value_comes_from(flat: Path) -> None:
    # Issue 32: a finding resting on another file says where, in the hover too:
    # each related place as a link that opens at its line.
    async with session(flat) as h:
        uri = h.open("datasets.py", _text(flat, "datasets.py"))
        diags = await _wait_for(h, uri, True)
        found = next(d for d in diags if d.code == "TT101" and d.range.start.line == NOISY_RNG)
        hover = await h.hover(uri, NOISY_RNG, found.range.start.character + 1)
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        value = hover.contents.value
        assert "Where it comes from:\n- [train.py:5](" in value, value
        train_uri = (flat / "train.py").as_uri()
        first = (found.related_information or [])[0]
        assert f"]({train_uri}#L5): {first.message}" in value
        # A place without a finding has no hover.
        assert await h.hover(uri, 0, 0) is None


async def test_editing_an_open_file_refreshes_its_dependents(flat: Path) -> None:
    async with session(flat) as h:
        datasets, train, train_text = await _open_and_clear(h, flat)
        # ...and back: the squiggle returns.
        mark = len(h.publishes)
        h.change(train, train_text)
        await _wait_for(h, datasets, True, after=mark)


async def test_a_dependent_being_edited_is_still_refreshed(flat: Path) -> None:
    """A document typed in when another file changes is re-linted after a
    short grace instead of at once (its next keystroke need not wait for
    that lint): the refresh still comes, with no further keystroke."""
    async with session(flat) as h:
        datasets, train, train_text = await _open_and_clear(h, flat)
        datasets_text = _text(flat, "datasets.py")
        h.change(datasets, datasets_text + "\n")  # typing in datasets.py...
        mark = len(h.publishes)
        h.change(train, train_text)  # ...as train.py gets its workers back
        diags = await _wait_for(h, datasets, True, after=mark)
        assert any(d.code == "TT101" and "train.py:5" in d.message for d in diags)


async def test_a_file_linked_through_a_third_one_is_refreshed(flat: Path) -> None:
    """losses.py and models.py do not import each other: train.py passes the
    Discriminator's output (it ends in nn.Sigmoid) to losses.bce, which takes
    its log (TT201). Editing the Sigmoid away in models.py must republish
    losses.py without that TT201, and putting it back must bring it back."""

    def bce_tt201(diags: list[types.Diagnostic]) -> bool:
        return any(d.code == "TT201" and d.range.start.line == 5 for d in diags)

    async def published(uri: str, want: bool, after: int) -> None:
        import asyncio
        import time

        deadline = time.monotonic() + 20
        while not any(
            p.uri == uri and bce_tt201(p.diagnostics) == want for p in h.publishes[after:]
        ):
            if time.monotonic() > deadline:
                raise AssertionError(f"losses.py never republished with TT201={want}")
            await asyncio.sleep(0.02)

    async with session(flat) as h:
        losses = h.open("losses.py", _text(flat, "losses.py"))
        models_text = _text(flat, "models.py")
        models = h.open("models.py", models_text)
        await published(losses, True, 0)
        mark = len(h.publishes)
        h.change(models, models_text.replace(", nn.Sigmoid())", ")"))
        await published(losses, False, mark)
        mark = len(h.publishes)
        h.change(models, models_text)
        await published(losses, True, mark)


async def test_workspace_folders_added_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder added to a multi-root workspace joins the index (its open
    files get the other files' evidence) and keeps its own cache, in the
    editor's storage (not in the folder); removed, its files are linted alone."""
    monkeypatch.delenv("TORCHTRAP_CACHE_DIR")
    first, second = tmp_path / "first", tmp_path / "second"
    storage = tmp_path / "storage"
    shutil.copytree(FLAT, first)
    shutil.copytree(FLAT, second)
    async with session(first, settings={"cacheDirectory": str(storage)}) as h:
        datasets = h.open((second / "datasets.py").as_uri(), (second / "datasets.py").read_text())
        await _wait_for(h, datasets, None)  # outside the workspace: alone
        folder = types.WorkspaceFolder(second.as_uri(), "second")
        mark = len(h.publishes)
        h.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(added=[folder], removed=[])
            )
        )
        await _wait_for(h, datasets, True, after=mark)
        for folder_path in (first, second):
            assert not (folder_path / ".torchtrap_cache").exists(), folder_path
            caches = list(storage.glob(f"{folder_path.name}-*/*/check.pickle"))
            assert len(caches) == 1, (folder_path, list(storage.rglob("*")))
        mark = len(h.publishes)
        h.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(added=[], removed=[folder])
            )
        )
        await _wait_for(h, datasets, None, after=mark)


async def _published(
    h: Harness, uri: str, test: Callable[[list[types.Diagnostic]], bool], after: int = 0
) -> None:
    """Wait for a publish for ``uri`` (from ``after`` on) passing ``test``."""
    import asyncio
    import time

    deadline = time.monotonic() + 20
    while not any(p.uri == uri and test(p.diagnostics) for p in h.publishes[after:]):
        if time.monotonic() > deadline:
            seen = [
                (p.uri.rsplit("/", 1)[-1], [d.code for d in p.diagnostics]) for p in h.publishes
            ]
            raise AssertionError(f"no matching publish for {uri}; got {seen}")
        await asyncio.sleep(0.02)


async def test_a_notebook_is_linted_with_the_project(flat: Path) -> None:
    """A notebook is not indexed (nothing imports it) but sees the modules it
    imports: the Discriminator it builds ends in nn.Sigmoid (models.py), so
    its log is TT201; editing the Sigmoid away in models.py clears it."""
    from tests.lsp.test_notebooks import Notebook

    def has_tt201(diags: list[types.Diagnostic]) -> bool:
        return any(d.code == "TT201" for d in diags)

    async with session(flat) as h:
        nb = Notebook(
            h,
            flat / "explore.ipynb",
            [
                ("code", "import torch\nfrom models import Discriminator"),
                ("code", "disc = Discriminator()\nscore = torch.log(disc(torch.randn(2, 4)))"),
            ],
        )
        cell = nb.uri_of(1)
        await _published(h, cell, has_tt201)
        models_text = _text(flat, "models.py")
        models = h.open("models.py", models_text)
        mark = len(h.publishes)
        h.change(models, models_text.replace(", nn.Sigmoid())", ")"))
        await _published(h, cell, lambda d: not has_tt201(d), after=mark)


async def test_python_files_are_watched(flat: Path) -> None:
    async with session(flat) as h:
        (watch,) = [
            r for r in h.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        ]
        options = watch.register_options
        patterns = {w["globPattern"] for w in options["watchers"]}  # type: ignore[index]
        assert patterns == {"**/*.py", "**/pyproject.toml"}


@pytest.mark.parametrize("deleted", [False, True])
async def test_a_closed_file_changed_on_disk(flat: Path, deleted: bool) -> None:
    async with session(flat) as h:
        datasets = h.open("datasets.py", _text(flat, "datasets.py"))
        await _wait_for(h, datasets, True)
        train = flat / "train.py"
        if deleted:
            train.unlink()
        else:
            train.write_text(train.read_text().replace("num_workers=4", "num_workers=0"))
        kind = types.FileChangeType.Deleted if deleted else types.FileChangeType.Changed
        mark = len(h.publishes)
        h.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([types.FileEvent(train.as_uri(), kind)])
        )
        # Deleted: the DataLoader is gone, and TT101 says what a single file shows.
        diags = await _wait_for(h, datasets, None if deleted else False, after=mark)
        if deleted:
            assert any("no DataLoader visible" in d.message for d in diags if d.code == "TT101")


async def test_a_syntax_error_keeps_the_last_good_summary(flat: Path) -> None:
    async with session(flat, settings={"showSyntaxErrors": True}) as h:
        datasets_text = _text(flat, "datasets.py")
        datasets = h.open("datasets.py", datasets_text)
        train_text = _text(flat, "train.py")
        train = h.open("train.py", train_text)
        await _wait_for(h, datasets, True)
        # Broken mid-edit, with the loader gone: the last good summary stays.
        broken = train_text.replace("num_workers=4)", "num_workers=0").replace(
            "train = DataLoader", "train = (DataLoader"
        )
        version = h.change(train, broken)
        assert any(d.code == "TT000" for d in await h.diagnostics(train, version))
        version = h.change(datasets, datasets_text + "\n# touched\n")
        diags = await h.diagnostics(datasets, version)
        assert any(
            d.code == "TT101" and d.range.start.line == NOISY_RNG and "train.py:5" in d.message
            for d in diags
        )
        # Once it parses again, its new summary counts.
        mark = len(h.publishes)
        h.change(train, train_text.replace("num_workers=4", "num_workers=0"))
        await _wait_for(h, datasets, False, after=mark)


async def test_closing_an_edited_file_restores_the_disk_version(flat: Path) -> None:
    async with session(flat) as h:
        datasets, train, _ = await _open_and_clear(h, flat)
        mark = len(h.publishes)
        h.close(train)  # unsaved: the file on disk still has num_workers=4
        await _wait_for(h, datasets, True, after=mark)


async def test_a_lone_file_outside_any_project_still_linted(tmp_path: Path) -> None:
    # Near miss: no workspace folder to index; the file is linted alone.
    text = _text(FLAT, "datasets.py")
    async with session(tmp_path) as h:
        uri = h.open("datasets.py", text)
        diags = await h.diagnostics(uri, 1)
        tt101 = [d for d in diags if d.code == "TT101" and d.range.start.line == NOISY_RNG]
        assert tt101 and "no DataLoader visible here" in tt101[0].message


async def test_a_large_workspace_is_indexed_in_a_process_and_cached(
    flat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough modules for the indexing process (and its cache) to be used.
    cache = flat.parent / "cache"
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(cache))
    for i in range(70):
        (flat / f"filler_{i}.py").write_text(f"from datasets import Noisy\n\nVALUE = {i}\n")
    async with session(flat) as h:
        datasets = h.open("datasets.py", _text(flat, "datasets.py"))
        await _wait_for(h, datasets, True)
        info = await h.command("torchtrap.debugInfo")
        assert info["projectIndex"]["files"] == 75
    assert any(cache.rglob("check.pickle"))
    # `torchtrap check` reads the cache the server wrote: same output as without it.
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    cached, fresh = (
        subprocess.run(
            [sys.executable, "-m", "torchtrap", "check", "--exit-zero", *extra, "."],
            cwd=flat,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        for extra in ([], ["--no-cache"])
    )
    assert "TT101" in cached.stdout and cached.stdout == fresh.stdout
    assert "cache" not in cached.stderr


async def test_folders_changed_while_indexing(tmp_path: Path) -> None:
    """Two folders added one right after the other: the first rebuild is
    superseded (its indexing process stopped) and the index ends with all
    three folders; its progress ends, and no warning is shown."""
    folders = []
    for name in ("first", "second", "third"):
        folder = tmp_path / name
        shutil.copytree(FLAT, folder)
        for i in range(70):  # enough for the indexing process
            (folder / f"filler_{i}.py").write_text(f"from datasets import Noisy\n\nVALUE = {i}\n")
        folders.append(folder)
    first, second, third = folders
    async with session(first) as h:
        datasets = h.open((third / "datasets.py").as_uri(), (third / "datasets.py").read_text())
        await _wait_for(h, datasets, None)
        mark = len(h.publishes)
        for folder in (second, third):
            h.client.workspace_did_change_workspace_folders(
                types.DidChangeWorkspaceFoldersParams(
                    types.WorkspaceFoldersChangeEvent(
                        added=[types.WorkspaceFolder(folder.as_uri(), folder.name)], removed=[]
                    )
                )
            )
        await _wait_for(h, datasets, True, after=mark)
        info = await h.command("torchtrap.debugInfo")
        assert info["projectIndex"]["files"] == 3 * 75
        assert not [m for m in h.client.messages if "indexing" in m.message.lower()]
        reports = [v for values in h.client.progress_reports.values() for v in values]
        begins = [v for v in reports if isinstance(v, types.WorkDoneProgressBegin)]
        ends = [v for v in reports if isinstance(v, types.WorkDoneProgressEnd)]
        assert len(begins) == len(ends)


async def test_a_new_file_joins_the_project(flat: Path) -> None:
    async with session(flat) as h:
        # Created after the index was built, not saved yet: its DataLoader counts.
        datasets = h.open("datasets.py", _text(flat, "datasets.py"))
        await _wait_for(h, datasets, True)
        mark = len(h.publishes)
        loader = h.open(
            "more.py",
            "from torch.utils.data import DataLoader\n"
            "from datasets import Noisy\n\n"
            "extra = DataLoader(Noisy(), num_workers=8)\n",
        )
        await h.diagnostics(loader, 1)
        h.change(datasets, _text(flat, "datasets.py") + "\n")
        diags = await h.diagnostics(datasets, 2, after=mark)
        (tt101,) = [d for d in diags if d.code == "TT101" and d.range.start.line == NOISY_RNG]
        related = {r.location.uri for r in tt101.related_information or []}
        assert (flat / "more.py").as_uri() in related


CHAIN = {
    # losses.py takes the log of what its callers pass; train.py passes
    # helpers.make(z), which helpers.py re-exports from nets.py, where it is
    # a sigmoid. No import links losses.py with nets.py or helpers.py, nor
    # does one module import both: only the value layer's edges do.
    "losses.py": "import torch\n\n\ndef nll(p, y):\n    return -(y * torch.log(p)).mean()\n",
    "nets.py": "import torch\n\n\ndef make(z):\n    return torch.sigmoid(z)\n",
    "helpers.py": 'from nets import make\n\n__all__ = ["make"]\n',
    "train.py": (
        "import helpers\nfrom losses import nll\n\n\ndef step(z, y):\n"
        "    return nll(helpers.make(z), y)\n"
    ),
}


async def test_a_finding_three_files_away_is_refreshed(tmp_path: Path) -> None:
    """losses.py's TT201 rests on nets.py's sigmoid, reached through
    train.py's call and helpers.py's re-export: editing nets.py (the clamp
    guards it) republishes losses.py without the finding, and undoing the
    edit brings it back, though neither imports the other."""
    for name, text in CHAIN.items():
        (tmp_path / name).write_text(text)

    def log_of_sigmoid(diags: list[types.Diagnostic]) -> bool:
        return any(d.code == "TT201" and "train.py:6" in d.message for d in diags)

    async def published(uri: str, want: bool, after: int) -> None:
        import asyncio
        import time

        deadline = time.monotonic() + 20
        while not any(
            p.uri == uri and log_of_sigmoid(p.diagnostics) == want for p in h.publishes[after:]
        ):
            if time.monotonic() > deadline:
                raise AssertionError(f"losses.py never republished with TT201={want}")
            await asyncio.sleep(0.02)

    async with session(tmp_path) as h:
        losses = h.open("losses.py", CHAIN["losses.py"])
        nets = h.open("nets.py", CHAIN["nets.py"])
        await published(losses, True, 0)
        mark = len(h.publishes)
        h.change(nets, CHAIN["nets.py"].replace("sigmoid(z)", "sigmoid(z).clamp(1e-6, 1)"))
        await published(losses, False, mark)
        mark = len(h.publishes)
        h.change(nets, CHAIN["nets.py"])
        await published(losses, True, mark)
