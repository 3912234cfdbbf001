"""DataLoader hooks: where each loader is created, what its workers are
handed (CUDA tensors, TT103/TT104) and, inside each worker, the state of
every random generator the dataset holds (TT101/TT102), the first items of
an IterableDataset (TT105) and the worker's private memory (TT107).

The loader's `worker_init_fn` and `collate_fn` are wrapped only for the
moment its iterator is built (the iterator copies them); the loader itself
keeps the user's functions. The wrappers call the user's function first
and return its result unchanged."""

from __future__ import annotations

import collections
import sys
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import describe, events
from .walk import Stats, walk

MAX_CUDA_PATHS = 3
MAX_ITEMS_PER_WORKER = 64
BIG_CONTAINER = 10000  # items: smaller ones fit in a few pages
# Reading smaps_rollup walks the worker's page tables (6 ms of CPU with torch
# mapped, measured): a few reads, growing apart, in the loader's first epoch only
# (later epochs' workers copy the same pages again: nothing new to learn, and
# two reads per worker per epoch were most of what `run` cost a short epoch).
MEMORY_BATCHES = (1, 8, 64, 512, 4096)

_CREATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_EPOCHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NEXT_ID = [0]
_ITERATORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # iterator -> ctx
SENT_KEPT = 256  # (batch number, indices) sent to workers, kept per iterator
MAX_INDICES = 16  # indices of a batch named in the report


def is_cuda(obj: Any) -> bool:
    import torch

    return isinstance(obj, torch.Tensor) and bool(obj.is_cuda)


def _is_leaf(obj: Any) -> bool:
    import sys

    import torch

    if isinstance(obj, (torch.Tensor, torch.Generator)):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, (np.ndarray, np.generic))


def install(torch: Any) -> None:
    from torch.utils.data import DataLoader

    original_init = DataLoader.__init__
    original_get_iterator = DataLoader._get_iterator

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        try:
            _CREATED[self] = events.user_site()
        except Exception:
            pass

    def _get_iterator(self: Any) -> Any:
        if not (isinstance(self.num_workers, int) and self.num_workers > 0):
            return original_get_iterator(self)
        try:
            ctx = _on_start(self)
        except Exception:
            ctx = None
        if ctx is None:
            return original_get_iterator(self)
        user_init, user_collate = self.worker_init_fn, self.collate_fn
        try:
            self.worker_init_fn = WorkerInit(user_init, ctx)
            self.collate_fn = Collate(user_collate, ctx)
            iterator = original_get_iterator(self)
        finally:
            self.worker_init_fn, self.collate_fn = user_init, user_collate
        try:
            _ITERATORS[iterator] = ctx
        except TypeError:
            pass
        return iterator

    __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
    DataLoader.__init__ = __init__  # type: ignore[method-assign]
    DataLoader._get_iterator = _get_iterator  # type: ignore[method-assign]
    _watch_waiting()


# -- a hung run: which worker, which batch, which item ---------------------------
def _watch_waiting() -> None:
    """On Ctrl+C in the main process, note the batch the iterator was waiting
    for and the worker it was sent to (one frame and one deque append per
    batch; nothing is written unless interrupted)."""
    from torch.utils.data import dataloader

    cls = getattr(dataloader, "_MultiProcessingDataLoaderIter", None)
    if cls is None or not hasattr(cls, "_next_data") or not hasattr(cls, "_next_index"):
        return
    original_next_data = cls._next_data
    original_next_index = cls._next_index

    def _next_index(self: Any) -> Any:
        index = original_next_index(self)
        sent = self.__dict__.get("_torchtrap_sent")
        if sent is None:
            sent = self.__dict__["_torchtrap_sent"] = collections.deque(maxlen=SENT_KEPT)
        sent.append((getattr(self, "_send_idx", None), index))
        return index

    def _next_data(self: Any) -> Any:
        try:
            return original_next_data(self)
        except KeyboardInterrupt:
            try:
                _note_waiting(self)
            except Exception:
                pass
            raise

    cls._next_index = _next_index
    cls._next_data = _next_data


