"""The language server under abuse, over real stdio: an edit storm, huge
and minified files, malformed and out-of-protocol messages, and a client
that dies (stdin closed, or its process gone) while a probe runs. Timing is
measured in bench/lsp_abuse.py; the waits here only guard against hangs."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from lsprotocol import types

from tests.lsp.lsp_harness import Harness, session
from tests.lsp.raw_client import RawClient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from generate import generate_file  # noqa: E402

PITFALL = "w{i} = torch.log(torch.softmax(torch.randn(3), 0))"
SKIPPED = "skipped: file larger than `torchtrap.maxFileSize`"


def check_diagnostics(root: Path, name: str, text: str) -> list[tuple[int, int, str, str]]:
    """What `torchtrap check` reports for ``text``, in LSP coordinates (the
    files here are ASCII: code points are UTF-16 units)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    proc = subprocess.run(
        [sys.executable, "-m", "torchtrap", "check", "--format", "json", "--exit-zero", "-"]
        + ["--stdin-filename", str(root / name)],
        input=text,
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        check=True,
    )
    return sorted(
        (f["range"]["start"]["line"] - 1, f["range"]["start"]["column"], f["code"], f["message"])
        for f in json.loads(proc.stdout)["findings"]
    )


def as_tuples(diagnostics: list[types.Diagnostic]) -> list[tuple[int, int, str, str]]:
    return sorted(
        (d.range.start.line, d.range.start.character, str(d.code), d.message) for d in diagnostics
    )


def insert_line(h: Harness, uri: str, line: int, text: str) -> int:
    pos = types.Position(line, 0)
    return h.edit(uri, [types.TextEdit(types.Range(pos, pos), text + "\n")])


def delete_line(h: Harness, uri: str, line: int) -> int:
    rng = types.Range(types.Position(line, 0), types.Position(line + 1, 0))
    return h.edit(uri, [types.TextEdit(rng, "")])


async def test_change_storm_ends_with_the_final_texts_diagnostics(root: Path) -> None:
    text = generate_file(seed=7, lines=5000)
    rnd = random.Random(7)
    async with session(root) as h:
        uri = h.open("storm.py", text)
        await h.diagnostics(uri, 1)
        end = len(text.split("\n")) - 1  # module level: after the last line
        inserted: list[int] = []
        for i in range(200):  # 200 edits in about 2 s
            roll = rnd.random()
            if roll < 0.5 or not inserted:
                version = insert_line(h, uri, end, PITFALL.format(i=i))
                inserted.append(end)
                end += 1
            elif roll < 0.8:
                end -= 1
                inserted.pop()
                version = delete_line(h, uri, end)
            else:  # a keystroke in a comment somewhere in the middle
                line = rnd.randrange(0, end)
                current = h.texts[uri].split("\n")[line]
                pos = types.Position(line, len(current))
                version = h.edit(uri, [types.TextEdit(types.Range(pos, pos), "  # x")])
            await asyncio.sleep(0.01)
        final = await h.diagnostics(uri, version, timeout=60)
        expected = check_diagnostics(root, "storm.py", h.texts[uri])
        assert as_tuples(final) == expected
        assert sum(1 for d in final if d.code == "TT201") >= 1
        count = len(h.publishes)
        await asyncio.sleep(0.5)
        stale = [p.version for p in h.publishes[count:] if p.uri == uri and p.version != version]
        assert not stale
        assert h.last(uri) is not None and h.last(uri).version == version  # type: ignore[union-attr]


def huge_text(lines: int = 100_000, size: int = 5_000_000) -> str:
    text = generate_file(seed=11, lines=lines)
    pad = max(0, size - len(text)) // text.count("\n") + 1
    return text.replace("\n", " " * pad + "\n") if pad > 1 else text


