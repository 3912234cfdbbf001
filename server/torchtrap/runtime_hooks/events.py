"""Where the hooks write what they see, and where in the user's code it happened."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import threading
from typing import Any, Dict, List

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOCK = threading.Lock()


class _State:
    result_dir = ""
    main_pid = 0
    seen: set = set()
    skip_dirs: tuple = ()


STATE = _State()


def configure(result_dir: str) -> None:
    STATE.result_dir = result_dir
    STATE.main_pid = os.getpid()
    skip = [_HERE, os.path.dirname(os.__file__)]
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            skip.append(sysconfig.get_paths()[key])
        except (KeyError, OSError):
            pass
    STATE.skip_dirs = tuple(os.path.normcase(os.path.abspath(p)) + os.sep for p in skip if p)


def add_skip_dir(path: str) -> None:
    STATE.skip_dirs = STATE.skip_dirs + (os.path.normcase(os.path.abspath(path)) + os.sep,)


def emit(event: dict[str, Any], key: str | None = None) -> None:
    """Append one event to this process's file; `key` makes it once per process."""
    if not STATE.result_dir:
        return
    if key is not None:
        if key in STATE.seen:
            return
        STATE.seen.add(key)
    event.setdefault("pid", os.getpid())
    line = json.dumps(event, default=str)
    path = os.path.join(STATE.result_dir, "events-%d.jsonl" % os.getpid())
    with _LOCK:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError:
            pass  # the folder is gone (the launcher gave up): nothing to report to


def _is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.normcase(os.path.abspath(filename))
    return not path.startswith(STATE.skip_dirs)


def _where(frame: Any) -> dict[str, Any]:
    code = frame.f_code
    where: Dict[str, Any] = {
        "file": os.path.abspath(code.co_filename),
        "line": frame.f_lineno,
        "function": code.co_name,
    }
    positions = getattr(code, "co_positions", None)
    if positions is not None and frame.f_lasti >= 0:
        try:
            for index, pos in enumerate(positions()):
                if index == frame.f_lasti // 2:
                    line, end_line, col, end_col = pos
                    if line == frame.f_lineno and col is not None and end_col is not None:
                        where.update(column=col, end_line=end_line, end_column=end_col)
                    break
        except (ValueError, TypeError):
            pass
    return where


def user_frames(limit: int = 4, skip: int = 1) -> list[dict[str, Any]]:
    """The innermost frames of the user's code (not torch, not the standard
    library, not these hooks), innermost first."""
    frame: Any
    try:
        frame = sys._getframe(skip)
    except ValueError:
        return []
    found: List[Dict[str, Any]] = []
    while frame is not None and len(found) < limit:
        if _is_user_file(frame.f_code.co_filename):
            found.append(_where(frame))
        frame = frame.f_back
    return found


def user_site(skip: int = 2) -> dict[str, Any] | None:
    frames = user_frames(1, skip)
    return frames[0] if frames else None
