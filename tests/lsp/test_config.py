"""Configuration: initializationOptions, didChangeConfiguration (pushed or
pulled), the nearest pyproject.toml (re-read when it changes), precedence."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from lsprotocol import types

from tests.lsp.lsp_harness import session

SOURCE = "danger(1)\n"


def pyproject(folder: Path, table: str) -> None:
    path = folder / "pyproject.toml"
    path.write_text(f"[project]\nname = 'demo'\n\n[tool.torchtrap]\n{table}\n")
    # Make sure the change is visible by mtime even within one clock tick.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


async def test_pyproject_is_honoured_and_reread(root: Path) -> None:
    pyproject(root, 'ignore = ["TT901"]')
    sub = root / "pkg"
    sub.mkdir()
    pyproject(sub, 'severity = { TT901 = "error" }')
    async with session(root) as h:
        top = h.open("a.py", SOURCE)
        nested = h.open("pkg/b.py", SOURCE)
        assert await h.diagnostics(top, 1) == []
        (d,) = await h.diagnostics(nested, 1)  # the nearest pyproject wins
        assert d.severity == types.DiagnosticSeverity.Error

        pyproject(root, "select = []\n")
        mark = len(h.publishes)
        h.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent((root / "pyproject.toml").as_uri(), types.FileChangeType.Changed)]
            )
        )
        assert await h.diagnostics(top, 1, after=mark) == []  # select = [] selects nothing
        pyproject(root, 'select = ["TT9"]\n')
        mark = len(h.publishes)
        h.save(top)  # no file event at all: the mtime check still re-reads it
        # The index restarted by the file event may still publish its lint of
        # `select = []` after `mark`; the save's lint must follow it.
        await h.eventually(top, lambda ds: [d.code for d in ds] == ["TT901"], after=mark)


async def test_editor_settings_win_over_pyproject(root: Path) -> None:
    pyproject(root, 'severity = { TT901 = "error" }\nexclude = ["generated"]')
    async with session(root, settings={"severity": {"TT901": "Hint"}}) as h:
        uri = h.open("a.py", SOURCE)
        (d,) = await h.diagnostics(uri, 1)
        assert d.severity == types.DiagnosticSeverity.Hint
        (root / "generated").mkdir()
        excluded = h.open("generated/c.py", SOURCE)
        assert await h.diagnostics(excluded, 1) == []
        info = await h.command("torchtrap.debugInfo")
        assert info["configs"][uri]["pyproject"] == str(root / "pyproject.toml")
        assert info["configs"][excluded]["excluded"] is True
        assert "# TorchTrap debug info" in info["markdown"]


async def test_did_change_configuration_push_and_pull(root: Path) -> None:
    async with session(root, send_init_options=False, configuration={"": {}}) as h:
        uri = h.open("a.py", SOURCE)
        assert len(await h.diagnostics(uri, 1)) == 1
        # Pushed settings.
        mark = len(h.publishes)
        h.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchtrap": {"ignore": ["TT901"]}})
        )
        assert await h.diagnostics(uri, 1, after=mark) == []
        # Nothing useful pushed: the server pulls workspace/configuration.
        pulled = {"select": ["TT901"], "severity": {"TT9": "Error"}}
        h.client.set_configuration(pulled, section="torchtrap")
        mark = len(h.publishes)
        h.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        (d,) = await h.diagnostics(uri, 1, after=mark)
        assert d.severity == types.DiagnosticSeverity.Error
        # Disabling clears the squiggles.
        mark = len(h.publishes)
        h.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchtrap": {"enable": False}})
        )
        assert await h.diagnostics(uri, None, after=mark) == []
        await asyncio.sleep(0.1)
        assert all(not p.diagnostics for p in h.publishes[mark:])