async def test_huge_file_gets_one_notice_and_the_server_keeps_serving(root: Path) -> None:
    text = huge_text()
    assert len(text) >= 5_000_000 and text.count("\n") >= 100_000
    async with session(root) as h:
        uri = h.open("huge.py", text)
        (notice,) = await h.diagnostics(uri, 1, timeout=30)
        assert SKIPPED in notice.message and "MB" in notice.message
        version = insert_line(h, uri, 0, "# edited")
        assert [d.message for d in await h.diagnostics(uri, version, timeout=30)] == [
            notice.message
        ]
        assert await h.code_actions(uri, 0) == []
        small = h.open("small.py", "import torch\ny = torch.log(torch.softmax(x, 0))\n")
        assert [d.code for d in await h.diagnostics(small, 1, timeout=30)] == ["TT201"]


async def test_max_file_size_setting(root: Path) -> None:
    text = "import torch\n" + "".join(PITFALL.format(i=i) + "\n" for i in range(40))
    async with session(root, settings={"maxFileSize": 1000}) as h:
        uri = h.open("m.py", text)
        (notice,) = await h.diagnostics(uri, 1)
        assert SKIPPED in notice.message
    async with session(root, settings={"maxFileSize": 0}) as h:  # 0: no limit
        uri = h.open("m.py", text)
        assert len(await h.diagnostics(uri, 1)) == 40


async def test_minified_one_line_file(root: Path) -> None:
    statements = [
        PITFALL.format(i=i) if i % 50 == 0 else f"a{i} = b{i % 7} * {i} + len('{'x' * 20}')"
        for i in range(4000)
    ]
    text = "import torch\n" + "; ".join(statements) + "\n"
    async with session(root) as h:
        uri = h.open("min.py", text)
        got = await h.diagnostics(uri, 1, timeout=60)
        assert as_tuples(got) == check_diagnostics(root, "min.py", text)
        assert len(got) == 80


@pytest.fixture
def raw(root: Path) -> Iterator[RawClient]:
    client = RawClient(cwd=root)
    try:
        yield client
    finally:
        client.close()


def _error(message: dict[str, Any]) -> int | None:
    return message.get("error", {}).get("code")


def test_malformed_and_out_of_protocol_messages(raw: RawClient, root: Path) -> None:
    raw.initialize(root)
    uri = (root / "a.py").as_uri()
    text = "import torch\ny = torch.log(torch.softmax(x, 0))\n"

    raw.write_body(b'{"jsonrpc": "2.0", "id": 1, "method": ')  # not JSON
    first = raw.wait_for(lambda m: _error(m) == -32700)
    assert first["id"] is None
    raw.write_body(b'{"jsonrpc": "2.0", "method": "\xff\xfe"}')  # not UTF-8
    raw.wait_for(lambda m: _error(m) == -32700 and m is not first)
    raw.write_body(b"[1, 2, 3]")  # JSON, but no JSON-RPC message
    assert raw.wait_for(lambda m: _error(m) == -32600)["id"] is None

    unknown = raw.request("torchtrap/noSuchMethod", {})
    assert _error(raw.response(unknown)) == -32601  # MethodNotFound
    raw.notify("torchtrap/noSuchNotification", {})  # silence
    raw.notify("$/noSuchThing", {})

    bad = raw.request("textDocument/hover", {"textDocument": 42, "position": "here"})
    assert _error(raw.response(bad)) in (-32602, -32603)  # answered, not left hanging
    raw.notify("textDocument/didChange", {"bogus": True})  # a bad notification: dropped

    never = (root / "never.py").as_uri()
    raw.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": never, "version": 2}, "contentChanges": [{"text": "x"}]},
    )

    raw.open(uri, text)
    assert [d["code"] for d in raw.diagnostics(uri, 1)] == ["TT201"]
    # A range far outside the document: clamped to its end (an append).
    far = {"start": {"line": 10_000, "character": 99}, "end": {"line": 10_001, "character": 0}}
    raw.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": far, "text": "z = torch.log(torch.sigmoid(x))\n"}],
        },
    )
    assert [d["range"]["start"]["line"] for d in raw.diagnostics(uri, 2)] == [1, 2]

    # Actions asked for with diagnostics of an old version: answered for the
    # current text; a stale resolve comes back unchanged.
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    actions = raw.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": whole,
            "context": {"diagnostics": raw.diagnostics(uri, 1)},
        },
    )
    titles = [a["title"] for a in raw.response(actions)["result"]]
    assert any("log_softmax" in t for t in titles)
    stale = {"title": "old", "data": {"key": uri, "version": 1, "index": 0}}
    resolved = raw.response(raw.request("codeAction/resolve", stale))
    assert resolved["result"]["title"] == "old" and "edit" not in resolved["result"]

    # $/cancelRequest mid-request: a response (result or RequestCancelled) comes.
    raw.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": text * 400}]},
    )
    pending = raw.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": []}},
    )
    raw.notify("$/cancelRequest", {"id": pending})
    answer = raw.response(pending)
    assert "result" in answer or _error(answer) == -32800

    # Still serving.
    hover = raw.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 12}},
    )
    assert "result" in raw.response(hover)
    assert raw.proc.poll() is None


