"""Loss hooks: the first loss that is not finite at `backward()` (the
operation that made it, and its line), graphs of earlier steps' losses kept
alive across steps (TT214: the line that keeps them), and regression-loss
arguments that broadcast silently or hold a lower-precision target.

What runs on every step is small: at each `backward()` of a one-element
loss, one `isfinite` on it and a weak reference to its graph; at each
regression loss call, a shape and dtype comparison. The costly looks run
once, when something went wrong: a walk over the bad loss's graph (before
its backward frees it), anomaly mode (check_nan off: nothing raises) for the
next step only, to learn the line of the operation found, and a one-step
watch of the operations and appends that keep old graphs alive."""

from __future__ import annotations

import functools
import gc
import math
import re
import sys
import types
import warnings
import weakref
from collections import deque
from typing import Any, Dict, List, Optional, Tuple

from . import events

GRAPH_WINDOW = 64  # the latest losses whose graphs are watched
GRAPH_CHECK_EVERY = 8  # backward calls between two looks at them
GRAPH_KEPT = 8  # graphs of earlier steps still alive that make a finding
WATCH_BACKWARDS = 2  # the keeper watch covers this many backward calls
TRACE_TRIES = 4  # backward calls that may show the bad operation's line (a GAN has two a step)
MAX_NODES = 20000  # the walk over a non-finite loss's graph
VIEW_HOPS = 4  # from a log's input back to a softmax/sigmoid
REGRESSION_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
# Integers up to these are exact in the dtype: such a target lost nothing.
EXACT_INTEGERS = {"torch.float16": 2048, "torch.bfloat16": 256}

# node class -> the torch function that recomputes it from `_saved_self`
_UNARY = {
    "LogBackward0": "log",
    "Log2Backward0": "log2",
    "Log10Backward0": "log10",
    "Log1PBackward0": "log1p",
    "SqrtBackward0": "sqrt",
    "RsqrtBackward0": "rsqrt",
    "ReciprocalBackward0": "reciprocal",
    "AcosBackward0": "acos",
    "AsinBackward0": "asin",
    "AtanhBackward0": "atanh",
    "AcoshBackward0": "acosh",
    "LgammaBackward0": "lgamma",
    "DigammaBackward0": "digamma",
}
_LOGS = ("LogBackward0", "Log2Backward0", "Log10Backward0")
_PROBABILITY = {"SoftmaxBackward0": "softmax", "SigmoidBackward0": "sigmoid"}
_TRANSPARENT = re.compile(
    r"(Select|Slice|Index|Gather|View|UnsafeView|Expand|Squeeze|Unsqueeze|T|Transpose"
    r"|Permute|Clone|Rsub|Neg|ToCopy|Alias|Reshape|Narrow|Split|Unbind|Take)Backward\d*$"
)
_FRAME = re.compile(r'File "(.+?)", line (\d+), in (.+)')


class _Sentinel:
    """Kept in a loss's graph node (its metadata, else as a node hook): alive
    exactly as long as the node is."""

    __slots__ = ("__weakref__",)

    def __call__(self, *args: Any) -> None:
        return None


class _State:
    backwards = 0  # backward() calls on one-element losses with a graph
    nonfinite_done = False
    trace: Optional[Dict[str, Any]] = None  # a finding waiting for its producer's line
    anomaly_before: Optional[Tuple[bool, bool]] = None
    window: deque = deque(maxlen=GRAPH_WINDOW)
    graph_done = False
    watch: Optional["_Watch"] = None
    scaled: Optional[Tuple[Any, Any]] = None  # (scaled loss, loss) of the last scaler.scale
    cuda_pending: deque = deque()
    loss_sites: set = set()


STATE = _State()
_TORCH: List[Any] = [None]


def install(torch: Any) -> None:
    _TORCH[0] = torch
    original = torch.Tensor.backward

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        watched = False
        try:
            watched = _before(self)
        except Exception:
            pass
        result = original(self, *args, **kwargs)
        if watched:
            try:
                _after(self)
            except Exception:
                pass
        return result

    functools.update_wrapper(backward, original)
    torch.Tensor.backward = backward
    _wrap_scaler(torch)
    functional = torch.nn.functional
    for name in REGRESSION_LOSSES:
        function = getattr(functional, name, None)
        if function is not None and hasattr(function, "__globals__"):
            setattr(functional, name, _loss_wrapper(function, name))


