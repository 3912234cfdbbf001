"""What a checked run found: the hooks' events turned into findings (one per
rule and place, on the user's lines, with what was measured), and the JSON
document `--output` writes."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchtrap import RULE_DOCS_URL, __version__
from torchtrap.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Range,
    RelatedLocation,
    Severity,
)
from torchtrap.run import locate, losses

if TYPE_CHECKING:
    from torchtrap.probe.process import AttachedRun
    from torchtrap.run.target import Target

SCHEMA_VERSION = 1
# The rules a run confirms; each one's docs say what the run reports.
RUN_CODES = frozenset(
    {
        "TT101",
        "TT102",
        "TT103",
        "TT104",
        "TT105",
        "TT107",
        "TT108",
        "TT201",
        "TT207",
        "TT214",
        "TT215",
        "TT216",
        "TT217",
    }
)
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
        data.update(
            source=RUN_SOURCE,
            object=self.object,
            measured=self.measured,
            docs=docs_url(self.finding.code),
        )
        return data


def docs_url(code: str) -> str:
    """The rule's page, as `check`'s SARIF and the editor link it."""
    return f"{RULE_DOCS_URL}{code}.md"


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
    # Interrupted: where the script was, and the DataLoader batches in flight.
    interrupted_at: dict[str, Any] | None = None
    in_flight: list[dict[str, Any]] = field(default_factory=list)

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
            "interrupted_at": self.interrupted_at,
            "in_flight": self.in_flight,
            "findings": [f.to_dict() for f in self.findings],
        }

    def summary(self) -> str:
        how = (
            f"stopped after {self.stopped_after_steps} optimizer steps"
            if self.stopped_after_steps
            else self._interrupted()
            if self.interrupted
            else f"crashed ({self.crashed})"
            if self.crashed
            else f"exit code {self.exit_code}"
        )
        found = len(self.findings)
        what = f"{found} finding{'s' if found != 1 else ''}" if found else "nothing found"
        return f"torchtrap run: {what} ({how}, {self.seconds:.1f} s)"

    def _interrupted(self) -> str:
        waiting = next((w for w in self.in_flight if w.get("kind") == "waiting"), None)
        if waiting is not None and waiting.get("worker") is not None:
            return (
                f"interrupted while waiting for batch {waiting.get('batch')} from"
                f" DataLoader worker {waiting['worker']}"
            )
        where = self.interrupted_at
        if where:
            return f"interrupted at {_short(where)}"
        return "interrupted"


def _short(where: dict[str, Any]) -> str:
    path = str(where.get("file", "?"))
    try:
        rel = os.path.relpath(path)
        path = path if rel.startswith("..") else rel
    except ValueError:
        pass
    function = where.get("function")
    inside = f" in {function}()" if function and function != "<module>" else ""
    return f"{path}:{where.get('line')}{inside}"


def in_flight_notes(items: list[dict[str, Any]]) -> list[str]:
    """What a hung run was doing when interrupted: the batch the main process
    waited for (and which worker had it), and where each busy worker was."""
    notes = []
    for item in items:
        loader = item.get("loader_site")
        at = f" (the DataLoader iterated at {_short(loader)})" if loader else ""
        if item.get("kind") == "waiting":
            if item.get("worker") is None:
                continue
            indices = item.get("indices")
            what = f", items {_items(indices, item.get('size'))}" if indices is not None else ""
            others = [w for b, w in item.get("outstanding") or () if b != item.get("batch")]
            busy = (
                f"; batches also in flight at workers {', '.join(map(str, sorted(set(others))))}"
                if others
                else ""
            )
            notes.append(
                f"when interrupted, the main process was waiting for batch {item.get('batch')}"
                f" from DataLoader worker {item['worker']}{what}{at}{busy}"
            )
        elif item.get("kind") == "worker_interrupted":
            where = item.get("where")
            place = f" at {_short(where)}" if where else ""
            got = item.get("item")
            which = f" on item {got!r}" if got is not None else ""
            notes.append(
                f"DataLoader worker {item.get('worker')} was fetching items"
                f" {_items(item.get('indices'), None)}{which}{place}{at}"
            )
    return notes


def _items(indices: Any, size: Any) -> str:
    if not isinstance(indices, list):
        return repr(indices)
    shown = ", ".join(repr(i) for i in indices)
    more = isinstance(size, int) and size > len(indices)
    return f"[{shown}{', ...' if more else ''}]"


def _finding_from_dict(data: dict[str, Any]) -> RunFinding:
    def rng(value: Any) -> Range:
        s, e = value["start"], value["end"]
        return Range.of(int(s["line"]), int(s["column"]), int(e["line"]), int(e["column"]))

    related = tuple(
        RelatedLocation(rng(r["range"]), str(r.get("message", "")), r.get("path"))
        for r in data.get("related") or ()
        if isinstance(r, dict) and "range" in r
    )
    fixes = []
    for fix in data.get("fixes") or ():
        if isinstance(fix, dict) and "title" in fix:
            edits = tuple(Edit(rng(e["range"]), str(e["new_text"])) for e in fix.get("edits") or ())
            made = Fix(str(fix["title"]), Applicability(fix.get("applicability", "unsafe")), list)
            made._edits = edits
            fixes.append(made)
    finding = Finding(
        code=str(data["code"]),
        name=str(data.get("name", "")),
        message=str(data.get("message", "")),
        severity=Severity.parse(str(data.get("severity", "warning"))),
        range=rng(data["range"]),
        path=str(data.get("path", "")),
        fixes=tuple(fixes),
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
        interrupted_at=where if isinstance(where := doc.get("interrupted_at"), dict) else None,
        in_flight=[i for i in doc.get("in_flight") or () if isinstance(i, dict)],
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
        " or inherited by fork; keep CPU tensors there and move each batch to the GPU"
        " in the training loop"
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


_RNG_HELP = (
    "create the generator in each worker (in worker_init_fn, or lazily in __getitem__)"
    " seeded from torch.initial_seed(), which differs per worker and epoch"
)


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
            f" the same random numbers; {_RNG_HELP}"
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
                f" state ({len(seen)} epochs seen): every epoch repeats the same random numbers;"
                f" {_RNG_HELP}"
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


_SEED_HELP = (
    "seed it from torch.initial_seed() in worker_init_fn"
    " (np.random.seed(torch.initial_seed() % 2**32)): different in each worker and epoch"
)


def _seed_site(workers: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """Where the worker_init_fn called np.random.seed: the line to change."""
    return next((w["numpy_seed_site"] for w in workers if w.get("numpy_seed_site")), None)


def _seed_related(
    seeded: dict[str, Any] | None, created: dict[str, Any] | None
) -> list[tuple[dict[str, Any] | None, str]]:
    related: list[tuple[dict[str, Any] | None, str]] = [(created, "the DataLoader is created here")]
    if seeded is not None:
        related.insert(0, (seeded, "np.random.seed is called here in each worker"))
    return related


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
        seeded = _seed_site(workers.values())
        where, file = b.place(None, seeded, created, site)
        message = (
            f"numpy's global random generator: the same state in {_workers_phrase(n, total)}"
            f" (epoch {int(epoch) + 1}), and the dataset drew from it: the workers produce the"
            f" same np.random numbers; {_SEED_HELP}"
        )
        b.add(
            "TT102",
            message,
            where,
            file,
            "numpy.random",
            {"workers_same": n, "workers": total},
            _seed_related(seeded, created),
        )
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
            seeded = _seed_site(
                w for (lid, _e), ws in groups.items() if lid == loader for w in ws.values()
            )
            where, file = b.place(None, seeded, created, site)
            message = (
                "numpy's global random generator: each worker starts every epoch from the"
                f" same state ({len(seen)} epochs seen): every epoch repeats the same np.random"
                f" numbers; {_SEED_HELP}"
            )
            b.add(
                "TT102",
                message,
                where,
                file,
                "numpy.random",
                {"epochs": len(seen)},
                _seed_related(seeded, created),
            )
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
        iter_site = info.get("iter_site")
        where, file = b.place(None, iter_site, created, site)
        message = (
            f"{info.get('dataset_type')}: {dup_items} of the {total_items} first items of"
            f" {len(lists)} workers were produced by more than one worker: every worker"
            " iterates the whole stream; in __iter__, give each worker its own share"
            " (torch.utils.data.get_worker_info().id and .num_workers)"
        )
        b.add(
            "TT105",
            message,
            where,
            file,
            "dataset",
            {"items": total_items, "duplicated": dup_items, "workers": len(lists)},
            [(created, f"the DataLoader with {len(lists)} workers is created here")],
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
    related: list[tuple[dict[str, Any] | None, str]] = []
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
            " across steps; call optimizer.zero_grad() once per step, before backward()"
        )
        measured = {"step": event.get("step"), "sampled_parameters": event.get("sampled")}
    elif code == "TT216":
        message = (
            f"{obj}.step() at step {event.get('step')}: the forward pass ran with"
            f" {event.get('layer')} in eval mode and every module whose parameters this"
            " step updates was in eval mode: the model trains in eval mode; call"
            " model.train() after evaluating, before the next training step"
        )
        measured = {"step": event.get("step"), "layer": event.get("layer")}
        eval_site = event.get("eval_site")
        if isinstance(eval_site, dict):
            related.append((eval_site, "the model was put in eval mode here"))
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
    b.add(code, message, where, path, obj, measured, related)


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
    in_flight = (
        _in_flight(b, events)
        if run.interrupted or run.cancelled or exit_event.get("interrupted")
        else []
    )
    notes.extend(in_flight_notes(in_flight))
    if run.killed:
        notes.append(
            "the script was killed before it stopped (a second Ctrl+C, or 10 s after a cancel)"
        )
    findings = sorted(
        b.findings.values(),
        key=lambda f: (f.finding.path, f.finding.range.start, f.finding.code),
    )
    _static_fixes(findings)
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
        interrupted_at=exit_event.get("interrupted_at"),
        in_flight=in_flight,
    )


def _in_flight(b: _Builder, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last epoch's waiting batch and interrupted workers of each loader."""
    keep = ("kind", "loader", "epoch", "batch", "worker", "workers", "indices", "size")
    found = []
    for event in events:
        if event.get("kind") not in ("waiting", "worker_interrupted"):
            continue
        item = {k: event[k] for k in keep if k in event}
        for key in ("outstanding", "item", "where"):
            if key in event:
                item[key] = event[key]
        loader = event.get("loader")
        site = b.loaders.get(loader, {}).get("site") if isinstance(loader, int) else None
        if isinstance(site, dict):
            item["loader_site"] = {k: site.get(k) for k in ("file", "line", "function")}
        found.append(item)
    found.sort(key=lambda i: (i["kind"] != "waiting", repr(i.get("worker"))))
    return found


