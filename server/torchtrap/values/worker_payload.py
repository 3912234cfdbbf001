"""The worker-payload question the worker rules ask the whole-program model.

For the DataLoaders of the file being linted: which CUDA tensors or
models their workers receive, through which chain of objects, where each
is made. What a file's own rules already see (a Dataset class that makes
the CUDA value in its own code, stored straight on ``self``) is left to
them; this adds what only the whole program shows: values made by helpers
in other files, owned objects, containers, bound methods, ``partial``s,
factories and loaders built in functions called from elsewhere.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from torchtrap.core.objects import ClassObj, InstObj, Site
from torchtrap.core.payload import (
    Culprit,
    Hop,
    Loader,
    chain_text,
    cuda_culprits,
    cuda_made_by_workers,
    describe,
    every_cuda_culprit,
    every_rng_culprit,
    global_numpy_draws,
    loaders,
    model_culprits,
    rng_culprits,
    workers_text,
)
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Range, RelatedLocation
from torchtrap.project.index import Project
from torchtrap.values.program import Model, program_model, reached_model
from torchtrap.values.program_values import other_path, value_path


@dataclass
class PayloadCulprit:
    culprit: Culprit
    node: ast.Call  # the DataLoader call in the linted file
    related: list[RelatedLocation]  # where each object of the chain is made

    def message(self, gets: str, tail: str = "") -> str:
        """``num_workers=4: {gets} via dataset `Rays` → `.aug`{tail}``, the
        chain cut to its last step when the line would be too long."""
        workers = self.culprit.loader.workers
        head = f"{workers_text(workers)}: {gets}"
        text = f"{head} via {chain_text(self.culprit.hop)}{tail}"
        if len(text) > MESSAGE_LIMIT:
            text = f"{head} (via `{self.culprit.hop.via}`){tail}"
        if len(text) > MESSAGE_LIMIT:  # the chain is in the related rows; the count only here
            text = f"{head}{tail}"
        if len(text) > MESSAGE_LIMIT:
            text = (
                f"{workers_text(workers, short=True)}: {gets} (via `{self.culprit.hop.via}`){tail}"
            )
        return text


def calls_by_start(tree: ast.Module) -> dict[tuple[int, int], ast.Call]:
    """The file's calls by (line, column) of their start (of calls that
    start together, the last in ``ast.walk``'s order); made once per tree
    and kept on it (each worker rule walked the tree for it again)."""
    found = tree.__dict__.get("_tt_calls_at")
    if found is None:
        found = tree.__dict__["_tt_calls_at"] = {
            (node.lineno, node.col_offset): node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
        }
    return found


def payload_culprits(
    project: Project | None, path: str, text: str, tree: ast.Module, kind: str
) -> list[PayloadCulprit]:
    if "DataLoader" not in text and "Trainer" not in text:
        return []
    model = program_model(project, path, text, tree)
    if model is None:
        return []
    calls = calls_by_start(tree)
    found = []
    here = os.path.abspath(path)
    if kind == "model":
        culprits = model_culprits(model.analysis, model.module)
    elif kind == "rng":
        culprits = rng_culprits(model.analysis, model.module)
    else:
        culprits = [c for c in cuda_culprits(model.analysis, model.module) if c.kind == kind]
    said: set[tuple[int, int, str, int]] = set()
    for culprit in culprits:
        # One finding per DataLoader and line made (a copy per call context,
        # ``origins.to(d), directions.to(d)``: the same mistake)
        spot = (culprit.loader.obj.site.line, culprit.loader.obj.site.col)
        # a generator or a model: one per DataLoader, the first the file's rules do not see
        said_key = (
            (*spot, "", 0)
            if kind in ("rng", "model")
            else (*spot, culprit.made.module, culprit.made.line)
        )
        if said_key in said:
            continue
        if _seen_by_the_file_rules(culprit, model, with_bases=True):
            continue
        if kind != "rng" and _all_here(culprit, model.module):
            continue  # the file's rules see datasets' own generators only, not owned objects'
        site = culprit.loader.obj.site
        node = calls.get((site.line, site.col))
        if node is None:
            continue
        inside = Range.of(
            node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0
        )
        related = [
            row
            for row in _related(model, culprit, here, node)
            if row[0] is not None or not (inside.start <= row[1].start and row[1].end <= inside.end)
        ]
        rows = [RelatedLocation(rng, note, path=path) for path, rng, note in related]
        said.add(said_key)
        found.append(PayloadCulprit(culprit, node, rows))
    return found


def _all_here(culprit: Culprit, module: str) -> bool:
    """Every object of the chain made in this file, outside any helper's
    copy: the file's own detection sees it (and says it at the object)."""
    sites = [_made_at(hop) for hop in culprit.hop.chain()] + [culprit.made]
    return all(s is not None and s.module == module and not s.ctx for s in sites)