def _start_probe(raw: RawClient, root: Path) -> list[psutil.Process]:
    """Start the CPU probe and return the server and the processes it started."""
    raw.request("workspace/executeCommand", {"command": "torchtrap.runProbe", "arguments": []})
    server = psutil.Process(raw.proc.pid)
    deadline = time.monotonic() + 60
    while not server.children(recursive=True):
        assert time.monotonic() < deadline, "the probe started no process"
        time.sleep(0.05)
    # Edits while the probe runs still get their diagnostics.
    uri = (root / "busy.py").as_uri()
    raw.open(uri, "import torch\ny = torch.log(torch.softmax(x, 0))\n")
    assert [d["code"] for d in raw.diagnostics(uri, 1)] == ["TT201"]
    return [server, *server.children(recursive=True)]


def _assert_all_exit(processes: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(processes, timeout=2)  # the bound: no orphans
    assert not alive, alive


@pytest.mark.slow
def test_stdin_closed_ends_server_and_probe(raw: RawClient, root: Path) -> None:
    raw.initialize(root)
    processes = _start_probe(raw, root)
    assert raw.proc.stdin is not None
    raw.proc.stdin.close()
    _assert_all_exit(processes)


@pytest.mark.slow
def test_client_process_gone_ends_server_and_probe(raw: RawClient, root: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        raw.initialize(root, process_id=parent.pid)
        processes = _start_probe(raw, root)
    finally:
        parent.kill()
        parent.wait()
    _assert_all_exit(processes)  # stdin stays open: the process id alone tells


def _apply_lsp_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Client side, independent of the server: LSP lines end at "\\r\\n",
    "\\r" or "\\n"; ASCII text, so characters are string indices."""
    starts, i = [0], 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1 : i + 2] == "\n":
            i += 1
        if text[i] in "\r\n":
            starts.append(i + 1)
        i += 1

    def offset(pos: dict[str, int]) -> int:
        return starts[pos["line"]] + pos["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        rng = edit["range"]
        text = text[: offset(rng["start"])] + edit["newText"] + text[offset(rng["end"]) :]
    return text


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_lone_cr_positions_and_fix(raw: RawClient, root: Path, ending: str) -> None:
    # Lone "\r" ends a line for LSP and for Python: the finding is on line 3
    # (0-based), and its fix lands there, keeping the file's line endings.
    resolve = {"codeAction": {"resolveSupport": {"properties": ["edit"]}, "dataSupport": True}}
    raw.initialize(root, capabilities={"textDocument": resolve})
    lines = ["import torch", "", "def f(x):", "    return torch.log(torch.softmax(x, 0))", ""]
    text = ending.join(lines)
    uri = (root / "cr.py").as_uri()
    raw.open(uri, text)
    (diagnostic,) = raw.diagnostics(uri, 1)
    assert diagnostic["range"]["start"] == {"line": 3, "character": 11}
    msg_id = raw.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic], "only": ["quickfix"]},
        },
    )
    (action, *_) = raw.response(msg_id)["result"]
    action = raw.response(raw.request("codeAction/resolve", action))["result"]
    edits = [e for edits in action["edit"].get("changes", {}).values() for e in edits]
    for change in action["edit"].get("documentChanges", []):
        edits += change["edits"]
    fixed = _apply_lsp_edits(text, edits)
    assert fixed == text.replace("torch.log(torch.softmax(x, 0))", "torch.log_softmax(x, 0)")