def finish() -> None:
    """At the end of the run: what waits for a later step is reported as it stands."""
    torch = _TORCH[0]
    if torch is None:
        return
    try:
        _poll_cuda(torch, None, final=True)
    except Exception:
        pass
    if STATE.trace is not None:
        _resolve_trace()
    if STATE.watch is not None:
        STATE.watch.resolve()


# -- backward -----------------------------------------------------------------------
def _before(loss: Any) -> bool:
    if loss.grad_fn is None or loss.numel() != 1:
        return False
    torch = _TORCH[0]
    STATE.backwards += 1
    if STATE.trace is not None:
        _try_trace(loss)
    if STATE.watch is not None:
        STATE.watch.backward()
    if not STATE.nonfinite_done:
        value = loss
        scaled = STATE.scaled
        if scaled is not None and scaled[0]() is loss:
            value = scaled[1]() if scaled[1]() is not None else loss
        device = value.device.type
        if device == "cpu":
            # .item() of a CPU tensor: 1 us, where torch.isfinite is an op (25 us)
            if value.is_floating_point() and not math.isfinite(value.item()):
                _nonfinite(torch, value, STATE.backwards, STATE.backwards)
        elif device == "cuda":
            _poll_cuda(torch, value)
            if not STATE.nonfinite_done:
                _queue_cuda(torch, value)
    return True


def _after(loss: Any) -> None:
    if STATE.graph_done:
        return
    sentinel = _Sentinel()
    node = loss.grad_fn
    try:
        # The node's own metadata dict lives as long as the node: 1 us, where
        # a node hook costs 10.
        node.metadata["_torchtrap_run"] = sentinel
    except (AttributeError, TypeError, RuntimeError):
        node.register_hook(sentinel)
    n = STATE.backwards
    STATE.window.append((n, weakref.ref(sentinel), weakref.ref(loss)))
    if n % GRAPH_CHECK_EVERY or n < 2 * GRAPH_CHECK_EVERY or STATE.watch is not None:
        return
    old = [entry for entry in STATE.window if entry[0] <= n - 2]
    alive = [entry for entry in old if entry[1]() is not None]
    if len(alive) >= GRAPH_KEPT:
        STATE.graph_done = True
        _Watch(loss, n, alive, len(old)).start()


# -- a loss that is not finite ---------------------------------------------------------
def _queue_cuda(torch: Any, value: Any) -> None:
    """An asynchronous look: the flag is copied to pinned memory and read once
    the GPU got there (a synchronous read would stall every step)."""
    flag = torch.isfinite(value.detach()).all()
    host = torch.empty((), dtype=torch.bool, pin_memory=True)
    host.copy_(flag, non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    STATE.cuda_pending.append((done, host, STATE.backwards))


def _poll_cuda(torch: Any, current: Any, final: bool = False) -> None:
    while STATE.cuda_pending and not STATE.nonfinite_done:
        done, host, step = STATE.cuda_pending[0]
        if not final and not done.query():
            return
        if final:
            done.synchronize()
        STATE.cuda_pending.popleft()
        if not bool(host):
            # That step's graph is gone: the one at hand shows the same path
            # when it is not finite too (the usual case: every step after).
            if current is not None and not bool(torch.isfinite(current.detach()).all()):
                _nonfinite(torch, current, step, STATE.backwards)
            else:
                _nonfinite(torch, None, step, STATE.backwards)
    if STATE.nonfinite_done:
        STATE.cuda_pending.clear()


def _describe_value(torch: Any, value: Any) -> str:
    number = float(value.detach().reshape(-1)[0].float().cpu())
    return "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")


