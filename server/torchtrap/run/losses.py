"""The loss checks' events (runtime_hooks/losses.py) turned into findings: a
loss that is not finite (TT201 when the log of a softmax/sigmoid made it,
else TTR201), graphs of earlier steps kept alive (TT214), and regression
losses whose arguments broadcast (TTR202) or whose target is in a lower
precision than the output (TTR203).

Checks that no static rule has carry a `TTR` code (TorchTrap Run): the same
family number as the static rules they sit beside, reported only by `run`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from torchtrap.findings import Range, Severity


class _Builder(Protocol):
    """What these checks need of the report's builder (``report`` imports
    this module, so it is described here, not imported)."""

    def add(
        self,
        code: str,
        message: str,
        where: Range | None,
        path: str | None,
        obj: str,
        measured: dict[str, Any],
        related: Iterable[tuple[dict[str, Any] | None, str]] = (),
    ) -> None: ...

    def place(
        self, owner: Any, *sites: dict[str, Any] | None
    ) -> tuple[Range | None, str | None]: ...


# code -> (name, default severity) of the checks only a run can make
RUNTIME_ONLY: dict[str, tuple[str, Severity]] = {
    "TTR201": ("non-finite-loss", Severity.WARNING),
    "TTR202": ("loss-arguments-broadcast", Severity.WARNING),
    "TTR203": ("low-precision-target", Severity.WARNING),
}
CODES = frozenset({"TT201", "TT214", *RUNTIME_ONLY})
_PRECISION = {"float16": "11 significant bits", "bfloat16": "8 significant bits"}


def _line(site: dict[str, Any] | None) -> str:
    if not site:
        return "?"
    return f"{site.get('file', '?').rsplit('/', 1)[-1]}:{site.get('line', '?')}"


def add(b: _Builder, event: dict[str, Any]) -> None:
    code = str(event.get("code"))
    if code in ("TT201", "TTR201"):
        _nonfinite(b, event)
    elif code == "TT214":
        _kept(b, event)
    elif code == "TTR202":
        _broadcast(b, event)
    elif code == "TTR203":
        _precision(b, event)


def _related_callers(site: dict[str, Any] | None, text: str) -> list[tuple[Any, str]]:
    callers = (site or {}).get("callers") or []
    return [(caller, text) for caller in callers[:1]]


def _nonfinite(b: _Builder, event: dict[str, Any]) -> None:
    step = event.get("step")
    value = event.get("value")
    backward = event.get("site")
    producer = event.get("producer_site")
    op = event.get("op")
    shown = f"{value}" if value else "not finite"
    head = f"the loss is {shown} at backward {step}, the first that is not finite"
    if step and int(step) > 1:
        head += f" ({int(step) - 1} finite before)"
    if event.get("leaf"):
        what = "the input data" if event["leaf"] == "data" else "a parameter"
        detail = (
            f": {what} already held {event.get('leaf_nonfinite')} non-finite values"
            f" (shape {tuple(event.get('leaf_shape') or ())}) when `{op}` read it"
        )
    elif op:
        zeros, negative = event.get("input_zeros"), event.get("input_negative")
        numel = event.get("input_numel")
        detail = (
            f": `{op}` made the first non-finite value from finite inputs"
            if event.get("inputs_seen", True)
            else f": `{op}` is the first operation seen with a non-finite output (its inputs"
            " were not kept to check)"
        )
        if event.get("source") == "probability":
            detail = (
                f": `{op}` of a {event.get('probability')} output that holds"
                f" {zeros} zeros of {numel} (probabilities that underflowed to 0) gives -inf,"
                " and its gradient NaN; use log_softmax/logsigmoid, or clamp the"
                " probabilities first"
            )
        elif zeros or negative:
            parts = []
            if zeros:
                parts.append(f"{zeros} zeros")
            if negative:
                parts.append(f"{negative} negative values")
            detail += f" (its input held {' and '.join(parts)} of {numel})"
    else:
        detail = ": the operation that made it was not found"
    message = head + detail
    related: list[tuple[Any, str]] = []
    if producer:
        where, path = b.place(None, producer)
        related.append((backward, f"backward {step}: the loss is {shown} here"))
        related.extend(_related_callers(producer, "called from here"))
    else:
        where, path = b.place(None, backward)
    measured = {
        k: event.get(k)
        for k in (
            "step",
            "value",
            "op",
            "op_node",
            "loss_type",
            "input_zeros",
            "input_negative",
            "input_numel",
            "probability",
            "leaf",
            "leaf_nonfinite",
            "line_from_step",
        )
        if event.get(k) is not None
    }
    b.add(str(event["code"]), message, where, path, str(op or "loss"), measured, related)


def _kept(b: _Builder, event: dict[str, Any]) -> None:
    how = event.get("how")
    site = event.get("site")
    holder = event.get("holder_name")
    kept, watched, step = event.get("kept"), event.get("watched"), event.get("step")
    seen = (
        f"the graphs of {kept} of the {watched} earlier losses backpropagated before"
        f" backward {step} are still alive"
    )
    if how == "append":
        what = f"`{holder}`" if holder else f"a {event.get('holder_type')}"
        message = (
            f"{seen}: {what} ({event.get('holder_length')} items) keeps the loss tensors"
            f" appended here, and each keeps its step's autograd graph: memory grows every"
            " step; append `loss.item()` (or `loss.detach()`)"
        )
    elif how == "op":
        into = f" (`{holder}`)" if holder else ""
        message = (
            f"{seen}: this line adds each step's loss, with its autograd graph, to a tensor{into}"
            " that lives across steps, which links every step's graph into one:"
            " memory grows every step; add `loss.item()` (or `loss.detach()`)"
        )
    elif how == "holder":
        what = f"`{holder}`" if holder else f"a {event.get('holder_type')}"
        message = (
            f"{seen}: {what} ({event.get('holder_length')} items) holds them, each with its"
            " step's autograd graph: memory grows every step; keep `loss.item()` (or"
            " `loss.detach()`)"
        )
    else:
        message = (
            f"{seen}: something keeps each step's loss with its autograd graph: memory grows"
            " every step; keep `loss.item()` (or `loss.detach()`)"
        )
    where, path = b.place(event.get("owner") if how == "holder" else None, site)
    related = _related_callers(site, "called from here")
    if event.get("backward_site") and how != "holder":
        related.append((event["backward_site"], "the loss is backpropagated here"))
    measured = {
        k: event.get(k)
        for k in ("step", "kept", "watched", "first_kept", "how", "holder_name", "holder_length")
        if event.get(k) is not None
    }
    b.add(
        "TT214", message, where, path, str(holder or event.get("op") or "loss"), measured, related
    )


def _broadcast(b: _Builder, event: dict[str, Any]) -> None:
    data = tuple(event.get("input_shape") or ())
    target = tuple(event.get("target_shape") or ())
    shape = tuple(event.get("broadcast_shape") or ())
    pairs = 1
    for size in shape:
        pairs *= int(size)
    message = (
        f"{event.get('object')}: input {data} and target {target} broadcast to {shape}:"
        f" the loss compares all {pairs:,} pairs of outputs and targets, not each output"
        " with its own target (PyTorch only warns); give both the same shape"
        " (`target.view_as(input)` or `input.squeeze(-1)`)"
    )
    site = event.get("site")
    where, path = b.place(None, site)
    b.add(
        "TTR202",
        message,
        where,
        path,
        str(event.get("object")),
        {k: event.get(k) for k in ("input_shape", "target_shape", "broadcast_shape")},
        _related_callers(site, "called from here"),
    )


def _precision(b: _Builder, event: dict[str, Any]) -> None:
    low, high = event.get("target_dtype"), event.get("input_dtype")
    message = (
        f"{event.get('object')}: the target is {low} and the output {high}: the targets were"
        f" rounded to {low} ({_PRECISION.get(str(low), 'fewer bits')}"
        f"{', nothing above 65504' if low == 'float16' else ''}) before the loss compares"
        f" them with the {high} output; keep the targets in {high}"
    )
    site = event.get("site")
    where, path = b.place(None, site)
    b.add(
        "TTR203",
        message,
        where,
        path,
        str(event.get("object")),
        {"input_dtype": high, "target_dtype": low},
        _related_callers(site, "called from here"),
    )
