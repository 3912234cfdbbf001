"""What a checked run found: the hooks' events turned into findings (one per
rule and place, on the user's lines, with what was measured), and the JSON
document `--output` writes."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchtrap import __version__
from torchtrap.findings import Finding, Range, RelatedLocation, Severity
from torchtrap.run import locate, losses

if TYPE_CHECKING:
    from torchtrap.probe.process import AttachedRun
    from torchtrap.run.launcher import Target

SCHEMA_VERSION = 1
RUN_SOURCE = "torchtrap-run"  # the diagnostics' source label in the editor
MIB = 2**20
# TT107: a worker whose private memory grows this much after its first batch
# is copying the dataset's objects page by page (measured, tests/run/scripts/
# tt107_*.py: 200,000 dicts, 2 workers, 100 batches each: +24 MB per worker
# from batch 1 to 64; the same data as numpy arrays: +2 MB).
MEMORY_GROWTH_BYTES = 16 * MIB
# TT105: share of a worker's first items that another worker produced too.
DUPLICATE_SHARE = 0.5
MIN_ITEMS = 4


def _rule(code: str) -> tuple[str, Severity]:
    from torchtrap.rules import RULES_BY_CODE
    from torchtrap.run.losses import RUNTIME_ONLY

    if code in RUNTIME_ONLY:  # a check no static rule can make
        return RUNTIME_ONLY[code]
    rule = RULES_BY_CODE[code]  # every other run check confirms a registered rule
    return rule.name, rule.default_severity


@dataclass
class RunFinding:
    """A finding from a run: the `Finding` the output formats render, plus
    the object's attribute path and what was measured."""

    finding: Finding
    object: str
    measured: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.finding.to_dict()
        data.update(source=RUN_SOURCE, object=self.object, measured=self.measured)
        return data


@dataclass
class RunReport:
    command: list[str]
    python: str
    cwd: str
    exit_code: int | None
    seconds: float
    findings: list[RunFinding]
    steps: int | None = None
    stopped_after_steps: int | None = None
    interrupted: bool = False
    crashed: str | None = None
    notes: list[str] = field(default_factory=list)
    started_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "torchtrap-run",
            "tool": {"name": "torchtrap", "version": __version__},
            "started_at": self.started_at,
            "command": self.command,
            "python": self.python,
            "cwd": self.cwd,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "steps": self.steps,
            "stopped_after_steps": self.stopped_after_steps,
            "interrupted": self.interrupted,
            "crashed": self.crashed,
            "notes": self.notes,
            "findings": [f.to_dict() for f in self.findings],
        }

    def summary(self) -> str:
        how = (
            f"stopped after {self.stopped_after_steps} optimizer steps"
            if self.stopped_after_steps
            else "interrupted"
            if self.interrupted
            else f"crashed ({self.crashed})"
            if self.crashed
            else f"exit code {self.exit_code}"
        )
        found = len(self.findings)
        what = f"{found} finding{'s' if found != 1 else ''}" if found else "nothing found"
        return f"torchtrap run: {what} ({how}, {self.seconds:.1f} s)"


def _finding_from_dict(data: dict[str, Any]) -> RunFinding:
    def rng(value: Any) -> Range:
        s, e = value["start"], value["end"]
        return Range.of(int(s["line"]), int(s["column"]), int(e["line"]), int(e["column"]))

    related = tuple(
        RelatedLocation(rng(r["range"]), str(r.get("message", "")), r.get("path"))
        for r in data.get("related") or ()
        if isinstance(r, dict) and "range" in r
    )
    finding = Finding(
        code=str(data["code"]),
        name=str(data.get("name", "")),
        message=str(data.get("message", "")),
        severity=Severity.parse(str(data.get("severity", "warning"))),
        range=rng(data["range"]),
        path=str(data.get("path", "")),
        related=related,
    )
    measured = data.get("measured")
    return RunFinding(
        finding, str(data.get("object", "")), measured if isinstance(measured, dict) else {}
    )