def _nonfinite(torch: Any, value: Any, step: int, walked_step: int) -> None:
    STATE.nonfinite_done = True
    frames = events.user_frames(3)
    event: Dict[str, Any] = {
        "kind": "finding",
        "code": "TTR201",
        "object": "loss",
        "site": frames[0] if frames else None,
        "callers": frames[1:],
        "step": step,
        "value": _describe_value(torch, value) if value is not None else None,
        "loss_type": type(value.grad_fn).__name__ if value is not None else None,
    }
    found = _producer(torch, value.grad_fn) if value is not None else None
    if found is None:
        events.emit(event, key="TTR201")
        return
    node = found.pop("node")
    event.update(found)
    if walked_step != step:
        event["walked_step"] = walked_step
    if event.get("source") == "probability":
        event["code"] = "TT201"
    site = _traceback_site(node)
    if site is not None or found.get("leaf"):
        if site is not None:
            event["producer_site"] = site
        events.emit(event, key="TTR201")
        return
    # The line comes from the next step's graph, built with anomaly mode on
    # (it records each operation's stack; check_nan off: nothing raises).
    torch_anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    STATE.anomaly_before = torch_anomaly
    torch.set_anomaly_enabled(True, False)
    STATE.trace = {
        "event": event,
        "path": found["path"],
        "node_type": found["op_node"],
        "tries": 0,
    }


def _try_trace(loss: Any) -> None:
    """A backward after the bad one: its graph, built with anomaly mode on,
    may hold the same operation with the stack that made it (another loss's
    graph, or one built before, does not: then wait for the next)."""
    trace = STATE.trace
    assert trace is not None
    site = None
    try:
        node = _follow(loss.grad_fn, trace["path"], trace["node_type"])
        site = _traceback_site(node) if node is not None else None
    except Exception:
        pass
    trace["tries"] += 1
    if site is not None:
        trace["event"]["producer_site"] = site
        trace["event"]["line_from_step"] = STATE.backwards
    if site is not None or trace["tries"] >= TRACE_TRIES:
        _resolve_trace()


def _resolve_trace() -> None:
    trace, STATE.trace = STATE.trace, None
    torch = _TORCH[0]
    before = STATE.anomaly_before
    if before is not None:
        torch.set_anomaly_enabled(before[0], before[1])
        STATE.anomaly_before = None
    assert trace is not None
    events.emit(trace["event"], key="TTR201")


def _follow(root: Any, path: List[Any], node_type: str) -> Any:
    """The node at the same place in another graph: the same child index and
    node type at every step from the root. Another loss's graph (a GAN's
    second loss) or another shape of graph gives None, not a look-alike
    elsewhere: a wrong line is worse than none."""
    node = root
    for index, kind in path:
        nexts = getattr(node, "next_functions", ())
        if index >= len(nexts) or nexts[index][0] is None:
            return None
        node = nexts[index][0]
        if type(node).__name__ != kind:
            return None
    if node is not None and type(node).__name__ == node_type:
        return node
    return None


def _traceback_site(node: Any) -> Optional[Dict[str, Any]]:
    """The innermost user frame of the stack anomaly mode stored on the node."""
    try:
        stack = node.metadata.get("traceback_")
    except Exception:
        return None
    if not stack:
        return None
    lines = stack if isinstance(stack, (list, tuple)) else [stack]
    found: List[Dict[str, Any]] = []
    for entry in lines:
        for match in _FRAME.finditer(str(entry)):
            if events._is_user_file(match.group(1)):
                found.append(
                    {
                        "file": match.group(1),
                        "line": int(match.group(2)),
                        "function": match.group(3),
                    }
                )
    if not found:
        return None
    site = dict(found[-1])
    site["callers"] = list(reversed(found[:-1]))[:2]
    return site


def _saved(node: Any) -> List[Tuple[str, Any]]:
    out: List[Tuple[str, Any]] = []
    for name in dir(node):
        if not name.startswith("_saved_"):
            continue
        try:
            value = getattr(node, name)
        except Exception:
            continue  # freed, or a saved-tensor hook refused to unpack
        if isinstance(value, (list, tuple)):
            out.extend((name, v) for v in value if _TORCH[0].is_tensor(v))
        elif _TORCH[0].is_tensor(value):
            out.append((name, value))
    return out


def _finite(torch: Any, tensor: Any) -> bool:
    if not (tensor.is_floating_point() or tensor.is_complex()) or tensor.numel() == 0:
        return True
    return bool(torch.isfinite(tensor).all())


