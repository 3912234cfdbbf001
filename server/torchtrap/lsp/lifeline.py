"""The server must not outlive its client: LSP says a server exits when
the process id given in ``initialize`` is gone, even if nobody closes its
stdin (an editor killed with SIGKILL, a crashed extension host)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

log = logging.getLogger("torchtrap.lsp")

POLL_S = 0.5


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # nothing to watch
    if sys.platform == "win32":
        return _windows_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return True
    # A zombie answers kill(0) until reaped; when the client was our own
    # parent, being re-parented says it is gone.
    return not (_parent_at_start == pid and os.getppid() != pid)


def _windows_alive(pid: int) -> bool:  # pragma: no cover - exercised on Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return kernel32.GetLastError() == 5  # access denied: it exists
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


_parent_at_start = os.getppid()


def watch(pid: int | None, on_gone: Callable[[], None], poll_s: float = POLL_S) -> None:
    """Call ``on_gone`` (from a daemon thread) once ``pid`` has exited."""
    if not pid or pid == os.getpid():
        return

    def run() -> None:
        stop = threading.Event()
        while not stop.wait(poll_s):
            if not pid_alive(pid):
                log.warning("the client (process %d) is gone; exiting", pid)
                on_gone()
                return

    threading.Thread(target=run, name="torchtrap-client-watch", daemon=True).start()