def _indices(index: Any) -> Any:
    if isinstance(index, (list, tuple)):
        return [_plain(i) for i in index[:MAX_INDICES]]
    return _plain(index)


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, str, float)) else repr(value)[:80]


def _note_waiting(iterator: Any) -> None:
    ctx = _ITERATORS.get(iterator) or {}
    batch = getattr(iterator, "_rcvd_idx", None)
    tasks = getattr(iterator, "_task_info", {}) or {}
    sent = dict(iterator.__dict__.get("_torchtrap_sent") or ())
    outstanding = sorted(
        (idx, info[0]) for idx, info in tasks.items() if isinstance(info, tuple) and len(info) == 1
    )
    waiting = tasks.get(batch)
    worker = waiting[0] if isinstance(waiting, tuple) and len(waiting) == 1 else None
    event = {
        "kind": "waiting",
        "loader": ctx.get("loader"),
        "epoch": ctx.get("epoch"),
        "batch": batch,
        "worker": worker,
        "workers": ctx.get("workers"),
        "outstanding": [[idx, w] for idx, w in outstanding[:8]],
    }
    if batch in sent:
        index = sent[batch]
        event["indices"] = _indices(index)
        event["size"] = len(index) if isinstance(index, (list, tuple)) else 1
    events.emit(event)


def _watch_fetch() -> None:
    """In a worker: on Ctrl+C while it fetches a batch, note the batch, the
    item and the user's line it was on."""
    from torch.utils.data._utils import fetch

    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch, name, None)
        original = getattr(cls, "__dict__", {}).get("fetch")
        if cls is None or original is None or getattr(original, "_torchtrap", False):
            continue

        def wrapper(self: Any, index: Any, _original: Any = original) -> Any:
            try:
                return _original(self, index)
            except KeyboardInterrupt:
                try:
                    _note_interrupted(index, sys.exc_info()[2])
                except Exception:
                    pass
                raise

        wrapper._torchtrap = True  # type: ignore[attr-defined]
        cls.fetch = wrapper


def _note_interrupted(index: Any, tb: Any) -> None:
    item: Any = None
    where = None
    fetch_file = None
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code.co_filename.endswith("fetch.py") and "idx" in frame.f_locals:
            fetch_file = code.co_filename
            item = frame.f_locals.get("idx")
        if events._is_user_file(code.co_filename):
            where = {"file": code.co_filename, "line": tb.tb_lineno, "function": code.co_name}
        tb = tb.tb_next
    extra: Dict[str, Any] = {"indices": _indices(index)}
    if fetch_file is not None and item is not None:
        extra["item"] = _plain(item)
    if where is not None:
        extra["where"] = where
    _worker_event("worker_interrupted", **extra)


def _loader_id(loader: Any) -> int:
    if loader not in _IDS:
        _NEXT_ID[0] += 1
        _IDS[loader] = _NEXT_ID[0]
    return _IDS[loader]


def _on_start(loader: Any) -> dict[str, Any]:
    from torch.utils.data import IterableDataset

    loader_id = _loader_id(loader)
    epoch = _EPOCHS.get(loader, 0)
    _EPOCHS[loader] = epoch + 1
    site = events.user_site(3)
    context = getattr(loader, "multiprocessing_context", None)
    method = getattr(context, "_name", None) if context is not None else None
    if method is None:
        import multiprocessing

        # Asking without allow_none would fix the start method: only look.
        method = multiprocessing.get_start_method(allow_none=True)
        if method is None:
            method = multiprocessing.get_all_start_methods()[0]  # the platform's default
    iterable = isinstance(loader.dataset, IterableDataset)
    ctx = {
        "result_dir": events.STATE.result_dir,
        "loader": loader_id,
        "epoch": epoch,
        "workers": loader.num_workers,
        "iterable": iterable,
        "auto_collation": bool(getattr(loader, "_auto_collation", False)),
    }
    events.emit(
        {
            "kind": "loader",
            "loader": loader_id,
            "epoch": epoch,
            "workers": loader.num_workers,
            "persistent": bool(getattr(loader, "persistent_workers", False)),
            "start_method": method,
            "iterable": iterable,
            "dataset_type": type(loader.dataset).__qualname__,
            "site": site,
            "created": _CREATED.get(loader),
            "iter_site": describe.method_site(loader.dataset, "__iter__") if iterable else None,
        }
    )
    if epoch == 0:
        _check_cuda(loader, loader_id, site, method)
        _note_containers(loader, loader_id)
    return ctx