def _seen_by_the_file_rules(culprit: Culprit, model: Model, *, with_bases: bool) -> bool:
    """A dataset whose own class makes the value and stores it on ``self``:
    the dataset rules find it in the class's file (TT101's also in a base
    class, and say it once there for every dataset that inherits it)."""
    chain = culprit.hop.chain()
    if len(chain) != 2:
        return False
    owner = chain[0].obj
    if not isinstance(owner, InstObj):
        return False
    classes = [owner.cls]
    if with_bases:
        mro = model.analysis.solver.mro(owner.cls)
        # A base the file's rule reads with the dataset: in the dataset's
        # own file, or a dataset itself (own ``__getitem__``/``__iter__``);
        # a ``Seedable`` mixin in another file that only makes the
        # generator is no dataset there: its draws are elsewhere
        classes += [
            c
            for c in mro
            if isinstance(c, ClassObj)
            and c is not owner.cls
            and (c.module is owner.cls.module or _has_entry(c.node))
        ]
    made = culprit.made
    inside = [
        cls
        for cls in classes
        if cls.module.name == made.module
        and cls.node.lineno <= made.line <= (cls.node.end_lineno or cls.node.lineno)
    ]
    if culprit.kind != "rng" or not inside:
        return bool(inside)
    # TT101's file rule reads the generator the store itself makes
    # (`self.rng = default_rng(s)`, `rng or default_rng()`, a local name):
    # one passed through a call (`self.rng = pick(default_rng(s))`) is the payload's
    return _stored_as_made(inside[0].node, chain[1].via[1:], made)


def _stored_as_made(cls: ast.ClassDef, attr: str, made: Site) -> bool:
    """Whether a method of ``cls`` stores the call made at ``made`` on
    ``self.<attr>`` as the stored value itself."""
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not (fn.lineno <= made.line <= (fn.end_lineno or fn.lineno)):
            continue
        assigned: dict[str, list[ast.expr]] = {}
        stores: list[ast.expr] = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(value)
                elif (
                    isinstance(target, ast.Attribute)
                    and target.attr == attr
                    and isinstance(target.value, ast.Name)
                ):
                    stores.append(value)
        if any(_holds_call(v, made, assigned, 0) for v in stores):
            return True
    return False


def _holds_call(
    value: ast.expr, made: Site, assigned: dict[str, list[ast.expr]], depth: int
) -> bool:
    """``value`` is the call at ``made``: itself, an alternative of an
    ``or``/``if``-expression, a method chain on it (``.manual_seed(0)``), or
    a local name assigned one."""
    if depth > 8:
        return False
    if isinstance(value, ast.Call):
        if (value.lineno, value.col_offset) == (made.line, made.col):
            return True
        return isinstance(value.func, ast.Attribute) and _holds_call(
            value.func.value, made, assigned, depth + 1
        )
    if isinstance(value, ast.BoolOp):
        return any(_holds_call(v, made, assigned, depth + 1) for v in value.values)
    if isinstance(value, ast.IfExp):
        return any(_holds_call(v, made, assigned, depth + 1) for v in (value.body, value.orelse))
    if isinstance(value, ast.Name):
        return any(_holds_call(v, made, assigned, depth + 1) for v in assigned.get(value.id, ()))
    return False


def _has_entry(node: ast.ClassDef) -> bool:
    return any(
        isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        and fn.name in ("__getitem__", "__iter__")
        for fn in node.body
    )


def _related(
    model: Model, culprit: Culprit, here: str, at: ast.AST
) -> list[tuple[str | None, Range, str]]:
    rows: list[tuple[str | None, Range, str]] = []
    loader = culprit.loader
    if loader.obj.site.ctx and loader.workers.kind == "some":
        call = loader.obj.site.ctx[0]
        where = model.where(call.module, call.line, call.col)
        if where is not None:
            counts = "/".join(str(v) for v in loader.workers.values if v)
            rows.append(
                (
                    other_path(where[0], here),
                    where[1],
                    f"the DataLoader is built from here, with {counts} workers",
                )
            )
    for hop in culprit.hop.chain():
        site = _made_at(hop)
        if site is None or hop is culprit.hop:
            continue
        where = model.where(site.module, site.line, site.col)
        if where is not None:
            rows.append(
                (
                    other_path(where[0], here),
                    where[1],
                    f"{hop.via}: `{describe(hop.obj)}` made here",
                )
            )
    what = {
        "module": "the model moved to the GPU here",
        "model": "the model made here",
        "rng": "the generator made here: each worker gets a copy in the same state",
    }.get(culprit.kind, "the CUDA tensor made here")
    # The calls it was made in (a helper's `make_rays(n, device)`), then where.
    for row in value_path(model, culprit.made, what, here, at):
        if all(row.range != r[1] or row.path != r[0] for r in rows):
            rows.append((row.path, row.range, row.message))
    return rows


