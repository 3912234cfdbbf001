"""Training-loop hooks: modules with Dropout/BatchNorm evaluated under
no_grad in training mode (TT207), optimizer steps on a model in eval mode
(TT216), steps whose gradients were never zeroed (TT215), gradients
clipped while still scaled by a GradScaler (TT217), a DistributedSampler
iterated twice with the same epoch (TT108), and `--stop-after-steps`."""

from __future__ import annotations

import weakref
from typing import Any, Dict, List

from . import events

SAMPLED_PARAMS = 2  # TT215 looks at a few gradients: all of them move together


class StopRun(SystemExit):
    """Ends the run after --stop-after-steps optimizer steps (a SystemExit, so
    that the script's `except Exception` does not swallow it)."""


class _State:
    steps = 0
    stop_after = 0
    stopped = False
    zeroings = 0  # zero_grad calls (any optimizer or module) so far
    # TT207: call site -> [step count at its last no_grad call, description]
    eval_sites: Dict[Any, List[Any]] = {}
    # TT216: modules called with grad enabled since the last step, recorded
    # only while some optimizer still has to learn which models it trains
    called: Dict[int, Any] = {}
    learning = True  # record `called` now
    recorded = True  # `called` holds every call since the last step
    pending: weakref.WeakSet = weakref.WeakSet()  # optimizers stepped, models unknown
    # TT217
    scaled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    clips: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    # TT108
    sampler_epochs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Trains:
    """What one optimizer trains: the outermost modules called between two of
    its steps that hold its parameters (weakly), learned once."""

    __slots__ = ("roots", "reported")

    def __init__(self, roots: List[Any]) -> None:
        self.roots = roots
        self.reported = False


STATE = _State()
_GRADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STOCHASTIC: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TRAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STOCHASTIC_TYPES: tuple = ()
_GRAD_ENABLED: Any = None  # torch.is_grad_enabled, bound at install
_REGISTER: Any = None  # torch.nn.modules.module.register_module_forward_pre_hook
_HOOK: List[Any] = [None]  # the global forward pre-hook's handle while it is installed
# TT216: where each module was last put in eval mode (`.eval()`, `.train(False)`).
_EVAL_SITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_IN_TRAIN = [False]  # Module.train recurses into children: note the outermost call only


def install(torch: Any, stop_after: int) -> None:
    global _STOCHASTIC_TYPES, _GRAD_ENABLED, _REGISTER
    from torch import nn

    _GRAD_ENABLED = torch.is_grad_enabled
    _REGISTER = nn.modules.module.register_module_forward_pre_hook
    STATE.stop_after = stop_after
    _STOCHASTIC_TYPES = tuple(
        t
        for t in (
            getattr(nn.modules.dropout, "_DropoutNd", None),
            getattr(nn.modules.batchnorm, "_NormBase", None),
            getattr(nn, "AlphaDropout", None),
        )
        if isinstance(t, type)
    )
    _arm()  # until the first optimizer step: which models does it train?
    _watch_grad_mode(torch)
    import torch.optim.optimizer as optimizer

    if hasattr(optimizer, "register_optimizer_step_pre_hook"):
        optimizer.register_optimizer_step_pre_hook(_step_pre_hook)
        optimizer.register_optimizer_step_post_hook(_step_post_hook)
    _wrap_zeroing(torch)
    _wrap_mode(nn.Module)
    _wrap_scaler(torch)
    _wrap_clipping(torch)
    _wrap_distributed_sampler(torch)


# -- TT207 / TT216: forward calls ---------------------------------------------------
# A global forward hook sends every module call through torch's slow path, so
# ours is installed only while it has something to see: while gradients are
# disabled (TT207: every no_grad/inference_mode/set_grad_enabled(False) entry
# installs it, the first module call with gradients enabled removes it), and
# for the interval before an optimizer's first step (TT216 learns which
# models the optimizer trains, then checks their `.training` at each step).
def _arm() -> None:
    if _HOOK[0] is None:
        _HOOK[0] = _REGISTER(_forward_pre_hook)


def _disarm() -> None:
    handle, _HOOK[0] = _HOOK[0], None
    if handle is not None:
        handle.remove()


