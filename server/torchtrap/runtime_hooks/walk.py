"""A bounded, cycle-safe walk over what an object holds, reading only what
is stored (instance `__dict__`, slots, container items, closures, bound
methods, partials): never a property, never `__getattr__`, never an item
access that runs user code."""

from __future__ import annotations

import functools
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

MAX_OBJECTS = 20000
MAX_DEPTH = 10
MAX_ITEMS = 1000  # per container: the first ones tell what the rest hold
MAX_SECONDS = 0.5  # per walk; a DataLoader start walks a few roots
# The walk's own CPU time: what it costs the script, the same on a loaded machine
# (wall time there stopped the walk at a different object from run to run).
_clock = getattr(time, "thread_time", time.monotonic)

_LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), range, slice)
_SKIP_TYPES = (type, types.ModuleType, types.BuiltinFunctionType, types.CodeType, types.FrameType)
# nn.Module keeps these as dicts in __dict__; `model.weight` reads better than
# `model._parameters['weight']`.
_MODULE_DICTS = ("_parameters", "_buffers", "_modules")


class Stats:
    def __init__(self) -> None:
        self.objects = 0
        self.truncated = ""  # why the walk stopped early, if it did
        self.errors = 0  # attributes that could not be read


def _own_dict(obj: Any) -> dict[str, Any] | None:
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return d if isinstance(d, dict) else None


def _slots(obj: Any) -> Iterator[tuple[str, Any]]:
    for klass in type(obj).__mro__:
        names = klass.__dict__.get("__slots__", ())
        if isinstance(names, str):
            names = (names,)
        for name in names:
            descr = klass.__dict__.get(name)
            if isinstance(descr, types.MemberDescriptorType):
                try:
                    yield name, descr.__get__(obj, type(obj))
                except Exception:  # an empty slot
                    continue


def _children(obj: Any, is_leaf: Callable[[Any], bool], stats: Stats) -> Iterator[tuple[str, Any]]:
    """(path suffix, child) pairs."""
    if isinstance(obj, dict):
        for count, (key, value) in enumerate(list(obj.items())[:MAX_ITEMS]):
            yield "[%r]" % (key,) if isinstance(key, (str, int)) else "[<%d>]" % count, value
        return
    if isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj[:MAX_ITEMS]):
            yield "[%d]" % index, value
        return
    if isinstance(obj, (set, frozenset)):
        for index, value in enumerate(list(obj)[:MAX_ITEMS]):
            yield "{%d}" % index, value
        return
    if isinstance(obj, functools.partial):
        yield ".func", obj.func
        for index, value in enumerate(obj.args):
            yield ".args[%d]" % index, value
        for key, value in (obj.keywords or {}).items():
            yield ".keywords[%r]" % key, value
        return
    if isinstance(obj, types.MethodType):
        yield ".__self__", obj.__self__
        yield ".__func__", obj.__func__
        return
    if isinstance(obj, types.FunctionType):
        names = obj.__code__.co_freevars
        for name, cell in zip(names, obj.__closure__ or ()):  # noqa: B905 - 3.7 has no strict
            try:
                yield "<closure %s>" % name, cell.cell_contents
            except ValueError:  # an empty cell
                continue
        for index, value in enumerate(obj.__defaults__ or ()):
            yield "<default %d>" % index, value
        return
    own = _own_dict(obj)
    if own is not None:
        for name, value in list(own.items())[:MAX_ITEMS]:
            if name in _MODULE_DICTS and isinstance(value, dict):
                for key, item in list(value.items())[:MAX_ITEMS]:
                    yield "." + str(key), item
            else:
                yield "." + str(name), value
    try:
        slots = list(_slots(obj))
    except Exception:
        stats.errors += 1
        slots = []
    for name, value in slots:
        yield "." + name, value


def walk(
    roots: list[tuple[str, Any]],
    is_target: Callable[[Any], bool],
    is_leaf: Callable[[Any], bool],
    stats: Stats | None = None,
    exclude: tuple[Any, ...] = (),
) -> Iterator[tuple[str, Any, Any, str]]:
    """Breadth-first over `roots` ([(name, object)]), yielding
    (path, object, owner, attribute) for each object `is_target` accepts
    (owner/attribute: the object holding it and the attribute name, when it
    is held as an attribute). Targets and leaves are not walked into, nor
    the objects in `exclude`."""
    stats = stats if stats is not None else Stats()
    seen = {id(obj) for obj in exclude}  # walked on their own (a sampler's data_source)
    queue = [(name, obj, 0, None, "") for name, obj in roots]
    started = _clock()
    head = 0
    while head < len(queue):
        path, obj, depth, owner, attr = queue[head]
        head += 1
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        stats.objects += 1
        if stats.objects > MAX_OBJECTS:
            stats.truncated = "stopped after %d objects" % MAX_OBJECTS
            return
        if stats.objects % 256 == 0 and _clock() - started > MAX_SECONDS:
            stats.truncated = "stopped after %g s of CPU time" % MAX_SECONDS
            return
        try:
            target = is_target(obj)
        except Exception:
            stats.errors += 1
            continue
        if target:
            yield path, obj, owner, attr
            continue
        if isinstance(obj, (*_LEAVES, *_SKIP_TYPES)) or depth >= MAX_DEPTH:
            continue
        try:
            if is_leaf(obj):
                continue
            children = list(_children(obj, is_leaf, stats))
        except Exception:
            stats.errors += 1
            continue
        for suffix, child in children:
            if isinstance(child, _LEAVES) or id(child) in seen:
                continue
            if len(queue) >= 2 * MAX_OBJECTS:  # more than can be visited: stop growing
                stats.truncated = "stopped after %d objects" % MAX_OBJECTS
                break
            is_attr = suffix.startswith(".") and "[" not in suffix
            queue.append(
                (
                    path + suffix,
                    child,
                    depth + 1,
                    obj if is_attr else None,
                    suffix[1:] if is_attr else "",
                )
            )