def _big_container(obj: Any) -> bool:
    return type(obj) in (list, dict, tuple, set) and len(obj) >= BIG_CONTAINER


def _note_containers(loader: Any, loader_id: int) -> None:
    """Large Python containers the dataset holds (TT107: reading their items
    writes reference counts, so each worker copies the pages it reads)."""
    found = []
    for path, obj, owner, attr in walk([("dataset", loader.dataset)], _big_container, _is_leaf):
        found.append(
            {
                "path": path,
                "type": type(obj).__name__,
                "length": len(obj),
                "owner": describe.owner_info(owner, attr),
            }
        )
        if len(found) >= 3:
            break
    if found:
        events.emit({"kind": "containers", "loader": loader_id, "containers": found})


def _check_cuda(loader: Any, loader_id: int, site: Any, method: str) -> None:
    roles = [("TT103", "dataset", loader.dataset)]
    for name in ("collate_fn", "worker_init_fn", "sampler", "batch_sampler"):
        value = getattr(loader, name, None)
        if value is not None:
            roles.append(("TT104", name, value))
    for code, name, root in roles:
        stats = Stats()
        found: List[Tuple[str, Any, Any, str]] = []
        exclude = () if name == "dataset" else (loader.dataset,)
        for hit in walk([(name, root)], is_cuda, _is_leaf, stats, exclude):
            found.append(hit)
        if not found:
            continue
        path, tensor, owner, attr = found[0]
        events.emit(
            {
                "kind": "finding",
                "code": code,
                "loader": loader_id,
                "object": path,
                "paths": [p for p, _, _, _ in found[:MAX_CUDA_PATHS]],
                "count": len(found),
                "device": str(getattr(tensor, "device", "cuda")),
                "shape": list(getattr(tensor, "shape", ())),
                "owner": describe.owner_info(owner, attr),
                "site": site,
                "created": _CREATED.get(loader),
                "workers": loader.num_workers,
                "start_method": method,
                "walked": stats.objects,
                "truncated": stats.truncated,
            },
            key="%s:%d:%s" % (code, loader_id, name),
        )


# -- inside a worker ----------------------------------------------------------
class _Worker:
    ctx: Optional[Dict[str, Any]] = None
    worker_id = -1
    rngs: Dict[str, Dict[str, Any]] = {}
    batches = 0
    items: List[str] = []
    memory: List[List[int]] = []


def _rngs(dataset: Any) -> dict[str, dict[str, Any]]:
    found: Dict[str, Dict[str, Any]] = {}

    def target(obj: Any) -> bool:
        return describe.rng_kind(obj) is not None

    for path, rng, owner, attr in walk([("dataset", dataset)], target, _is_leaf):
        kind = describe.rng_kind(rng) or ""
        found[path] = {
            "type": kind,
            "state": describe.rng_fingerprint(rng, kind),
            "owner": describe.owner_info(owner, attr),
            "ref": weakref.ref(rng) if _weakrefable(rng) else (lambda r=rng: r),
        }
    return found


def _weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


def _public(rngs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p: {k: v for k, v in r.items() if k != "ref"} for p, r in rngs.items()}


def _worker_event(kind: str, **extra: Any) -> None:
    ctx = _Worker.ctx or {}
    event = {
        "kind": kind,
        "loader": ctx.get("loader"),
        "epoch": ctx.get("epoch"),
        "worker": _Worker.worker_id,
        "workers": ctx.get("workers"),
    }
    event.update(extra)
    events.emit(event)