def _made_at(hop: Hop) -> Site | None:
    obj = hop.obj
    site = getattr(obj, "site", None)
    if isinstance(obj, ClassObj):
        return None
    return site if isinstance(site, Site) else None


@dataclass
class PayloadDraw:
    """A draw from numpy's global generator that the workers of a DataLoader
    in the linted file reach (through a transform in another file)."""

    node: ast.Call  # the DataLoader call in the linted file
    workers: str  # "num_workers=4 (...)"
    certain: bool  # a count known to be > 0
    drawn: str  # "np.random.rand"
    where: str  # "aug.py:7"
    related: list[RelatedLocation]


def payload_draws(
    project: Project | None, path: str, text: str, tree: ast.Module
) -> list[PayloadDraw]:
    if "DataLoader" not in text and "Trainer" not in text:
        return []
    model = program_model(project, path, text, tree)
    if model is None:
        return []
    calls = calls_by_start(tree)
    here = os.path.abspath(path)
    found = []
    for draw in global_numpy_draws(model.analysis, model.module):
        site = draw.loader.obj.site
        node = calls.get((site.line, site.col))
        made = draw.draw.site
        where = model.where(made.module, made.line, made.col)
        if node is None or where is None:
            continue
        name = (draw.draw.type_name or "").replace("numpy.", "np.", 1)
        rows = [
            RelatedLocation(
                where[1],
                f"`{name}` draws from numpy's global generator (in `{draw.caller}`)",
                path=other_path(where[0], here),
            )
        ]
        found.append(
            PayloadDraw(
                node,
                workers_text(draw.loader.workers),
                draw.loader.workers.kind == "some",
                name,
                model.analysis.solver.where(made),
                rows,
            )
        )
    return found


@dataclass
class FoundHere:
    """What reaches DataLoader workers, reported in the linted file where
    it is made or enters the worker code, when the DataLoader is in another
    file: a CUDA value (the ``.to(device)`` that ``__getitem__`` runs with a
    CUDA device from another file, or the call whose result, a CUDA tensor
    made by a helper elsewhere, the dataset keeps), or a generator's
    constructor the file's own rule does not see (an augmentation object's
    ``self.rs``, a mixin's generator, one a dataset keeps through a helper)."""

    node: ast.Call  # in the linted file
    message: str
    certain: bool
    related: list[RelatedLocation]


