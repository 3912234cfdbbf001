"""Starts one probe script in the user's interpreter and collects its output.

A script runs in its own session (process group) from an empty temporary
directory, so nothing from the user's workspace is on its path; on timeout or
cancellation the whole group is killed (DataLoader workers included).

The launch does not depend on how the caller was started: the scripts import
their helper module (`_common`) from their own folder, and Python puts that
folder on `sys.path` only when neither `-P`/`PYTHONSAFEPATH` (which the VS Code
client sets for the server) nor `-I` is in effect. So `python -c BOOTSTRAP
script args` puts the folder there explicitly, and the environment the script
sees is built here (`script_env`) instead of inherited as is.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_POLL_S = 0.1
_EXIT_GRACE_S = 2.0  # after the script exits, how long its leftover children may hold the pipes

# argv: ["-c", script, *args]; runpy sets __file__ and __name__ == "__main__", and
# multiprocessing's spawn start method re-imports the script from __file__ with this sys.path.
BOOTSTRAP = (
    "import os, runpy, sys; "
    "sys.argv[:] = sys.argv[1:]; "
    "sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0]))); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
# Variables of ours or of the caller's own launch that must not reach the user's interpreter.
_DROPPED = ("PYTHONSAFEPATH", "PYTHONINSPECT")
# The folder torchtrap itself is imported from (the VS Code extension's bundled libs, or a
# checkout's server/): on PYTHONPATH only for the server, never for the user's torch.
_OWN_ROOT = Path(__file__).resolve().parents[2]


def script_command(python: str, script: Path, args: Sequence[str] = ()) -> list[str]:
    """The command line that runs `script` in `python`, whatever the caller's flags."""
    return [python, "-c", BOOTSTRAP, str(script), *args]