def load_report(path: str | os.PathLike[str]) -> RunReport:
    """A report written by `torchtrap run --output`; ValueError when the
    file is not one."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise ValueError(f"{path} is not JSON") from None
    if not isinstance(doc, dict) or doc.get("kind") != "torchtrap-run":
        raise ValueError(f"{path} is not a `torchtrap run` report")
    try:
        findings = [_finding_from_dict(f) for f in doc.get("findings") or ()]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: a finding is malformed ({exc})") from None
    return RunReport(
        command=list(doc.get("command") or ()),
        python=str(doc.get("python", "")),
        cwd=str(doc.get("cwd", "")),
        exit_code=doc.get("exit_code"),
        seconds=float(doc.get("seconds") or 0.0),
        findings=findings,
        steps=doc.get("steps"),
        stopped_after_steps=doc.get("stopped_after_steps"),
        interrupted=bool(doc.get("interrupted")),
        crashed=doc.get("crashed"),
        notes=list(doc.get("notes") or ()),
        started_at=str(doc.get("started_at", "")),
    )


# -- events -> findings ---------------------------------------------------------------
class _Builder:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.loaders: dict[int, dict[str, Any]] = {}
        for event in events:
            if event.get("kind") == "loader" and isinstance(event.get("loader"), int):
                self.loaders.setdefault(event["loader"], event)
        self.findings: dict[tuple[Any, ...], RunFinding] = {}

    def add(
        self,
        code: str,
        message: str,
        where: Range | None,
        path: str | None,
        obj: str,
        measured: dict[str, Any],
        related: Iterable[tuple[dict[str, Any] | None, str]] = (),
    ) -> None:
        if where is None or path is None:
            return
        key = (code, path, where.start.line, obj)
        if key in self.findings:
            return
        name, severity = _rule(code)
        extra = []
        for site, text in related:
            rng = locate.site_range(site) if site else None
            if rng is not None and site is not None:
                same = os.path.abspath(site["file"]) == os.path.abspath(path)
                if not (same and rng.start.line == where.start.line):
                    extra.append(RelatedLocation(rng, text, None if same else site["file"]))
        finding = Finding(
            code=code,
            name=name,
            message=f"{message} (seen when run)",
            severity=severity,
            range=where,
            path=path,
            related=tuple(extra),
        )
        self.findings[key] = RunFinding(finding, obj, measured)

    def place(self, owner: Any, *sites: dict[str, Any] | None) -> tuple[Range | None, str | None]:
        """The assignment of the object's attribute, else the first site."""
        if isinstance(owner, dict):
            rng = locate.assignment_range(owner)
            if rng is not None:
                return rng, str(owner["file"])
        for site in sites:
            if site:
                rng = locate.site_range(site)
                if rng is not None:
                    return rng, str(site["file"])
        return None, None

    def loader_sites(self, loader: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        info = self.loaders.get(loader, {})
        return info.get("created"), info.get("site")


def _workers_phrase(n: int, total: int) -> str:
    return f"all {total} workers" if n == total else f"{n} of {total} workers"


def _cuda(b: _Builder, event: dict[str, Any]) -> None:
    code = str(event["code"])
    paths = [str(p) for p in event.get("paths") or [event.get("object")]]
    count = int(event.get("count") or len(paths))
    shown = ", ".join(paths[:3]) + (f" and {count - 3} more" if count > 3 else "")
    method = event.get("start_method") or "default"
    workers = event.get("workers")
    what = "the dataset" if code == "TT103" else str(event.get("object", "")).split(".")[0]
    message = (
        f"{shown}: {count} CUDA tensor{'s' if count != 1 else ''} ({event.get('device')})"
        f" reachable from {what} when a DataLoader with {workers} workers started"
        f" (start method {method}): each worker gets them, pickled through CUDA IPC"
        " or inherited by fork"
    )
    created, site = b.loader_sites(event.get("loader"))
    where, path = b.place(event.get("owner"), site, created)
    measured = {
        k: event.get(k)
        for k in ("paths", "count", "device", "shape", "workers", "start_method", "walked")
    }
    if event.get("truncated"):
        measured["truncated"] = event["truncated"]
    b.add(
        code,
        message,
        where,
        path,
        paths[0],
        measured,
        [(site, "the DataLoader iterator started here")],
    )


def _rng_groups(events: list[dict[str, Any]]) -> dict[tuple[Any, Any], dict[Any, dict[str, Any]]]:
    """(loader, epoch) -> worker id -> merged worker events."""
    groups: dict[tuple[Any, Any], dict[Any, dict[str, Any]]] = defaultdict(dict)
    for event in events:
        kind = event.get("kind")
        if kind not in ("worker", "worker_used", "worker_memory", "worker_items"):
            continue
        slot = groups[(event.get("loader"), event.get("epoch"))].setdefault(event.get("worker"), {})
        for key, value in event.items():
            if key == "kind":
                continue
            if key == "used" and isinstance(value, dict):
                slot.setdefault("used", {}).update(value)
            else:
                slot[key] = value
    return groups


def _same_state(
    b: _Builder,
    groups: dict[tuple[Any, Any], dict[Any, dict[str, Any]]],
) -> None:
    # path -> facts, one finding per generator
    across: dict[str, dict[str, Any]] = {}
    for (loader, epoch), workers in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        total = max((int(w.get("workers") or 0) for w in workers.values()), default=0)
        paths: set[str] = set()
        for w in workers.values():
            paths.update((w.get("rngs") or {}).keys())
        for path in paths:
            states = [
                (wid, w["rngs"][path])
                for wid, w in workers.items()
                if path in (w.get("rngs") or {})
            ]
            used = any((w.get("used") or {}).get(path) for w in workers.values())
            counts = Counter(s["state"] for _, s in states if s.get("state"))
            if not counts or not used:
                continue
            state, n = counts.most_common(1)[0]
            if n >= 2:
                first = states[0][1]
                across.setdefault(
                    path,
                    {"loader": loader, "epoch": epoch, "n": n, "total": total, "info": first},
                )
    for path, fact in across.items():
        info = fact["info"]
        created, site = b.loader_sites(fact["loader"])
        where, file = b.place(info.get("owner"), created, site)
        message = (
            f"{path} ({info.get('type')}): the same state in"
            f" {_workers_phrase(fact['n'], fact['total'])} of the DataLoader"
            f" (epoch {int(fact['epoch']) + 1}), and the workers drew from it: they produce"
            " the same random numbers"
        )
        b.add(
            "TT101",
            message,
            where,
            file,
            path,
            {"type": info.get("type"), "workers_same": fact["n"], "workers": fact["total"]},
            [(created, "the DataLoader is created here")],
        )
    # Across epochs: worker k starts each epoch from the same state.
    by_worker: dict[tuple[Any, Any, str], list[tuple[Any, str, bool]]] = defaultdict(list)
    for (loader, epoch), workers in groups.items():
        for wid, w in workers.items():
            for path, rng in (w.get("rngs") or {}).items():
                if rng.get("state"):
                    used = bool((w.get("used") or {}).get(path))
                    by_worker[(loader, wid, path)].append((epoch, rng["state"], used))
    for (loader, _wid, path), seen in sorted(by_worker.items(), key=repr):
        if path in across or len(seen) < 2:
            continue
        repeats = Counter(state for _, state, _ in seen)
        if repeats.most_common(1)[0][1] >= 2 and any(u for _, _, u in seen):
            info = next(
                w["rngs"][path]
                for workers in groups.values()
                for w in workers.values()
                if path in (w.get("rngs") or {})
            )
            created, site = b.loader_sites(loader)
            where, file = b.place(info.get("owner"), created, site)
            message = (
                f"{path} ({info.get('type')}): each worker starts every epoch from the same"
                f" state ({len(seen)} epochs seen): every epoch repeats the same random numbers"
            )
            b.add(
                "TT101",
                message,
                where,
                file,
                path,
                {"epochs": len(seen)},
                [(created, "the DataLoader is created here")],
            )
            across[path] = {}


def _numpy_global(b: _Builder, groups: dict[tuple[Any, Any], dict[Any, dict[str, Any]]]) -> None:
    for (loader, epoch), workers in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        total = max((int(w.get("workers") or 0) for w in workers.values()), default=0)
        states = [w.get("numpy_global") for w in workers.values() if w.get("numpy_global")]
        drew = any(
            w.get("numpy_global_after") and w.get("numpy_global_after") != w.get("numpy_global")
            for w in workers.values()
        )
        counts = Counter(states)
        if not counts or not drew:
            continue
        _state, n = counts.most_common(1)[0]
        if n < 2:
            continue
        created, site = b.loader_sites(loader)
        where, file = b.place(None, created, site)
        message = (
            f"numpy's global random generator: the same state in {_workers_phrase(n, total)}"
            f" (epoch {int(epoch) + 1}), and the dataset drew from it: the workers produce the"
            " same np.random numbers"
        )
        b.add("TT102", message, where, file, "numpy.random", {"workers_same": n, "workers": total})
        return
    by_worker: dict[tuple[Any, Any], list[tuple[Any, Any, bool]]] = defaultdict(list)
    for (loader, epoch), workers in groups.items():
        for wid, w in workers.items():
            if w.get("numpy_global"):
                drew = bool(w.get("numpy_global_after")) and w.get("numpy_global_after") != w.get(
                    "numpy_global"
                )
                by_worker[(loader, wid)].append((epoch, w["numpy_global"], drew))
    for (loader, _wid), seen in sorted(by_worker.items(), key=repr):
        repeats = Counter(state for _, state, _ in seen)
        if len(seen) >= 2 and repeats.most_common(1)[0][1] >= 2 and any(d for _, _, d in seen):
            created, site = b.loader_sites(loader)
            where, file = b.place(None, created, site)
            message = (
                "numpy's global random generator: each worker starts every epoch from the"
                f" same state ({len(seen)} epochs seen): every epoch repeats the same np.random"
                " numbers"
            )
            b.add("TT102", message, where, file, "numpy.random", {"epochs": len(seen)})
            return


def _iterable(b: _Builder, groups: dict[tuple[Any, Any], dict[Any, dict[str, Any]]]) -> None:
    for (loader, _epoch), workers in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        info = b.loaders.get(loader, {})
        if not info.get("iterable"):
            continue
        lists = {wid: w.get("items") or [] for wid, w in workers.items() if w.get("items")}
        if len(lists) < 2:
            continue
        owners: dict[str, set[Any]] = defaultdict(set)
        for wid, items in lists.items():
            for fp in items:
                owners[fp].add(wid)
        shared = {fp for fp, ws in owners.items() if len(ws) >= 2}
        worst = 0.0
        for items in lists.values():
            distinct = set(items)
            if len(items) < MIN_ITEMS or len(distinct) < 0.8 * len(items):
                worst = -1.0  # a stream of few distinct values: duplicates say nothing
                break
            worst = max(worst, len(distinct & shared) / len(distinct))
        if worst < DUPLICATE_SHARE:
            continue
        total_items = sum(len(v) for v in lists.values())
        dup_items = sum(1 for v in lists.values() for fp in v if fp in shared)
        created, site = info.get("created"), info.get("site")
        where, file = b.place(None, created, site)
        message = (
            f"{info.get('dataset_type')}: {dup_items} of the {total_items} first items of"
            f" {len(lists)} workers were produced by more than one worker: every worker"
            " iterates the whole stream"
        )
        b.add(
            "TT105",
            message,
            where,
            file,
            "dataset",
            {"items": total_items, "duplicated": dup_items, "workers": len(lists)},
        )


def _memory(b: _Builder, groups: dict[tuple[Any, Any], dict[Any, dict[str, Any]]]) -> None:
    containers: dict[Any, list[dict[str, Any]]] = {}
    for event in b.events:
        if event.get("kind") == "containers":
            containers.setdefault(event.get("loader"), list(event.get("containers") or ()))
    for (loader, _epoch), workers in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        held = containers.get(loader)
        if not held:
            continue  # growth without large Python containers: buffers, not copies
        # From the first batch on: a worker's buffers for one batch are there by
        # then, pages copied on reading keep coming with every batch.
        growth: list[tuple[Any, int, int, int]] = []  # worker, first, last, batches
        for wid, w in workers.items():
            series = w.get("memory_series") or []
            if len(series) >= 2:
                growth.append((wid, int(series[0][1]), int(series[-1][1]), int(series[-1][0])))
        if not growth or max(g[2] - g[1] for g in growth) < MEMORY_GROWTH_BYTES:
            continue
        info = b.loaders.get(loader, {})
        created = info.get("created")
        first = held[0]
        where, file = b.place(first.get("owner"), created, info.get("site"))
        numbers = ", ".join(
            f"worker {wid}: {start / MIB:.0f} → {end / MIB:.0f} MB from batch 1 to {n}"
            for wid, start, end, n in sorted(growth, key=repr)
        )
        message = (
            f"{first['path']} ({first['type']} of {first['length']:,} Python objects): each"
            f" DataLoader worker's private memory grew as it read items ({numbers}): reading a"
            " Python object writes its reference count, so every worker copies the pages it"
            " reads; hold the data in numpy arrays or tensors"
        )
        b.add(
            "TT107",
            message,
            where,
            file,
            str(first["path"]),
            {
                "containers": [{k: c.get(k) for k in ("path", "type", "length")} for c in held],
                "workers": [
                    {"worker": wid, "first_batch_bytes": s, "last_bytes": e, "batches": n}
                    for wid, s, e, n in growth
                ],
            },
            [(created, "the DataLoader is created here")],
        )


def _training(b: _Builder, event: dict[str, Any]) -> None:
    code = str(event.get("code"))
    site = event.get("site")
    where, path = b.place(None, site)
    obj = str(event.get("object", ""))
    if code == "TT207":
        layers = ", ".join(event.get("layers") or ()) or "Dropout/BatchNorm"
        again = (
            "called again with no optimizer step in between"
            if event.get("repeated")
            else "no optimizer step followed"
        )
        message = (
            f"{obj}: called under torch.{event.get('mode')}() while in training mode ({again});"
            f" its {layers} layers use training behaviour: call .eval() first"
        )
        measured = {"layers": event.get("layers"), "mode": event.get("mode")}
    elif code == "TT215":
        message = (
            f"{obj}.step() at step {event.get('step')}: the gradients are the ones of the"
            " previous step plus this one (nothing zeroed them in between): they accumulate"
            " across steps"
        )
        measured = {"step": event.get("step"), "sampled_parameters": event.get("sampled")}
    elif code == "TT216":
        message = (
            f"{obj}.step() at step {event.get('step')}: the forward pass ran with"
            f" {event.get('layer')} in eval mode and every module whose parameters this"
            " step updates was in eval mode: the model trains in eval mode"
        )
        measured = {"step": event.get("step"), "layer": event.get("layer")}
    elif code == "TT217":
        message = (
            f"{obj}: gradients clipped while still multiplied by the GradScaler's scale"
            f" ({event.get('scale'):g}) before scaler.step(): call scaler.unscale_(optimizer)"
            " before clipping"
        )
        measured = {"scale": event.get("scale")}
    elif code == "TT108":
        message = (
            f"{obj}: iterated a second time with epoch {event.get('epoch')}: every epoch"
            " shuffles into the same order; call sampler.set_epoch(epoch) before each epoch"
        )
        measured = {"epoch": event.get("epoch"), "replicas": event.get("replicas")}
    else:
        return
    b.add(code, message, where, path, obj, measured)


def build_report(
    events: list[dict[str, Any]],
    target: Target,
    args: list[str],
    python: str,
    cwd: str,
    run: AttachedRun,
    stop_after_steps: int,
) -> RunReport:
    b = _Builder(events)
    locate.clear()
    for event in events:
        if event.get("kind") == "finding":
            if event.get("code") in losses.CODES:
                losses.add(b, event)
            elif event.get("code") in ("TT103", "TT104"):
                _cuda(b, event)
            else:
                _training(b, event)
    groups = _rng_groups(events)
    _same_state(b, groups)
    _numpy_global(b, groups)
    _iterable(b, groups)
    _memory(b, groups)
    exit_event = next((e for e in events if e.get("kind") == "exit"), {})
    notes = [
        f"hooks for {e.get('hooks')} not installed: {e.get('error')}"
        for e in events
        if e.get("kind") == "hook_error"
    ]
    if not any(e.get("kind") == "hooks" for e in events):
        notes.append("the script never imported torch: nothing was checked")
    if run.killed:
        notes.append("the script did not stop within the grace period and was killed")
    findings = sorted(
        b.findings.values(),
        key=lambda f: (f.finding.path, f.finding.range.start, f.finding.code),
    )
    stopped = stop_after_steps if exit_event.get("stopped") else None
    return RunReport(
        command=[target.describe(), *args],
        python=python,
        cwd=cwd,
        exit_code=run.returncode,
        seconds=run.seconds,
        findings=findings,
        steps=exit_event.get("steps"),
        stopped_after_steps=stopped,
        interrupted=run.interrupted or run.cancelled or bool(exit_event.get("interrupted")),
        crashed=exit_event.get("crashed"),
        notes=notes,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