class WorkerInit:
    """Runs the user's worker_init_fn, then notes the worker's generators."""

    def __init__(self, user_fn: Any, ctx: dict[str, Any]) -> None:
        self.user_fn = user_fn
        self.ctx = ctx

    def __call__(self, worker_id: int) -> Any:
        result = None
        seeds: List[Dict[str, Any]] = []
        if self.user_fn is not None:
            restore = _watch_numpy_seed(seeds)
            try:
                result = self.user_fn(worker_id)
            finally:
                restore()
        try:
            _start_worker(self.ctx, worker_id, seeds[-1] if seeds else None)
        except Exception:
            pass
        return result


def _watch_numpy_seed(seeds: List[Dict[str, Any]]) -> Any:
    """While the user's worker_init_fn runs: where it calls np.random.seed
    (TT102 points at that line, the one to change)."""
    np = sys.modules.get("numpy")
    random = getattr(np, "random", None)
    original = getattr(random, "seed", None)
    if random is None or original is None:
        return lambda: None

    def seed(*args: Any, **kwargs: Any) -> Any:
        try:
            site = events.user_site()
            if site is not None:
                seeds.append(site)
        except Exception:
            pass
        return original(*args, **kwargs)

    random.seed = seed

    def restore() -> None:
        random.seed = original

    return restore


def _start_worker(ctx: dict[str, Any], worker_id: int, seed_site: Any = None) -> None:
    from torch.utils.data import get_worker_info

    if events.STATE.result_dir != ctx["result_dir"]:
        import os

        import torch

        events.configure(ctx["result_dir"])  # a spawned worker starts without the hooks
        events.add_skip_dir(os.path.dirname(os.path.abspath(str(torch.__file__))))
    events.STATE.seen = set()
    _Worker.ctx = ctx
    _Worker.worker_id = worker_id
    _Worker.batches = 0
    _Worker.items = []
    _Worker.memory = []
    info = get_worker_info()
    try:
        _watch_fetch()
    except Exception:
        pass
    _Worker.rngs = _rngs(info.dataset) if info is not None else {}
    _worker_event(
        "worker",
        rngs=_public(_Worker.rngs),
        numpy_global=describe.numpy_global_fingerprint(),
        numpy_seed_site=seed_site,
    )


class Collate:
    """Notes what the worker produced, then runs the user's collate_fn."""

    def __init__(self, user_fn: Any, ctx: dict[str, Any]) -> None:
        self.user_fn = user_fn
        self.ctx = ctx

    def __call__(self, batch: Any) -> Any:
        if _Worker.ctx is self.ctx or _Worker.ctx == self.ctx:
            try:
                _observe(self.ctx, batch)
            except Exception:
                pass
        return self.user_fn(batch)


def _observe(ctx: dict[str, Any], batch: Any) -> None:
    _Worker.batches += 1
    n = _Worker.batches
    if n == 1:
        used = {}
        for path, rng in _Worker.rngs.items():
            obj = rng["ref"]()
            if obj is not None:
                used[path] = describe.rng_fingerprint(obj, rng["type"]) != rng["state"]
        _worker_event(
            "worker_used", used=used, numpy_global_after=describe.numpy_global_fingerprint()
        )
    if n in MEMORY_BATCHES and not ctx.get("epoch"):
        memory = describe.private_memory()
        if memory is not None:
            _Worker.memory.append([n, memory])
            _worker_event("worker_memory", memory_series=_Worker.memory)
    if ctx.get("iterable") and len(_Worker.items) < MAX_ITEMS_PER_WORKER:
        samples = batch if ctx.get("auto_collation") and isinstance(batch, list) else [batch]
        room = MAX_ITEMS_PER_WORKER - len(_Worker.items)
        _Worker.items.extend(describe.item_fingerprint(s) for s in samples[:room])
        _worker_event("worker_items", items=list(_Worker.items))