def cuda_here(project: Project | None, path: str, text: str, tree: ast.Module) -> list[FoundHere]:
    model = reached_model(project, path, text, tree)
    if model is None:
        return []
    analysis, module = model.analysis, model.module
    solver = analysis.solver
    calls = {(n.lineno, n.col_offset): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    here = os.path.abspath(path)
    found: dict[tuple[int, int], FoundHere] = {}

    def loader_row(loader: Loader) -> list[RelatedLocation]:
        site = loader.obj.site
        where = model.where(site.module, site.line, site.col)
        if where is None:
            return []
        note = f"the DataLoader ({workers_text(loader.workers, short=True)})"
        return [RelatedLocation(where[1], note, path=other_path(where[0], here))]

    for made in cuda_made_by_workers(analysis):
        site = made.obj.site
        node = calls.get((site.line, site.col)) if site.module == module else None
        if node is None:
            continue
        loader = made.loader
        func = made.caller.rsplit(".", 1)[-1]
        certain, tail, count = _consequence(made.sure, loader)
        text_ = _fitting(
            f"`{func}` puts data on the GPU in the workers of the DataLoader at "
            f"{solver.where(loader.obj.site)} ({count}): {tail}",
            f"`{func}` puts data on the GPU in DataLoader workers ({count}): {tail}",
        )
        # one per line: ``torch.tensor(a, device=d), torch.tensor(b, device=d)``
        found.setdefault((site.line, 0), FoundHere(node, text_, certain, loader_row(loader)))
    for culprit in every_cuda_culprit(analysis):
        if culprit.kind != "tensor" or culprit.loader.obj.site.module == module:
            continue  # at a DataLoader of this file, its own finding says it
        owner = culprit.hop.chain()[0].obj
        if not isinstance(owner, InstObj) or owner.cls.module.name != module:
            continue
        if _seen_by_the_file_rules(culprit, model, with_bases=False) or _all_here(culprit, module):
            continue
        anchors = [s for s in (*culprit.made.ctx, culprit.made) if s.module == module]
        node = calls.get((anchors[-1].line, anchors[-1].col)) if anchors else None
        if node is None:
            continue
        loader = culprit.loader
        certain, tail, count = _consequence(culprit.sure, loader)
        text_ = _fitting(
            f"`{describe(owner)}` keeps this CUDA tensor: DataLoader workers get a copy "
            f"({count}, {solver.where(loader.obj.site)}): {tail}",
            f"`{describe(owner)}` keeps this CUDA tensor: DataLoader workers get a copy "
            f"({count}): {tail}",
            f"the dataset keeps this CUDA tensor: DataLoader workers get a copy ({count}): {tail}",
        )
        rows = loader_row(loader)
        where = model.where(culprit.made.module, culprit.made.line, culprit.made.col)
        if where is not None:
            rows.append(
                RelatedLocation(
                    where[1], "the CUDA tensor made here", path=other_path(where[0], here)
                )
            )
        found.setdefault((node.lineno, 0), FoundHere(node, text_, certain, rows))
    return sorted(found.values(), key=lambda f: (f.node.lineno, f.node.col_offset))


def rng_here(project: Project | None, path: str, text: str, tree: ast.Module) -> list[FoundHere]:
    model = reached_model(project, path, text, tree)
    if model is None:
        return []
    analysis, module = model.analysis, model.module
    calls = {(n.lineno, n.col_offset): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    here = os.path.abspath(path)
    found: dict[int, FoundHere] = {}
    # the DataLoader with the most workers first: the one the finding names
    ranked = sorted(
        every_rng_culprit(analysis),
        key=lambda c: (c.loader.workers.kind != "some", -max(c.loader.workers.values, default=0)),
    )
    # A helper's DataLoader copied per call site: the copies hold the
    # callers' counts; the shared definition's "unknown" is no count
    copied = {(s.module, s.line, s.col) for lo in loaders(analysis) if (s := lo.obj.site).ctx}
    for culprit in ranked:
        made, site = culprit.made, culprit.loader.obj.site
        if made.module != module or site.module == module:
            continue  # at a DataLoader of this file, its own finding says it
        if (
            not site.ctx
            and (site.module, site.line, site.col) in copied
            and culprit.loader.workers.kind != "some"
        ):
            continue  # the shared definition's unknown count; a certain one still counts
        if made.line in found or _seen_by_the_file_rules(culprit, model, with_bases=True):
            continue
        node = calls.get((made.line, made.col))
        if node is None:
            continue
        loader = culprit.loader
        workers = loader.workers
        certain = workers.kind == "some"
        count = workers_text(workers, short=True)
        at = analysis.solver.where(loader.obj.site)
        chain = chain_text(culprit.hop)
        if workers.values == (1,) and not workers.positive:
            tail = "the same random numbers every epoch"
        else:
            tail = "the same random numbers in each"
        text_ = _fitting(
            f"DataLoader workers get a copy of this generator ({count}, {at}, via {chain}): {tail}",
            f"DataLoader workers get a copy of this generator ({count}, {at}): {tail}",
            f"DataLoader workers get a copy of this generator ({count}): {tail}",
        )
        rows: list[RelatedLocation] = []
        site = loader.obj.site
        where = model.where(site.module, site.line, site.col)
        if where is not None:
            note = f"the DataLoader ({workers_text(workers, short=True)}), with no worker_init_fn"
            rows.append(RelatedLocation(where[1], note, path=other_path(where[0], here)))
        for hop in culprit.hop.chain()[:-1]:
            made_at = _made_at(hop)
            if made_at is None:
                continue
            where = model.where(made_at.module, made_at.line, made_at.col)
            if where is not None:
                rows.append(
                    RelatedLocation(
                        where[1],
                        f"{hop.via}: `{describe(hop.obj)}` made here",
                        path=other_path(where[0], here),
                    )
                )
        found[made.line] = FoundHere(node, text_, certain, rows)
    return sorted(found.values(), key=lambda f: (f.node.lineno, f.node.col_offset))


def _fitting(*messages: str) -> str:
    """The first message that fits a Problems-panel line (the last one if none)."""
    return next((m for m in messages if len(m) <= MESSAGE_LIMIT), messages[-1])


def _consequence(sure: str, loader: Loader) -> tuple[bool, str, str]:
    """Whether a CUDA value in the workers is certain, what it does, and
    the worker count as a finding says it."""
    certain = sure == "certain" and loader.workers.kind == "some"
    tail = "a crash (fork) or zeros (spawn)" if certain else "a possible crash or zeros"
    return certain, tail, workers_text(loader.workers, short=True)
