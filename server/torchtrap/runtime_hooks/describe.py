"""Small descriptions of objects for the report: where a class is defined,
a fingerprint of a random generator's state or of a data item."""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from typing import Any

MAX_ITEM_BYTES = 1 << 16


def owner_info(owner: Any, attr: str) -> dict[str, Any] | None:
    """The class that holds `attr` and the file it is defined in, so that the
    launcher can find the line that assigns `self.<attr>`."""
    if owner is None or not attr:
        return None
    klass = type(owner)
    try:
        filename = inspect.getsourcefile(klass) or ""
    except (TypeError, OSError):
        filename = ""
    if not filename:
        return None
    return {"file": os.path.abspath(filename), "class": klass.__qualname__, "attr": attr}


def method_site(obj: Any, name: str) -> dict[str, Any] | None:
    """Where `type(obj).<name>` is defined (its `def` line)."""
    function = getattr(type(obj), name, None)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    return {
        "file": os.path.abspath(code.co_filename),
        "line": code.co_firstlineno,
        "function": name,
    }


def rng_kind(obj: Any) -> str | None:
    import random

    import torch

    if isinstance(obj, random.Random) and obj is not getattr(random, "_inst", None):
        return "random.Random"
    if isinstance(obj, torch.Generator):
        return "torch.Generator"
    np = sys.modules.get("numpy")
    if np is not None:
        npr = getattr(np, "random", None)
        if npr is not None:
            if isinstance(obj, getattr(npr, "Generator", ())):
                return "numpy.random.Generator"
            if isinstance(obj, getattr(npr, "RandomState", ())):
                return "numpy.random.RandomState"
            if isinstance(obj, getattr(npr, "BitGenerator", ())):
                return "numpy.random.BitGenerator"
    return None


def _digest(data: Any) -> str:
    return hashlib.sha1(repr(data).encode("utf-8", "replace")).hexdigest()[:16]


def rng_fingerprint(obj: Any, kind: str) -> str | None:
    """A digest of the generator's state; reading it draws nothing."""
    try:
        if kind == "random.Random":
            return _digest(obj.getstate())
        if kind == "torch.Generator":
            return hashlib.sha1(bytes(obj.get_state().tolist())).hexdigest()[:16]
        if kind == "numpy.random.Generator":
            return _digest(obj.bit_generator.state)
        if kind == "numpy.random.RandomState":
            state = obj.get_state()
            return _digest((state[0], state[1].tobytes(), state[2:]))
        if kind == "numpy.random.BitGenerator":
            return _digest(obj.state)
    except Exception:
        return None
    return None


def numpy_global_fingerprint() -> str | None:
    np = sys.modules.get("numpy")
    if np is None or getattr(np, "random", None) is None:
        return None
    try:
        state = np.random.get_state()
        return _digest((state[0], state[1].tobytes(), state[2:]))
    except Exception:
        return None


def item_fingerprint(item: Any) -> str:
    h = hashlib.sha1()
    _feed(h, item, [0], 0)
    return h.hexdigest()[:16]


def _feed(h: Any, item: Any, budget: Any, depth: int) -> None:
    import torch

    if budget[0] > MAX_ITEM_BYTES or depth > 6:
        return
    if isinstance(item, torch.Tensor):
        t = item.detach()
        h.update(("T%s%s" % (tuple(t.shape), t.dtype)).encode())
        flat = t.reshape(-1)[:4096]
        if flat.device.type != "cpu":
            flat = flat.cpu()
        text = repr(flat.tolist())
        budget[0] += len(text)
        h.update(text.encode())
        return
    if isinstance(item, dict):
        for key in sorted(item, key=repr):
            h.update(repr(key).encode())
            _feed(h, item[key], budget, depth + 1)
        return
    if isinstance(item, (list, tuple)):
        h.update(b"[")
        for value in item[:256]:
            _feed(h, value, budget, depth + 1)
        h.update(b"]")
        return
    np = sys.modules.get("numpy")
    if np is not None and isinstance(item, np.ndarray):
        data = item.reshape(-1)[:4096]
        h.update(("A%s%s" % (item.shape, item.dtype)).encode())
        raw = data.tobytes()
        budget[0] += len(raw)
        h.update(raw)
        return
    text = repr(item)[:4096]
    budget[0] += len(text)
    h.update(text.encode("utf-8", "replace"))


def private_memory() -> int | None:
    """This process's private memory (USS) in bytes, Linux only."""
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii") as fh:
            total = 0
            for line in fh:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
            return total
    except (OSError, ValueError):
        return None
