"""The language server under abuse, timed (tests/lsp/test_abuse.py checks
the behaviour; this measures it). Over real stdio with the real rules:

- storm: 200 didChange in ~2 s on a 5,000-line file; time from the last
  change to its diagnostics, and how many lints ran;
- big files: time to the first publish for a 5 MB / 100,000-line file (the
  maxFileSize notice) and for a 1 MB file linted anyway (maxFileSize 0), and
  for a minified one-line file;
- probe: didChange -> diagnostics on a 1,000-line file, idle vs while the
  CPU probe runs (p50/p95 of 30 edits);
- client death: stdin closed / the client's process id gone, while a probe
  runs, until the server and every process it started have exited.

    .venv/bin/python bench/lsp_abuse.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "server")]
os.environ["PYTHONPATH"] = str(ROOT / "server")

import psutil  # noqa: E402
from generate import generate_file  # noqa: E402

from tests.lsp.raw_client import RawClient  # noqa: E402

SERVER = [sys.executable, "-m", "torchtrap", "lsp"]
PITFALL = "w{i} = torch.log(torch.softmax(torch.randn(3), 0))\n"


def change(raw: RawClient, uri: str, version: int, line: int, text: str) -> None:
    pos = {"line": line, "character": 0}
    raw.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": pos, "end": pos}, "text": text}],
        },
    )


def published(raw: RawClient, uri: str, version: int, timeout: float = 120) -> float:
    raw.diagnostics(uri, version, timeout)
    return time.monotonic()


def lint_count(raw: RawClient) -> int:
    msg_id = raw.request("workspace/executeCommand", {"command": "torchtrap.debugInfo"})
    return int(raw.response(msg_id)["result"]["state"].get("lintCount", -1))


def storm(root: Path) -> dict[str, float]:
    raw = RawClient(SERVER, cwd=root)
    try:
        raw.initialize(root, debounceMs=150)
        text = generate_file(seed=7, lines=5000)
        uri = (root / "storm.py").as_uri()
        raw.open(uri, text)
        raw.diagnostics(uri, 1, 120)
        end = text.count("\n")
        for i in range(200):
            change(raw, uri, i + 2, end + i, PITFALL.format(i=i))
            time.sleep(0.01)
        last = time.monotonic()
        done = published(raw, uri, 201)
        return {"storm_final_ms": (done - last) * 1000}
    finally:
        raw.close()


def first_publish(root: Path, name: str, text: str, **options: object) -> float:
    raw = RawClient(SERVER, cwd=root)
    try:
        raw.initialize(root, **options)
        uri = (root / name).as_uri()
        start = time.monotonic()
        raw.open(uri, text)
        return (published(raw, uri, 1) - start) * 1000
    finally:
        raw.close()


def big_files(root: Path) -> dict[str, float]:
    huge = generate_file(seed=11, lines=100_000)
    huge = huge.replace("\n", " " * (5_000_000 // huge.count("\n") - 34) + "\n")
    one_mb = generate_file(seed=12, lines=28_000)
    stmts = [
        PITFALL.format(i=i).strip() if i % 50 == 0 else f"a{i} = b{i % 7} * {i} + len('xxxxxxxx')"
        for i in range(25_000)
    ]
    minified = "import torch\n" + "; ".join(stmts) + "\n"
    return {
        "huge_mb": len(huge) / 1e6,
        "huge_notice_ms": first_publish(root, "huge.py", huge),
        "one_mb_mb": len(one_mb) / 1e6,
        "one_mb_ms": first_publish(root, "one_mb.py", one_mb, maxFileSize=0),
        "minified_mb": len(minified) / 1e6,
        "minified_ms": first_publish(root, "min.py", minified),
    }


def start_probe(raw: RawClient) -> list[psutil.Process]:
    raw.request("workspace/executeCommand", {"command": "torchtrap.runProbe", "arguments": []})
    server = psutil.Process(raw.proc.pid)
    while not server.children(recursive=True):
        time.sleep(0.02)
    return [server, *server.children(recursive=True)]


def edit_latencies(raw: RawClient, uri: str, first_version: int, line: int) -> list[float]:
    out = []
    for i in range(30):
        version = first_version + i
        start = time.monotonic()
        change(raw, uri, version, line, "# edit\n")
        out.append((published(raw, uri, version) - start) * 1000)
    return out


def probe_latency(root: Path) -> dict[str, float]:
    raw = RawClient(SERVER, cwd=root)
    try:
        raw.initialize(root, debounceMs=0)
        uri = (root / "edit.py").as_uri()
        raw.open(uri, generate_file(seed=5, lines=1000))
        raw.diagnostics(uri, 1, 60)
        idle = edit_latencies(raw, uri, 2, 900)
        start_probe(raw)
        busy = edit_latencies(raw, uri, 32, 900)
        return {
            "idle_p50": statistics.median(idle),
            "idle_p95": sorted(idle)[int(0.95 * len(idle)) - 1],
            "probe_p50": statistics.median(busy),
            "probe_p95": sorted(busy)[int(0.95 * len(busy)) - 1],
        }
    finally:
        raw.close()


def death(root: Path, how: str) -> float:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    raw = RawClient(SERVER, cwd=root)
    try:
        raw.initialize(root, process_id=parent.pid)
        processes = start_probe(raw)
        time.sleep(1.0)  # let the probe get going (torch imported, workers up)
        processes += [p for p in processes[0].children(recursive=True) if p not in processes]
        start = time.monotonic()
        if how == "stdin":
            assert raw.proc.stdin is not None
            raw.proc.stdin.close()
        else:
            parent.kill()
            parent.wait()
        _, alive = psutil.wait_procs(processes, timeout=30)
        assert not alive, alive
        return (time.monotonic() - start) * 1000
    finally:
        parent.kill()
        parent.wait()
        raw.close()


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        results: dict[str, float] = {}
        results.update(storm(root))
        results.update(big_files(root))
        results.update(probe_latency(root))
        results["death_stdin_ms"] = death(root, "stdin")
        results["death_pid_ms"] = death(root, "pid")
    for key, value in results.items():
        print(f"{key:>18}: {value:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