def _producer(torch: Any, root: Any) -> Optional[Dict[str, Any]]:
    """The operation nearest the leaves whose output is known not to be finite
    while its saved inputs are: known from a later node's saved input, its
    own saved result, or (for log, sqrt, ...) recomputed from its input."""
    # node -> (child index, node type) at each step from the root
    paths: Dict[Any, Tuple[Any, ...]] = {}
    order: List[Any] = []
    stack: List[Tuple[Any, Tuple[Any, ...]]] = [(root, ())]
    while stack and len(order) < MAX_NODES:
        node, path = stack.pop()
        if node is None or node in paths:
            continue
        paths[node] = path
        order.append(node)
        for index, (child, _) in enumerate(node.next_functions):
            if child is not None and child not in paths:
                stack.append((child, path + ((index, type(child).__name__),)))
    bad: Dict[Any, str] = {root: "loss"}
    inputs_finite: Dict[Any, bool] = {}
    has_input: set = set()
    saved_input: Dict[Any, Any] = {}
    leaves: List[Tuple[Any, Any]] = []
    for node in order:
        finite, seen_input = True, False
        for name, tensor in _saved(node):
            ok = _finite(torch, tensor)
            if name.startswith("_saved_result"):
                if not ok:
                    bad.setdefault(node, "result")
                continue
            seen_input = True
            if name == "_saved_self":
                saved_input[node] = tensor
            if not ok:
                finite = False
                producer = tensor.grad_fn
                if producer is not None:
                    bad.setdefault(producer, "input")
                else:
                    leaves.append((tensor, node))
        inputs_finite[node] = finite
        if seen_input:
            has_input.add(node)
        kind = type(node).__name__
        if finite and seen_input and kind in _UNARY and node in saved_input:
            recomputed = getattr(torch, _UNARY[kind])(saved_input[node].detach())
            if not _finite(torch, recomputed):
                bad[node] = "recomputed"
    # Known finite inputs first (a recomputed op, then one with saved inputs),
    # then the deepest node known bad: with no saved input, it is a guess.
    candidates = [n for n in bad if n in paths and inputs_finite.get(n, True)]
    best = (
        [n for n in candidates if bad[n] == "recomputed"]
        or [n for n in candidates if n in has_input]
        or [n for n in candidates if n is not root]
    )
    if best:
        node = max(best, key=lambda n: len(paths[n]))
        found = _describe_producer(torch, node, paths[node], saved_input.get(node))
        found["inputs_seen"] = bad[node] == "recomputed" or node in has_input
        return found
    if leaves:
        tensor, consumer = leaves[0]
        return {
            "node": consumer,
            "op": _op_name(type(consumer).__name__),
            "op_node": type(consumer).__name__,
            "path": list(paths.get(consumer, ())),
            "leaf": "parameter" if tensor.requires_grad else "data",
            "leaf_shape": list(tensor.shape),
            "leaf_nonfinite": int((~torch.isfinite(tensor)).sum()),
        }
    return None


def _op_name(kind: str) -> str:
    name = re.sub(r"Backward\d*$", "", kind)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _describe_producer(
    torch: Any, node: Any, path: Tuple[Any, ...], argument: Any
) -> Dict[str, Any]:
    kind = type(node).__name__
    found: Dict[str, Any] = {
        "node": node,
        "op": _UNARY.get(kind) or _op_name(kind),
        "op_node": kind,
        "path": list(path),
    }
    if argument is not None and argument.is_floating_point():
        data = argument.detach()
        found["input_zeros"] = int((data == 0).sum())
        found["input_negative"] = int((data < 0).sum())
        found["input_numel"] = int(data.numel())
    if kind in _LOGS:
        source = _probability_source(node)
        if source is not None:
            found["source"] = "probability"
            found["probability"] = source
    return found


def _probability_source(node: Any) -> Optional[str]:
    current = node
    for _ in range(VIEW_HOPS + 1):
        nexts = [child for child, _ in current.next_functions if child is not None]
        if not nexts:
            return None
        current = nexts[0]
        kind = type(current).__name__
        if kind in _PROBABILITY:
            return _PROBABILITY[kind]
        if not _TRANSPARENT.match(kind):
            return None
    return None


