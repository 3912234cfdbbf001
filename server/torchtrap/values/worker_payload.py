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
    chain_text,
    cuda_culprits,
    describe,
    global_numpy_draws,
    model_culprits,
    rng_culprits,
    workers_text,
)
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Range, RelatedLocation
from torchtrap.project.index import Project
from torchtrap.values.program import Model, program_model
from torchtrap.values.program_values import value_path


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


def payload_culprits(
    project: Project | None, path: str, text: str, tree: ast.Module, kind: str
) -> list[PayloadCulprit]:
    if "DataLoader" not in text and "Trainer" not in text:
        return []
    model = program_model(project, path, text, tree)
    if model is None:
        return []
    calls = {
        (node.lineno, node.col_offset): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    found = []
    here = os.path.abspath(path)
    if kind == "model":
        culprits = model_culprits(model.analysis, model.module)
    elif kind == "rng":
        culprits = rng_culprits(model.analysis, model.module)
    else:
        culprits = [c for c in cuda_culprits(model.analysis, model.module) if c.kind == kind]
    for culprit in culprits:
        if _seen_by_the_file_rules(culprit, model, with_bases=kind == "rng"):
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
        classes += [c for c in mro if isinstance(c, ClassObj) and c is not owner.cls]
    made = culprit.made
    return any(
        cls.module.name == made.module
        and cls.node.lineno <= made.line <= (cls.node.end_lineno or cls.node.lineno)
        for cls in classes
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
                    _other(where[0], here),
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
                (_other(where[0], here), where[1], f"{hop.via}: `{describe(hop.obj)}` made here")
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


def _other(path: str, here: str) -> str | None:
    return None if os.path.abspath(path) == here else path


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
    calls = {(n.lineno, n.col_offset): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
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
                path=_other(where[0], here),
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