def _watch_grad_mode(torch: Any) -> None:
    """Install the forward hook whenever Python code turns gradients off."""
    grad_mode = getattr(getattr(torch, "autograd", None), "grad_mode", None)
    enabled = torch.is_grad_enabled

    def watching(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if _HOOK[0] is None and not enabled():
                _arm()
            return result

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(original, "__name__", "wrapper")
        wrapper.__qualname__ = getattr(original, "__qualname__", wrapper.__name__)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        return wrapper

    # no_grad enters and leaves through set_grad_enabled(...); enable_grad and
    # inference_mode set the mode themselves.
    for name, methods in (
        ("set_grad_enabled", ("__init__", "__enter__", "__exit__")),
        ("enable_grad", ("__exit__",)),
        ("inference_mode", ("__enter__", "__exit__")),
    ):
        cls = getattr(grad_mode, name, None)
        for method in methods:
            original = getattr(cls, "__dict__", {}).get(method)
            if callable(original):
                setattr(cls, method, watching(original))


def _stochastic(module: Any) -> bool:
    try:
        return _STOCHASTIC[module]
    except KeyError:
        pass
    except TypeError:
        return False
    value = any(isinstance(m, _STOCHASTIC_TYPES) for m in module.modules())
    _STOCHASTIC[module] = value
    return value


def _forward_pre_hook(module: Any, args: Any) -> None:
    try:
        if _GRAD_ENABLED():
            if STATE.learning:
                STATE.called[id(module)] = module
            else:
                _disarm()  # back to training: nothing to see until the next no_grad
            return
        if module.training and _stochastic(module):
            _no_grad_call(module)
    except Exception:
        pass


def _called_from_module_forward(module: Any) -> bool:
    """Whether this call comes from another training module's forward (then
    that outer call is the one to report)."""
    import sys

    import torch

    frame: Any = sys._getframe(3)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(owner, torch.nn.Module) and owner is not module and owner.training:
            return True
        if events._is_user_file(frame.f_code.co_filename) and frame.f_code.co_name != "forward":
            return False
        frame = frame.f_back
    return False


def _no_grad_call(module: Any) -> None:
    import torch

    if _called_from_module_forward(module):
        return
    site = events.user_site(4)
    if site is None:
        return
    key = (site["file"], site["line"])
    previous = STATE.eval_sites.get(key)
    layers = sorted(
        {type(m).__name__ for m in module.modules() if isinstance(m, _STOCHASTIC_TYPES)}
    )
    mode = "inference_mode" if torch.is_inference_mode_enabled() else "no_grad"
    description = {
        "site": site,
        "module": type(module).__qualname__,
        "layers": layers,
        "mode": mode,
    }
    if previous is not None and previous[0] == STATE.steps:
        # Called again with no optimizer step in between: an evaluation, not
        # a teacher or target network inside a training step.
        report_eval(previous[1], repeated=True)
    STATE.eval_sites[key] = [STATE.steps, description]


def report_eval(description: dict[str, Any], repeated: bool) -> None:
    site = description["site"]
    events.emit(
        dict(
            kind="finding",
            code="TT207",
            object=description["module"],
            repeated=repeated,
            **{k: v for k, v in description.items() if k != "module"},
        ),
        key="TT207:%s:%s" % (site["file"], site["line"]),
    )


def finish() -> None:
    """At the end of the run: a no_grad call that no step followed."""
    for steps, description in list(STATE.eval_sites.values()):
        if steps == STATE.steps:
            report_eval(description, repeated=False)


# -- optimizer steps ---------------------------------------------------------------
def _sampled(optimizer: Any) -> list[Any]:
    params = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if getattr(p, "grad", None) is not None:
                params.append(p)
                if len(params) >= SAMPLED_PARAMS:
                    return params
    return params


def _step_pre_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    try:
        _check_zeroing(optimizer)
        _check_eval_step(optimizer)
    except Exception:
        pass


def _step_post_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    try:
        grads = [(weakref.ref(p), weakref.ref(p.grad)) for p in _sampled(optimizer)]
        _GRADS[optimizer] = (grads, STATE.zeroings)
    except Exception:
        pass
    STATE.steps += 1
    if STATE.called:
        STATE.called = {}
    # Record the next interval only while an optimizer waits to learn its models.
    STATE.learning = STATE.recorded = bool(STATE.pending)
    if STATE.learning:
        _arm()
    elif _HOOK[0] is not None and _GRAD_ENABLED():
        _disarm()  # the step's own no_grad (or a clip's) installed it
    if STATE.stop_after and STATE.steps >= STATE.stop_after and not STATE.stopped:
        STATE.stopped = True
        raise StopRun(0)


def _check_zeroing(optimizer: Any) -> None:
    previous = _GRADS.get(optimizer)
    if previous is None:
        return
    grads, zeroings = previous
    if zeroings != STATE.zeroings or not grads:
        return
    for param_ref, grad_ref in grads:
        param = param_ref()
        if param is None or param.grad is None or param.grad is not grad_ref():
            return  # replaced (zero_grad(set_to_none=True), `p.grad = None`)
    site = events.user_site(3)
    events.emit(
        {
            "kind": "finding",
            "code": "TT215",
            "object": type(optimizer).__qualname__,
            "site": site,
            "step": STATE.steps + 1,
            "sampled": len(grads),
        },
        key="TT215:%s" % (site and (site["file"], site["line"]),),
    )


def _wrap_zeroing(torch: Any) -> None:
    def counting(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            STATE.zeroings += 1
            return original(*args, **kwargs)

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(original, "__name__", "zero_grad")
        wrapper.__doc__ = getattr(original, "__doc__", None)
        return wrapper

    torch.optim.Optimizer.zero_grad = counting(torch.optim.Optimizer.zero_grad)
    torch.nn.Module.zero_grad = counting(torch.nn.Module.zero_grad)
    original_zero = torch.Tensor.zero_

    def zero_(self: Any) -> Any:
        STATE.zeroings += 1  # `p.grad.zero_()` by hand
        return original_zero(self)

    zero_.__doc__ = original_zero.__doc__
    torch.Tensor.zero_ = zero_


def _check_eval_step(optimizer: Any) -> None:
    trains = _TRAINS.get(optimizer)
    if trains is None:
        if not STATE.recorded:
            STATE.pending.add(optimizer)  # learn at its next step
            return
        trains = _learn(optimizer)
    if trains.reported:
        return
    for ref in trains.roots:
        root = ref()
        if root is not None and not root.training:
            break
    else:
        return  # the usual case: O(models) attribute reads per step
    _eval_step(optimizer, trains)


def _wrap_mode(module_type: Any) -> None:
    """Note where a module is put in eval mode (a call per `.eval()`, not per
    step or module call)."""
    original = module_type.__dict__.get("train")
    if not callable(original):
        return

    def train(self: Any, mode: bool = True) -> Any:
        if _IN_TRAIN[0]:
            return original(self, mode)
        _IN_TRAIN[0] = True
        try:
            if not mode:
                try:
                    _EVAL_SITES[self] = events.user_site()
                except TypeError:
                    pass
            return original(self, mode)
        finally:
            _IN_TRAIN[0] = False

    train.__wrapped__ = original  # type: ignore[attr-defined]
    train.__doc__ = original.__doc__
    module_type.train = train


def _eval_site(modules: List[Any]) -> Any:
    for module in modules:
        try:
            site = _EVAL_SITES.get(module)
        except TypeError:
            continue
        if site is not None:
            return site
    return None


def _held(optimizer: Any) -> set:
    return {id(p) for group in optimizer.param_groups for p in group["params"]}


def _learn(optimizer: Any) -> _Trains:
    """The outermost modules called since the last step that hold parameters
    of this optimizer."""
    held = _held(optimizer)
    called = list(STATE.called.values())
    inner = {id(c) for m in called for c in m.modules() if c is not m}
    roots = [
        weakref.ref(m)
        for m in called
        if id(m) not in inner and any(id(p) in held for p in m.parameters())
    ]
    trains = _Trains(roots)
    _TRAINS[optimizer] = trains
    STATE.pending.discard(optimizer)
    return trains


def _eval_step(optimizer: Any, trains: _Trains) -> None:
    """A model the optimizer trains is in eval mode: report when every module
    holding its stepped parameters is, and a Dropout/BatchNorm in it is."""
    held = _held(optimizer)
    owners = []
    layer = None
    seen = set()
    for ref in trains.roots:
        root = ref()
        if root is None:
            continue
        for m in root.modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            if layer is None and not m.training and isinstance(m, _STOCHASTIC_TYPES):
                layer = m
            if any(id(p) in held and p.grad is not None for p in m.parameters(recurse=False)):
                owners.append(m)
    if layer is None or not owners or any(m.training for m in owners):
        return  # part of the model trains: a frozen BatchNorm is on purpose
    trains.reported = True
    site = events.user_site(4)
    roots = [r() for r in trains.roots]
    eval_site = _eval_site([m for m in roots if m is not None] + owners + [layer])
    events.emit(
        {
            "kind": "finding",
            "code": "TT216",
            "object": type(optimizer).__qualname__,
            "site": site,
            "step": STATE.steps + 1,
            "layer": type(layer).__name__,
            "owners": len(owners),
            "eval_site": eval_site,
        },
        key="TT216:%s" % (site and (site["file"], site["line"]),),
    )


# -- TT217: GradScaler and clipping ---------------------------------------------------
def _wrap_scaler(torch: Any) -> None:
    amp = getattr(torch, "amp", None)
    scaler_class = getattr(getattr(amp, "grad_scaler", None), "GradScaler", None)
    if scaler_class is None:
        return
    original_scale = scaler_class.scale
    original_unscale = scaler_class.unscale_
    original_step = scaler_class.step
    original_update = scaler_class.update

    def scale(self: Any, outputs: Any) -> Any:
        try:
            if self.is_enabled():
                STATE.scaled[self] = True
        except Exception:
            pass
        return original_scale(self, outputs)

    def unscale_(self: Any, optimizer: Any) -> Any:
        try:
            STATE.scaled.pop(self, None)
        except Exception:
            pass
        return original_unscale(self, optimizer)

    def step(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            clip = STATE.clips.pop(self, None)
            if clip is not None:
                events.emit(
                    dict(kind="finding", code="TT217", **clip),
                    key="TT217:%s"
                    % (clip["site"] and (clip["site"]["file"], clip["site"]["line"]),),
                )
        except Exception:
            pass
        return original_step(self, optimizer, *args, **kwargs)

    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            STATE.scaled.pop(self, None)
            STATE.clips.pop(self, None)
        except Exception:
            pass
        return original_update(self, *args, **kwargs)

    for name, function, original in (
        ("scale", scale, original_scale),
        ("unscale_", unscale_, original_unscale),
        ("step", step, original_step),
        ("update", update, original_update),
    ):
        function.__doc__ = original.__doc__
        setattr(function, "__wrapped__", original)  # noqa: B010 - for inspect.signature
        setattr(scaler_class, name, function)


def _wrap_clipping(torch: Any) -> None:
    utils = torch.nn.utils
    clip_module = getattr(utils, "clip_grad", None)
    for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
        original = getattr(utils, name, None)
        if original is None:
            continue
        wrapper = _clipping(original, name)
        setattr(utils, name, wrapper)
        if clip_module is not None and getattr(clip_module, name, None) is original:
            setattr(clip_module, name, wrapper)


def _clipping(original: Any, name: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            scalers = [s for s, on in list(STATE.scaled.items()) if on]
            if scalers:
                site = events.user_site(2)
                for scaler in scalers:
                    STATE.clips[scaler] = {
                        "object": name,
                        "site": site,
                        "scale": float(scaler.get_scale()),
                    }
        except Exception:
            pass
        return original(*args, **kwargs)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = name
    wrapper.__doc__ = original.__doc__
    return wrapper


# -- TT108: DistributedSampler -------------------------------------------------------
def _wrap_distributed_sampler(torch: Any) -> None:
    try:
        from torch.utils.data.distributed import DistributedSampler
    except ImportError:
        return
    original_iter = DistributedSampler.__iter__

    def __iter__(self: Any) -> Any:
        try:
            _sampler_iterated(self)
        except Exception:
            pass
        return original_iter(self)

    __iter__.__wrapped__ = original_iter  # type: ignore[attr-defined]
    DistributedSampler.__iter__ = __iter__  # type: ignore[method-assign]


def _sampler_iterated(sampler: Any) -> None:
    if not getattr(sampler, "shuffle", False):
        return
    epoch = getattr(sampler, "epoch", None)
    seen = STATE.sampler_epochs.setdefault(sampler, {})
    count = seen.get(epoch, 0) + 1
    seen[epoch] = count
    if count == 2:
        site = events.user_site(2)
        events.emit(
            {
                "kind": "finding",
                "code": "TT108",
                "object": type(sampler).__qualname__,
                "site": site,
                "epoch": epoch,
                "replicas": getattr(sampler, "num_replicas", None),
            },
            key="TT108:%s" % (site and (site["file"], site["line"]),),
        )