# -- graphs kept across steps (TT214) ----------------------------------------------------
class _Watch:
    """For WATCH_BACKWARDS backward calls: the tensor operations that take a
    tensor with a graph from before the watch and return one that stays
    alive (`total += loss`, `self.sum += val * n`), and the appends into the
    containers found holding old losses (`losses.append(loss)`)."""

    def __init__(self, loss: Any, step: int, alive: List[Any], old: int) -> None:
        self.step = step
        self.kept = len(alive)
        self.old = old
        self.first_kept = alive[0][0]
        self.backward_site = events.user_site(3)
        self.remaining = WATCH_BACKWARDS
        self.produced: Dict[int, Any] = {}
        self.records: List[Dict[str, Any]] = []
        self.appends: List[Dict[str, Any]] = []
        self.holders: Dict[int, Dict[str, Any]] = {}
        self.mode: Any = None
        self.profiling = False
        self._find_holders([entry[2]() for entry in alive if entry[2]() is not None])

    # containers ---------------------------------------------------------------
    def _find_holders(self, tensors: List[Any]) -> None:
        # Each gc.get_referrers call walks every object the collector tracks
        # (about 0.1 s with torch loaded): one walk for all the tensors, one
        # for the dicts and tuples that hold them.
        mine = {id(self), id(STATE.window), id(tensors)}
        inner: List[Any] = []
        for ref in gc.get_referrers(*tensors[-3:]):
            if id(ref) in mine or isinstance(ref, types.FrameType):
                continue
            if isinstance(ref, (list, deque, set)):
                self.holders.setdefault(id(ref), {"holder": ref})
            elif isinstance(ref, (dict, tuple)):
                inner.append(ref)
        mine.add(id(inner))
        if inner and not self.holders:
            for outer in gc.get_referrers(*inner[:8]):
                if id(outer) in mine or isinstance(outer, types.FrameType):
                    continue
                if isinstance(outer, (list, deque, set)):
                    self.holders.setdefault(id(outer), {"holder": outer})
        for info in list(self.holders.values())[:2]:
            info.update(_name_holder(info["holder"]))

    def start(self) -> None:
        torch = _TORCH[0]
        TorchFunctionMode = getattr(getattr(torch, "overrides", None), "TorchFunctionMode", None)
        if TorchFunctionMode is not None:
            watch = self

            class _KeeperMode(TorchFunctionMode):  # type: ignore[misc, valid-type]
                def __torch_function__(
                    self, func: Any, types: Any, args: Any = (), kwargs: Any = None
                ) -> Any:
                    result = func(*args, **(kwargs or {}))
                    try:
                        watch.op(func, args, kwargs, result)
                    except Exception:
                        pass
                    return result

            self.mode = _KeeperMode()
            torch._C._push_on_torch_function_stack(self.mode)
        if self.holders and sys.getprofile() is None:
            sys.setprofile(self._profile)
            self.profiling = True
        STATE.watch = self

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "c_call" or id(getattr(arg, "__self__", None)) not in self.holders:
            return
        if not events._is_user_file(frame.f_code.co_filename):
            return
        if len(self.appends) < 4:
            site = events._where(frame)
            site["callers"] = events.user_frames(3, 2)[1:]
            self.appends.append(
                {"site": site, "method": getattr(arg, "__name__", "?"), "holder": id(arg.__self__)}
            )

    def op(self, func: Any, args: Any, kwargs: Any, result: Any) -> None:
        torch = _TORCH[0]
        outputs = [result] if isinstance(result, torch.Tensor) else []
        if isinstance(result, (tuple, list)):
            outputs = [r for r in result if isinstance(r, torch.Tensor)]
        outputs = [o for o in outputs if o.grad_fn is not None]
        if not outputs:
            return
        inputs: List[Any] = []
        for value in list(args) + list((kwargs or {}).values()):
            if isinstance(value, torch.Tensor):
                inputs.append(value)
            elif isinstance(value, (tuple, list)):
                inputs.extend(v for v in value[:8] if isinstance(v, torch.Tensor))
        old = [t for t in inputs if t.grad_fn is not None and id(t) not in self.produced]
        for out in outputs:
            self.produced[id(out)] = weakref.ref(out)
        if not old or len(self.records) >= 64:
            return
        frames = events.user_frames(3)
        if not frames:
            return
        name = getattr(func, "__name__", "?")
        self.records.append({"ref": weakref.ref(outputs[0]), "frames": frames, "op": name})

    def backward(self) -> None:
        self.remaining -= 1
        if self.remaining < 0:
            self.resolve()

    def stop(self) -> None:
        torch = _TORCH[0]
        if self.mode is not None:
            stack = torch._C._len_torch_function_stack()
            if stack and torch._C._get_function_stack_at(stack - 1) is self.mode:
                torch._C._pop_torch_function_stack()
            self.mode = None
        if self.profiling and sys.getprofile() == self._profile:
            sys.setprofile(None)
        self.profiling = False
        if STATE.watch is self:
            STATE.watch = None

    def resolve(self) -> None:
        self.stop()
        keeper = next((r for r in self.records if r["ref"]() is not None), None)
        event: Dict[str, Any] = {
            "kind": "finding",
            "code": "TT214",
            "object": "loss",
            "step": self.step,
            "kept": self.kept,
            "watched": self.old,
            "first_kept": self.first_kept,
            "backward_site": self.backward_site,
        }
        holder = None
        if self.appends:
            append = self.appends[0]
            holder = self.holders.get(append["holder"])
            event.update(site=append["site"], how="append", method=append["method"])
        elif keeper is not None:
            frames = keeper["frames"]
            site = dict(frames[0])
            site["callers"] = frames[1:]
            event.update(site=site, how="op", op=keeper["op"])
            kept = keeper["ref"]()
            if kept is not None:
                event.update(_name_holder(kept))
            kept = None
        elif self.holders:
            holder = next(iter(self.holders.values()))
            event.update(site=self.backward_site, how="holder")
        else:
            event.update(site=self.backward_site, how="unknown")
        if holder is not None:
            event.update({k: v for k, v in holder.items() if k != "holder"})
        events.emit(event, key="TT214")


