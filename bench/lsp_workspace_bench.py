"""Workspace diagnostics (``diagnosticMode: "workspace"``) on a real
project, through a real LSP client over stdio, as an editor sees it.

For each corpus folder (read in place: the index cache goes to a temporary
``cacheDirectory``, nothing is written into the folder), measured with
``debounceMs: 0``:

- index ready: ``initialized`` to the end of "Indexing N files";
- full pass: ``torchtrap.checkWorkspace`` right after, nothing else
  running: every indexed file linted and its findings published; its
  counts (files, files with findings, findings);
- re-check: the same while the open file below is edited non-stop;
- didChange → publishDiagnostics of an open 5,000-line file while that
  re-check runs, against the same edits with nothing else running (the
  workspace pass waits while the open file is linted or edited).

    .venv/bin/python bench/lsp_workspace_bench.py CORPUS/timm CORPUS/detectron2
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "server")]

from lsp_index_bench import Recorder, big_file, edit, until  # noqa: E402
from lsp_latency import open_doc, percentile  # noqa: E402


async def start(root: Path, cache: Path) -> tuple[LanguageClient, Recorder, float]:
    client = LanguageClient("torchtrap-bench", "1")
    recorder = Recorder()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        now = time.perf_counter()
        recorder.published[(params.uri, params.version)] = now
        recorder.diagnostics.setdefault(params.uri, []).append((now, list(params.diagnostics)))
        recorder.event.set()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def on_create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def on_progress(params: types.ProgressParams) -> None:
        value = params.value
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if kind == "end":
            recorder.index_end = time.perf_counter()
            recorder.event.set()

    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    await client.start_io(sys.executable, "-m", "torchtrap.lsp")
    window = types.WindowClientCapabilities(work_done_progress=True)
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(window=window),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(root.as_uri(), "bench")],
        initialization_options={
            "debounceMs": 0,
            "diagnosticMode": "workspace",
            "cacheDirectory": str(cache),
        },
    )
    await client.initialize_async(params)
    started = time.perf_counter()
    client.initialized(types.InitializedParams())
    return client, recorder, started


async def edits(
    client: LanguageClient, recorder: Recorder, uri: str, first: int, n: int
) -> list[float]:
    lines = big_file().split("\n")
    line = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].strip())
    out = []
    for version in range(first, first + n):
        sent = time.perf_counter()
        edit(client, uri, version, line, len(lines[line]))
        await until(recorder, lambda v=version: (uri, v) in recorder.published)
        out.append((recorder.published[(uri, version)] - sent) * 1000)
    return out


async def measure(folder: Path, runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="torchtrap-wsbench-") as tmp:
        client, recorder, started = await start(folder, Path(tmp))
        try:
            await until(recorder, lambda: recorder.index_end is not None, timeout=600)
            assert recorder.index_end is not None
            ready = recorder.index_end - started
            # A full pass (it restarts the one the index started), nothing else running.
            t0 = time.perf_counter()
            info = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="torchtrap.checkWorkspace")
            )
            published = time.perf_counter() - t0
            uri = (Path(tmp) / "bench_5000.py").as_uri()  # outside the workspace
            open_doc(client, uri, big_file())
            await until(recorder, lambda: (uri, 1) in recorder.published)
            idle = await edits(client, recorder, uri, 2, runs)
            t0 = time.perf_counter()
            check = asyncio.ensure_future(
                client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command="torchtrap.checkWorkspace")
                )
            )
            during: list[float] = []
            version = 2 + runs
            while not check.done():
                during += await edits(client, recorder, uri, version, 1)
                version += 1
            await check
            recheck = time.perf_counter() - t0
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
    return {
        "folder": folder.name,
        "files": info["files"],
        "with_findings": info["filesWithFindings"],
        "findings": info["findings"],
        "ready_s": ready,
        "published_s": published,
        "recheck_s": recheck,
        "idle_p50": percentile(idle, 50),
        "idle_p95": percentile(idle, 95),
        "during_p50": percentile(during, 50) if during else float("nan"),
        "during_p95": percentile(during, 95) if during else float("nan"),
        "during_n": len(during),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=20, help="idle edits to time")
    args = parser.parse_args()
    print(
        "| project | files | with findings | findings | index ready | full pass |"
        " re-check | didChange idle p50/p95 | during re-check p50/p95 (n) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in args.folders:
        r = asyncio.run(measure(folder.resolve(), args.runs))
        print(
            f"| {r['folder']} | {r['files']} | {r['with_findings']} | {r['findings']} |"
            f" {r['ready_s']:.1f} s | {r['published_s']:.1f} s | {r['recheck_s']:.1f} s |"
            f" {r['idle_p50']:.0f}/{r['idle_p95']:.0f} ms |"
            f" {r['during_p50']:.0f}/{r['during_p95']:.0f} ms ({r['during_n']}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
