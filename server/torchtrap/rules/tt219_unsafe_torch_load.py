"""TT219: `torch.load` that unpickles anything (CWE-502)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from torchtrap.config import Requirement, declared_requirement
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import ancestors, enclosing_function, walk
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.facts.shapes import shape
from torchtrap.findings import Applicability, Finding, Fix, Severity, unsafe_title
from torchtrap.fixes.edits import keyword_value_edit
from torchtrap.rules.base import Invalid, Rule, Valid

LOADS = frozenset({"torch.load", "torch.serialization.load"})
SAVES = frozenset({"torch.save", "torch.serialization.save"})
# torch 2.6 made `weights_only=True` the default (pytorch #137602).
SAFE_DEFAULT_FROM = (2, 6)
WEIGHTS_ONLY_FROM = (1, 13)  # the parameter's first release
_TEST_DIRS = frozenset({"tests", "test", "testing"})


class UnsafeTorchLoad(Rule):
    """Flags `torch.load` calls that unpickle arbitrary objects.

    ## What it does
    Flags `torch.load(...)` (also `torch.serialization.load`, under any
    import of it) with `weights_only=False`, and without `weights_only`
    when the torch it runs on may be older than 2.6. Which torch: the
    `torch-version` in `[tool.torchtrap]` first; else the torch requirement
    the project declares (requirements*.txt, pyproject.toml, setup.py,
    setup.cfg), because its users install from it whatever the linter's
    environment holds: a range that admits torch < 2.6 (`torch>=1.10`) is
    reported with the range, one that excludes it (`torch>=2.6`) is
    silent; else (a bare `torch`, or nothing declared) the installed torch
    or a pin: older than 2.6 reported, newer a hint (nothing keeps an older
    torch out; TorchFix's TOR102 flags every such call). Unknown: silent.

    Silent for `weights_only=True`, the default on torch >= 2.6, a
    `weights_only` the caller passes in (a variable), `**kwargs`,
    a bare call under a test of `weights_only` (a fallback for a torch
    without the parameter, taken when the caller asked for a full unpickle),
    `torch.jit.load` and safetensors (neither unpickles), a file the same
    function (or a script's top-level code) has just written with
    `torch.save`, the same path expression (a round trip), and test
    files (`test_*.py`, `conftest.py`, a `tests/` folder), which load what
    the suite itself saved.

    ## Why is this bad?
    `torch.load` with `weights_only=False` is `pickle.load`: a checkpoint
    file can name any callable with arguments, and loading it calls it
    (CWE-502). Measured with torch 2.13: a file whose object's `__reduce__`
    writes a marker file writes it during `torch.load(path, weights_only=False)`,
    before any of the "checkpoint" is used; `weights_only=True` refuses it
    with an `UnpicklingError` and loads tensors, state dicts, and plain
    containers of numbers and strings as before. Before torch 2.6 the
    default was `weights_only=False`, so a bare `torch.load(path)` runs such
    code too; a checkpoint downloaded from a hub, a shared drive or an issue
    is enough.

    Fix: `weights_only=True`, offered from torch 1.13 (the parameter's first
    release) and not with a `pickle_module` (unsafe: a checkpoint that pickles whole
    objects, such as a model saved with `torch.save(model)` or custom
    classes, no longer loads: save `model.state_dict()` instead, or allow
    trusted classes with `torch.serialization.add_safe_globals`). Or
    require `torch>=2.6` in the project's dependencies (a pinned lower
    bound, not a bare `torch`, which an old lock file or image satisfies):
    from 2.6 a bare `torch.load(path)` loads weights only.

    ## Example
    ```python
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(checkpoint["model"])
    ```

    ## Use instead
    ```python
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    - https://cwe.mitre.org/data/definitions/502.html
    - https://github.com/pytorch/pytorch/pull/137602
    """

    code = "TT219"
    name = "unsafe-torch-load"
    summary = "`torch.load` that unpickles anything: a checkpoint from elsewhere runs code on load"
    fact = (
        "Measured with torch 2.13: an object whose `__reduce__` writes a file runs during "
        "`torch.load(weights_only=False)`; `weights_only=True` refuses it."
    )
    requires_text = ("load",)

    def check(self) -> Iterable[Finding]:
        if _is_test_file(self.ctx.path):
            return
        imports = self.ctx.facts.imports
        names = {"load"}.union(*(imports.local_names_for(q) for q in LOADS))
        calls_by_name = self.ctx.facts.calls_by_name
        for call in (c for name in sorted(names) for c in calls_by_name.get(name, ())):
            if imports.qualname(call.func) not in LOADS:
                continue
            if any(kw.arg is None for kw in call.keywords):
                continue  # `**kwargs`: the caller decides
            weights_only = next((kw for kw in call.keywords if kw.arg == "weights_only"), None)
            if weights_only is not None:
                if not (
                    isinstance(weights_only.value, ast.Constant)
                    and weights_only.value.value is False
                ):
                    continue
                message = (
                    "`weights_only=False` runs any code pickled in the checkpoint (CWE-502); "
                    "load weights only, save a `state_dict`"
                )
                node: ast.AST = weights_only
                severity: Severity | None = None
            else:
                if _caller_decides(call):
                    continue
                found = self._default_unpickles()
                if found is None:
                    continue
                message, severity = found
                node = call.func
            if _round_trip(call, imports, self.ctx.tree):
                continue
            yield self.finding(node, message, severity=severity, fixes=self._fixes(call))

    def _default_unpickles(self) -> tuple[str, Severity | None] | None:
        """Why a bare `torch.load` may unpickle anything here: the message and
        severity, None when the torch it runs on defaults to weights only.

        Which source wins: a configured `torch-version` (the user says what
        runs the code); else the torch requirement the project declares (its
        users install from it, whatever torch the linter's environment has):
        a range that admits a torch < 2.6 is a warning naming the range, one
        that excludes it is silent; else (a bare `torch`, or nothing declared)
        the installed torch or a pin: < 2.6 a warning, newer a hint (the
        project does not say it needs 2.6, like TorchFix's TOR102)."""
        requirement = self._requirement()
        if not self.ctx.config.torch_version and requirement is not None and requirement.specs:
            if not requirement.admits_below(SAFE_DEFAULT_FROM):
                return None
            where = requirement.path.name
            message = (
                f"`torch.load` without `weights_only`: `{requirement.text}` ({where}) admits "
                "torch < 2.6, whose default unpickles anything (CWE-502)"
            )
            if len(message) > MESSAGE_LIMIT:
                message = (
                    f"`torch.load` without `weights_only`: `{requirement.text}` admits "
                    "torch < 2.6 (unpickles anything)"
                )
            return message, None
        version = self.ctx.torch_version
        if version is None:
            return None
        if version >= SAFE_DEFAULT_FROM:
            if self.ctx.config.torch_version:
                return None  # the configured torch defaults to weights only
            return (
                "`torch.load` without `weights_only`: the project does not require torch >= 2.6, "
                "and older torch unpickles anything",
                Severity.HINT,
            )
        shown = ".".join(str(v) for v in version[:2])
        # The remedy names a pinned torch: a bare `torch` requirement
        # still installs whatever an old lock or image holds.
        return (
            f"`torch.load` on torch {shown} defaults to `weights_only=False`: runs any "
            "pickled code (CWE-502); require `torch>=2.6`",
            None,
        )

    def _requirement(self) -> Requirement | None:
        path = self.ctx.path
        if not path or path.startswith("<"):
            return None
        return declared_requirement(Path(path).parent)

    def _fixes(self, call: ast.Call) -> list[Fix]:
        version = self.ctx.torch_version
        requirement = None if self.ctx.config.torch_version else self._requirement()
        if (
            (version is not None and version < WEIGHTS_ONLY_FROM)
            or (requirement is not None and requirement.admits_below(WEIGHTS_ONLY_FROM))
            or _pickle_module(call)
        ):
            # No `weights_only` before 1.13 (a range admitting one would
            # break there); with a `pickle_module` it raises.
            return []
        source = self.ctx.source
        return [
            Fix(
                unsafe_title(
                    "Load with `weights_only=True`",
                    "a checkpoint of whole pickled objects no longer loads; save a `state_dict`",
                ),
                Applicability.UNSAFE,
                build=lambda: [keyword_value_edit(source, call, "weights_only", "True")],
            )
        ]

    valid = (
        Valid(
            """
            import torch

            state = torch.load("model.pt", map_location="cpu", weights_only=True)
            """,
            note="weights only",
        ),
        Valid(
            """
            import torch

            state = torch.load("model.pt", map_location="cpu")
            """,
            config={"torch-version": "2.6"},
            note="torch >= 2.6 loads weights only by default",
        ),
        Valid(
            """
            import torch

            def load(path, weights_only=True, **kwargs):
                a = torch.load(path, weights_only=weights_only)
                b = torch.load(path, **kwargs)
                return a, b
            """,
            config={"torch-version": "2.4"},
            note="the caller decides",
        ),
        Valid(
            """
            import torch

            def _torch_load(path, weights_only=True):
                try:
                    return torch.load(path, weights_only=weights_only)
                except TypeError:
                    if not weights_only:
                        return torch.load(path)
                    raise
            """,
            config={"torch-version": "2.4"},
            note="timm's fallback for a torch without `weights_only`, when the caller asked for it",
        ),
        Valid(
            """
            import torch
            from safetensors.torch import load_file

            scripted = torch.jit.load("model.ts")
            weights = load_file("model.safetensors")
            """,
            config={"torch-version": "2.4"},
            note="TorchScript and safetensors do not unpickle",
        ),
        Valid(
            """
            import pickle
            import json

            def load(path):
                return json.load(open(path))

            cfg = load("cfg.json")
            """,
            config={"torch-version": "2.4"},
            note="another library's `load`",
        ),
        Valid(
            """
            import torch

            def roundtrip(obj, tmp):
                path = tmp / "obj.pt"
                torch.save(obj, path)
                return torch.load(path, weights_only=False)
            """,
            note="a file the same function just wrote",
        ),
        Valid(
            """
            import os
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)
            out_dir = "runs"
            torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))
            print("saved")
            state = torch.load(os.path.join(out_dir, "model.pt"), weights_only=False)
            model.load_state_dict(state)
            """,
            config={"torch-version": "2.4"},
            note="issue 34: a script reloads the file it saved a few lines earlier",
        ),
        Valid(
            """
            import torch

            for epoch in range(3):
                model = torch.nn.Linear(2, 2)
                with open(args.save, "wb") as f:
                    torch.save(model, f)
            with open(args.save, "rb") as f:
                model = torch.load(f)
            """,
            config={"torch-version": "2.4"},
            note="pytorch/examples word_language_model: one file through `with open(...) as f`",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            checkpoint = torch.load("ckpt.pt", map_location="cpu", weights_only=False)
            """,
            line=4,
            message_contains="runs any code pickled",
            fixed="""
            import torch

            checkpoint = torch.load("ckpt.pt", map_location="cpu", weights_only=True)
            """,
        ),
        Invalid(
            """
            import torch

            def restore(model, path):
                model.load_state_dict(torch.load(path))
            """,
            line=5,
            config={"torch-version": "2.4"},
            message_contains="on torch 2.4 defaults to `weights_only=False`: runs any pickled "
            "code (CWE-502); require `torch>=2.6`",
            fixed="""
            import torch

            def restore(model, path):
                model.load_state_dict(torch.load(path, weights_only=True))
            """,
        ),
        Invalid(
            """
            from torch import load as torch_load

            def restore(path):
                return torch_load(
                    path,
                    map_location="cpu",
                )
            """,
            line=5,
            config={"torch-version": "1.13"},
            fixed="""
            from torch import load as torch_load

            def restore(path):
                return torch_load(
                    path,
                    map_location="cpu",
                    weights_only=True,
                )
            """,
            note="under an alias, a call over several lines",
        ),
        Invalid(
            """
            import torch

            state = torch.load("model.pth")
            """,
            line=4,
            config={"torch-version": "1.8"},
            note="before torch 1.13 there is no `weights_only` to pass: flagged, no fix",
        ),
        Invalid(
            """
            import os
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 2)
            out_dir = "runs"
            torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))

            def restore(path):
                return torch.load(os.path.join(path, "model.pt"))
            """,
            config={"torch-version": "2.4"},
            line=11,
            note="near miss of the round trip: another path expression, in a function",
        ),
        Invalid(
            """
            import torch

            model = torch.nn.Linear(2, 2)
            with open("out.pt", "wb") as f:
                torch.save(model, f)
            with open("downloaded.pt", "rb") as f:
                other = torch.load(f)
            """,
            config={"torch-version": "2.4"},
            line=8,
            note="near miss of the round trip: `f` names another file the second time",
        ),
    )


def _is_test_file(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in _TEST_DIRS for p in parts[:-1])
    )


def _caller_decides(call: ast.Call) -> bool:
    """Under ``if not weights_only:`` (timm's fallback for a torch without the
    parameter): the caller asked for a full unpickle."""
    for node in ancestors(call):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(node, (ast.If, ast.IfExp)) and any(
            (isinstance(n, ast.Name) and n.id == "weights_only")
            or (isinstance(n, ast.Attribute) and n.attr == "weights_only")
            for n in ast.walk(node.test)
        ):
            return True
    return False


def _pickle_module(call: ast.Call) -> bool:
    return len(call.args) >= 3 or any(kw.arg == "pickle_module" for kw in call.keywords)


def _round_trip(call: ast.Call, imports: ImportTable, tree: ast.Module) -> bool:
    """``torch.save(x, path)`` earlier in the same function (or, for a
    script's top-level code, earlier at top level), with the same path
    expression: the file is the one this code just wrote."""
    loaded = _path_argument(call, "f", 0)
    if loaded is None:
        return False
    function = enclosing_function(call)
    scope = list(walk(function) if function is not None else _top_level(tree))
    path = _path_key(loaded, scope)
    for node in scope:
        if (
            isinstance(node, ast.Call)
            and node is not call
            and imports.qualname(node.func) in SAVES
            and node.lineno <= call.lineno
        ):
            saved = _path_argument(node, "f", 1)
            if saved is not None and _path_key(saved, scope) == path:
                return True
    return False


def _path_key(expr: ast.expr, scope: list[ast.AST]) -> str:
    """How a path is spelled; for ``f`` of ``with open(P, ...) as f:``
    (the nearest such ``with`` before it), how ``P`` is spelled."""
    if isinstance(expr, ast.Name):
        opened = [
            item.context_expr.args[0]
            for node in scope
            if isinstance(node, ast.With) and node.lineno <= expr.lineno
            for item in node.items
            if isinstance(item.optional_vars, ast.Name)
            and item.optional_vars.id == expr.id
            and isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Name)
            and item.context_expr.func.id == "open"
            and item.context_expr.args
        ]
        if opened:
            expr = opened[-1]
    return dotted_name(expr) or shape(expr)


def _path_argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((kw.value for kw in call.keywords if kw.arg == keyword), None)


def _top_level(tree: ast.Module) -> Iterable[ast.AST]:
    """The nodes of a module's own code, not of its functions and classes."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield from (n for n in walk(stmt) if enclosing_function(n) is None)