def _name_holder(holder: Any) -> Dict[str, Any]:
    """Who holds a container: a module global or an object's attribute."""
    info: Dict[str, Any] = {"holder_type": type(holder).__name__}
    if isinstance(holder, (list, deque, set, dict, tuple)):
        info["holder_length"] = len(holder)
    for ref in gc.get_referrers(holder):
        if isinstance(ref, dict):
            key = _key_of(ref, holder)
            if key is None:
                continue
            if isinstance(ref.get("__name__"), str) and ref.get("__name__") != key:
                info.update(holder_name=key, holder_module=ref["__name__"])
                return info
            owners = [o for o in gc.get_referrers(ref) if getattr(o, "__dict__", None) is ref]
            if owners:
                return _attribute(info, owners[0], key)
        elif not isinstance(ref, (type, types.ModuleType, types.FunctionType, types.FrameType)):
            # Python 3.11+ keeps an object's attributes inline: it refers to them itself.
            attributes = getattr(ref, "__dict__", None)
            key = _key_of(attributes, holder) if isinstance(attributes, dict) else None
            if key is not None:
                return _attribute(info, ref, key)
    return info


def _key_of(mapping: Dict[Any, Any], value: Any) -> Optional[str]:
    for key, item in list(mapping.items()):
        if item is value and isinstance(key, str):
            return key
    return None


def _attribute(info: Dict[str, Any], obj: Any, key: str) -> Dict[str, Any]:
    from .describe import owner_info

    info["holder_name"] = "%s.%s" % (type(obj).__name__, key)
    owner = owner_info(obj, key)
    if owner is not None:
        info["owner"] = owner
    return info


# -- GradScaler: the loss before scaling is the one to check ---------------------------
def _wrap_scaler(torch: Any) -> None:
    amp = getattr(torch, "amp", None)
    scaler_class = getattr(getattr(amp, "grad_scaler", None), "GradScaler", None)
    if scaler_class is None:
        return
    original = scaler_class.scale

    def scale(self: Any, outputs: Any) -> Any:
        result = original(self, outputs)
        try:
            if isinstance(outputs, torch.Tensor) and isinstance(result, torch.Tensor):
                STATE.scaled = (weakref.ref(result), weakref.ref(outputs))
        except Exception:
            pass
        return result

    functools.update_wrapper(scale, original)
    scaler_class.scale = scale