def _same_dir(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b
    except (OSError, RuntimeError):
        return False


def script_env(base: Mapping[str, str] | None = None, unbuffered: bool = True) -> dict[str, str]:
    """The environment of a script: `base` (default os.environ) without the variables
    that change how Python starts, and without torchtrap's own folder on PYTHONPATH
    (unless torch lives there too), plus UTF-8 output, unbuffered unless told not to."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _DROPPED}
    if env.get("PYTHONPATH") and not (_OWN_ROOT / "torch").is_dir():
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if not _same_dir(p, _OWN_ROOT)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ inside the installed package
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"  # a killed script still shows how far it got
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@dataclass
class ScriptRun:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    cancelled: bool = False


# Scripts running now, so that a process about to exit (its client gone)
# can kill them all without waiting for the threads that watch them.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


def kill_running() -> None:
    """Kill every running script's process group (from any thread)."""
    with _LIVE_LOCK:
        running = list(_LIVE)
    for proc in running:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: group id == pid
    else:  # Windows: /T takes the child tree with it
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        proc.kill()


def _drain(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=5)
        return out or "", err or ""
    except subprocess.TimeoutExpired:
        # Something outside the group still holds the pipes: give up on the output.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait(timeout=5)
        return "", ""


def run_script(
    python: str,
    script: Path,
    timeout: float,
    cancel: threading.Event | None = None,
    args: Sequence[str] = (),
) -> ScriptRun:
    """Run `script args` in `python` in a new process group, killed after `timeout`
    seconds or when `cancel` is set."""
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    started = time.monotonic()
    deadline = started + max(timeout, 0.0)
    timed_out = cancelled = False
    exited_at: float | None = None
    with tempfile.TemporaryDirectory(prefix="torchtrap-probe-") as cwd:
        proc = subprocess.Popen(
            script_command(python, script, args),
            cwd=cwd,
            env=script_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            **kwargs,
        )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            while True:
                try:
                    out, err = proc.communicate(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if proc.poll() is not None:
                    # The script is done but a leftover child keeps the pipes open.
                    exited_at = exited_at or now
                    if now - exited_at > _EXIT_GRACE_S:
                        _kill_group(proc)
                        out, err = _drain(proc)
                        break
                    continue
                if cancel is not None and cancel.is_set():
                    cancelled = True
                elif now >= deadline:
                    timed_out = True
                else:
                    continue
                _kill_group(proc)
                out, err = _drain(proc)
                break
        except BaseException:
            _kill_group(proc)  # KeyboardInterrupt and friends: leave no orphans
            proc.wait()
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        if os.name == "posix" and not (timed_out or cancelled):
            _kill_group(proc)  # daemonic workers a crashed script left behind
    return ScriptRun(
        returncode=proc.returncode,
        stdout=out or "",
        stderr=err or "",
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        cancelled=cancelled,
    )


def last_json_line(stdout: str) -> dict[str, Any] | None:
    """The JSON object on the last non-empty stdout line, if there is one."""
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


# -- attached runs (`torchtrap run`): the user's own script ------------------------------
_CANCEL_GRACE_S = 10.0  # after the editor's cancel, how long the script may take to unwind
_STILL_STOPPING_S = 2.0  # after Ctrl+C, when to say that a second one kills it

# The watchdog: a bare interpreter in a session of its own (no terminal signal reaches
# it) reading a pipe from this process. The pipe ends when this process ends; if it
# ends without "done" (we were SIGKILLed, or crashed), the watchdog kills the script's
# process group (DataLoader workers, spawned processes) and removes the run's folder.
WATCHDOG = r"""
import os, shutil, signal, sys, time
folder = sys.argv[1]
group = 0
for line in sys.stdin:
    word = line.split()
    if word and word[0] == "group":
        group = int(word[1])
    elif word and word[0] == "done":
        sys.exit(0)
if group > 0:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
deadline = time.monotonic() + 10
while os.path.exists(folder) and time.monotonic() < deadline:
    # A process killed in the middle of a write may still create one more file.
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.exists(folder):
        time.sleep(0.05)
"""


class Watchdog:
    """Makes sure nothing outlives this process: if it dies without calling
    `done()` (SIGKILL, a crash), the watched process group is killed and
    `folder` removed. POSIX only; elsewhere a no-op."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if os.name != "posix":  # pragma: no cover
            return
        self.proc = subprocess.Popen(
            [_watchdog_python(), "-I", "-S", "-c", WATCHDOG, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _say(self, line: str) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.write(line.encode() + b"\n")
                self.proc.stdin.flush()

    def watch(self, group: int) -> None:
        self._say(f"group {group}")

    def done(self) -> None:
        """The run ended and was cleaned up: the watchdog exits doing nothing."""
        if self.proc is None:
            return
        self._say("done")
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.proc = None


def _watchdog_python() -> str:
    return sys.executable or "python3"


@dataclass
class AttachedRun:
    returncode: int | None
    seconds: float
    interrupted: bool = False  # Ctrl+C / SIGTERM / SIGHUP reached us and was passed on
    cancelled: bool = False  # `cancel` was set (the editor's cancel button)
    killed: bool = False  # killed before it stopped (asked twice, or the cancel's grace)


Sink = Callable[[str, str], None]  # (stream name "stdout"/"stderr", text)

# Signals passed on to the script as they came, so that its own handlers see them (a
# preemption handler's checkpoint on SIGTERM, a SLURM `--signal=USR1` warning). Ctrl+C
# comes as KeyboardInterrupt. Those a terminal sends to the whole foreground group go to
# the script's group (its DataLoader workers too); the others, as `kill PID` would, to the
# script alone: a worker killed by SIGTERM makes DataLoader raise inside the handler.
_GROUP_SIGNALS = ("SIGHUP",)
_SCRIPT_SIGNALS = ("SIGTERM", "SIGUSR1", "SIGUSR2")
# Those that ask the script to end: a second one kills the group.
_STOP_SIGNALS = ("SIGHUP", "SIGTERM")


def _signal_numbers(names: Sequence[str]) -> set[int]:
    return {int(getattr(signal, n)) for n in names if hasattr(signal, n)}


@contextlib.contextmanager
def _forwarding(pending: list[int]) -> Iterator[None]:
    """While inside, the signals to forward are queued in `pending` instead of
    acting on this process (main thread on POSIX only: elsewhere Python cannot
    install handlers, and the caller's own handling stays)."""
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def queue(signum: int, frame: object) -> None:
        pending.append(signum)

    try:
        for signum in sorted(_signal_numbers(_GROUP_SIGNALS + _SCRIPT_SIGNALS)):
            previous[signum] = signal.signal(signum, queue)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _signal_group(proc: subprocess.Popen[str], signum: int) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signum)
    else:  # pragma: no cover - Windows: no process-group signals
        proc.send_signal(signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]


def _pump(stream: Any, name: str, sink: Sink) -> None:
    try:
        for chunk in iter(lambda: stream.readline(), ""):
            sink(name, chunk)
    except (OSError, ValueError):
        pass


def run_attached(
    command: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    cancel: threading.Event | None = None,
    sink: Sink | None = None,
    grace_s: float = _CANCEL_GRACE_S,
    watchdog: Watchdog | None = None,
) -> AttachedRun:
    """Run `command` in its own process group with the caller's stdin, stdout
    and stderr (or, with `sink`, its output handed over line by line). Signals
    are passed on as they came: Ctrl+C and SIGHUP to the whole group (the
    script and its DataLoader workers), as a terminal would; SIGTERM, SIGUSR1
    and SIGUSR2 to the script, as `kill` would. After Ctrl+C, SIGTERM or SIGHUP
    the script takes as long as it needs (a checkpoint save); a second one
    kills the group, as a second Ctrl+C ends Python's wait for its threads at
    exit. After `cancel`, what has not exited `grace_s` seconds later is
    killed. Processes the script leaves behind are killed when it exits;
    `watchdog` kills the group if this process dies first."""
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    if sink is not None:
        kwargs.update(
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    pending: list[int] = []
    with _forwarding(pending):
        started = time.monotonic()
        proc: subprocess.Popen[str] = subprocess.Popen(
            list(command), cwd=cwd, env=dict(env), **kwargs
        )
        if watchdog is not None:
            watchdog.watch(proc.pid)  # start_new_session: the group id is its pid
        pumps = []
        if sink is not None:
            for stream, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
                thread = threading.Thread(target=_pump, args=(stream, name, sink), daemon=True)
                thread.start()
                pumps.append(thread)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        result = AttachedRun(returncode=None, seconds=0.0)
        stop_since: float | None = None
        cancelled_at: float | None = None
        told = False
        group_signals = _signal_numbers(_GROUP_SIGNALS)
        stop_signals = _signal_numbers(_STOP_SIGNALS)

        def send(signum: int, group: bool) -> None:
            if group:
                _signal_group(proc, signum)
            else:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signum)

        def stop(signum: int, group: bool = True) -> None:
            nonlocal stop_since
            if stop_since is None:
                stop_since = time.monotonic()
                send(signum, group)
            else:  # asked twice: no more waiting
                result.killed = True
                _kill_group(proc)

        def forward() -> None:
            while pending:
                signum = pending.pop(0)
                if signum in stop_signals:
                    result.interrupted = True
                    stop(signum, signum in group_signals)
                else:
                    send(signum, signum in group_signals)

        try:
            while True:
                forward()
                try:
                    proc.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                except KeyboardInterrupt:
                    result.interrupted = True
                    stop(signal.SIGINT)
                    continue
                now = time.monotonic()
                if cancel is not None and cancel.is_set() and cancelled_at is None:
                    result.cancelled = True
                    cancelled_at = now
                    stop(signal.SIGINT)
                if cancelled_at is not None and now - cancelled_at > grace_s:
                    result.killed = True
                    _kill_group(proc)
                if (
                    stop_since is not None
                    and not told
                    and sink is None
                    and now - stop_since > _STILL_STOPPING_S
                ):
                    told = True
                    with contextlib.suppress(OSError, ValueError):
                        print(
                            "torchtrap run: waiting for the script to stop;"
                            " Ctrl+C again kills it and its workers",
                            file=sys.stderr,
                            flush=True,
                        )
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
            if os.name == "posix":
                _kill_group(proc)  # workers and children it left behind
    for thread in pumps:
        thread.join(timeout=_EXIT_GRACE_S)
    result.returncode = proc.returncode
    result.seconds = time.monotonic() - started
    return result
