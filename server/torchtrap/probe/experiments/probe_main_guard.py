"""Probe experiment `main-guard`: a script without `if __name__ == "__main__":`.

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. Writes a small script that
iterates `DataLoader(..., num_workers=1, multiprocessing_context=M)` at
module level and runs it once per start method M in (spawn, forkserver) that
this platform has, each in its own process group with a timeout: what the
worker and the main process report, and how often the top level ran.
Confirms TT106 when a start method fails that way.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

RUN_TIMEOUT_S = 90
MARK = "TOP-LEVEL-RAN"
BOOTSTRAP = "bootstrapping phase"

SCRIPT = """\
import torch
from torch.utils.data import DataLoader

print("{mark}", flush=True)
loader = DataLoader(list(range(4)), batch_size=2, num_workers=1, multiprocessing_context="{method}")
for batch in loader:
    print(batch.tolist(), flush=True)
print("DONE", flush=True)
"""


def _kill_group(proc: subprocess.Popen[str]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.kill()


def _start(method: str, folder: str) -> subprocess.Popen[str]:
    path = os.path.join(folder, f"no_guard_{method}.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(SCRIPT.format(mark=MARK, method=method))
    kwargs: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
    return subprocess.Popen(
        [sys.executable, path],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        **kwargs,
    )


def _outcome(proc: subprocess.Popen[str], started: float) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=max(1.0, started + RUN_TIMEOUT_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return {"timed_out": True, "top_level_runs": out.count(MARK)}
    _kill_group(proc)  # leftover workers, if any
    starts = ("RuntimeError", "_queue")
    errors = [line.strip() for line in err.splitlines() if line.startswith(starts)]
    main_error = next((e for e in reversed(errors) if "DataLoader worker" in e), None)
    return {
        "exit_code": proc.returncode,
        "top_level_runs": out.count(MARK),
        "finished": "DONE" in out,
        "worker_bootstrap_error": BOOTSTRAP in err,
        "main_process_error": (main_error or (errors[-1] if errors else None) or "")[:300],
        "seconds": round(time.monotonic() - started, 2),
    }


def main() -> dict[str, Any]:
    methods = [m for m in ("spawn", "forkserver") if m in multiprocessing.get_all_start_methods()]
    evidence: dict[str, Any] = {
        "default_start_method": multiprocessing.get_start_method(),
        "methods": {},
    }
    if not methods:
        return {
            "verdict": "skipped",
            "summary": "neither spawn nor forkserver exists on this platform",
            "rules": {"TT106": "skipped"},
            "evidence": evidence,
        }
    with tempfile.TemporaryDirectory(prefix="torchtrap-main-guard-") as folder:
        started = time.monotonic()
        # Both at once: each spends most of its time importing torch.
        procs = {m: _start(m, folder) for m in methods}
        for method, proc in procs.items():
            evidence["methods"][method] = _outcome(proc, started)
    failed = [
        m
        for m, r in evidence["methods"].items()
        if r.get("worker_bootstrap_error") or (r.get("exit_code") not in (0, None))
    ]
    if failed:
        first = evidence["methods"][failed[0]]
        line = (
            f"without the guard, {' and '.join(failed)}: each worker re-ran the script's top level "
            f"(it ran {first['top_level_runs']} times) and failed with 'An attempt has been made "
            f"to start a new process before the current process has finished its "
            f"{BOOTSTRAP}'; the script exited {first.get('exit_code')}"
        )
        return {
            "verdict": "confirmed",
            "summary": line,
            "rules": {"TT106": "confirmed"},
            "rule_evidence": {"TT106": line},
            "evidence": evidence,
        }
    timed_out = [m for m, r in evidence["methods"].items() if r.get("timed_out")]
    if timed_out:
        return {
            "verdict": "timeout",
            "summary": f"the unguarded script hung under {', '.join(timed_out)}",
            "rules": {"TT106": "timeout"},
            "evidence": evidence,
        }
    return {
        "verdict": "not-reproduced",
        "summary": f"the unguarded script ran cleanly under {', '.join(methods)}",
        "rules": {"TT106": "not-reproduced"},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