# -- regression losses: shapes that broadcast, a lower-precision target -------------------
def _loss_wrapper(original: Any, name: str) -> Any:
    call = functools.partial(_call_loss, original, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call(args, kwargs)

    # torch.jit.script compiles `__wrapped__`'s source against the wrapper's
    # globals: torch.nn.functional's, so that a scripted model still compiles.
    function = types.FunctionType(
        wrapper.__code__, original.__globals__, original.__name__, None, wrapper.__closure__
    )
    functools.update_wrapper(function, original)
    return function


def _call_loss(original: Any, name: str, args: Any, kwargs: Any) -> Any:
    differ = False
    try:
        differ = _check_loss_arguments(name, args, kwargs)
    except Exception:
        pass
    if not differ:
        return original(*args, **kwargs)
    # torch warns about the sizes with stacklevel=2: that frame would be ours,
    # so the warnings are issued again from the caller's, as Python would.
    caller = sys._getframe(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = original(*args, **kwargs)
    module_globals = caller.f_globals
    for warning in caught:
        warnings.warn_explicit(
            warning.message,
            warning.category,
            caller.f_code.co_filename,
            caller.f_lineno,
            module=module_globals.get("__name__", "<string>"),
            registry=module_globals.setdefault("__warningregistry__", {}),
            module_globals=module_globals,
        )
    return result


def _check_loss_arguments(name: str, args: Any, kwargs: Any) -> bool:
    """Whether the shapes differ (torch warns then)."""
    torch = _TORCH[0]
    data = args[0] if len(args) > 0 else kwargs.get("input")
    target = args[1] if len(args) > 1 else kwargs.get("target")
    if not (isinstance(data, torch.Tensor) and isinstance(target, torch.Tensor)):
        return False
    broadcast = data.shape != target.shape
    low = target.dtype in (torch.float16, torch.bfloat16) and data.dtype in (
        torch.float32,
        torch.float64,
    )
    if broadcast or low:
        try:
            _loss_arguments(torch, name, data, target, broadcast, low)
        except Exception:
            pass
    return broadcast


def _numel(shape: Any) -> int:
    total = 1  # math.prod is Python 3.8+; the hooks run on 3.7
    for size in shape:
        total *= int(size)
    return total


def _loss_arguments(
    torch: Any, name: str, data: Any, target: Any, broadcast: bool, low: bool
) -> None:
    frames = events.user_frames(3)
    if not frames:
        return
    site = frames[0]
    key = (site["file"], site["line"])
    if broadcast and ("TTR202",) + key not in STATE.loss_sites:
        STATE.loss_sites.add(("TTR202",) + key)
        try:
            shape = tuple(torch.broadcast_shapes(data.shape, target.shape))
        except RuntimeError:
            shape = None  # torch raises on the call itself
        if shape is not None and _numel(shape) > max(data.numel(), target.numel()):
            events.emit(
                {
                    "kind": "finding",
                    "code": "TTR202",
                    "object": name,
                    "site": site,
                    "callers": frames[1:],
                    "input_shape": list(data.shape),
                    "target_shape": list(target.shape),
                    "broadcast_shape": list(shape),
                },
                key="TTR202:%s:%s" % key,
            )
    if low and ("TTR203",) + key not in STATE.loss_sites:
        STATE.loss_sites.add(("TTR203",) + key)
        values = target.detach()
        limit = EXACT_INTEGERS.get(str(target.dtype), 0)
        if bool((values == values.round()).all()) and float(values.abs().max()) <= limit:
            return  # labels that the dtype holds exactly (0/1, class indices)
        events.emit(
            {
                "kind": "finding",
                "code": "TTR203",
                "object": name,
                "site": site,
                "callers": frames[1:],
                "input_dtype": str(data.dtype).replace("torch.", ""),
                "target_dtype": str(target.dtype).replace("torch.", ""),
            },
            key="TTR203:%s:%s" % key,
        )