def _static_fixes(findings: list[RunFinding]) -> None:
    """Give each finding the fixes of its static rule's finding at the same
    place (its lines or a related line of the same file), where the static
    rule sees it too: the same edits `check --fix` makes."""
    if not findings:
        return  # nor import the linter: a clean run's report comes at once
    from torchtrap.engine import lint
    from torchtrap.rules import RULES_BY_CODE

    by_path: dict[str, list[RunFinding]] = defaultdict(list)
    for item in findings:
        by_path[item.finding.path].append(item)
    for path, items in by_path.items():
        source = locate.source_of(path)
        codes = {i.finding.code for i in items}
        if source is None:
            continue
        try:
            static = lint(source, path, rules=[RULES_BY_CODE[c] for c in sorted(codes)])
        except Exception:  # a rule's bug must not cost the run's report
            continue
        for item in items:
            finding = item.finding
            lines = set(range(finding.range.start.line, finding.range.end.line + 1))
            lines.update(r.range.start.line for r in finding.related if r.path is None)
            for other in static:
                if (
                    other.code == finding.code
                    and other.fixes
                    and any(other.range.contains_line(line) for line in lines)
                ):
                    fixes = tuple(fix.detached() for fix in other.fixes)
                    item.finding = dataclasses.replace(finding, fixes=fixes)
                    break
