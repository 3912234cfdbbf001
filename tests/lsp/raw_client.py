"""A bare JSON-RPC client over the server's real stdio, for what a proper
client library will not send: malformed bodies, wrong params, unknown
methods, a client that vanishes. Messages are plain dicts."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.lsp.lsp_harness import SERVER


class RawClient:
    def __init__(self, command: list[str] = SERVER, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    # -- wire --------------------------------------------------------------
    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            if length is None:
                continue
            self.inbox.put(json.loads(stream.read(length)))

    def write_body(self, body: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write_body(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    # -- waiting -------------------------------------------------------------
    def wait_for(self, match: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The first message (seen before or arriving) for which ``match`` is true;
        answers the server's own requests (registration, configuration) with null."""
        for message in self.seen:
            if match(message):
                return message
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                kinds = [m.get("method") or m.get("id") for m in self.seen]
                raise AssertionError(f"no matching message within {timeout} s; got {kinds}")
            try:
                message = self.inbox.get(timeout=min(left, 0.1))
            except queue.Empty:
                continue
            self.seen.append(message)
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": None})
            if match(message):
                return message

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout)

    def diagnostics(self, uri: str, version: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        message = self.wait_for(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            ),
            timeout,
        )
        return message["params"]["diagnostics"]

    # -- session -------------------------------------------------------------
    def initialize(
        self,
        root: Path,
        process_id: int | None = None,
        capabilities: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        msg_id = self.request(
            "initialize",
            {
                "processId": process_id,
                "rootUri": root.as_uri(),
                "capabilities": capabilities or {},
                "initializationOptions": {"debounceMs": 20, **options},
            },
        )
        assert "result" in self.response(msg_id)
        self.notify("initialized", {})

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
