"""TT223: `load_state_dict(..., strict=False)` whose missing/unexpected keys nobody reads."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.index import ancestors, enclosing_scope, parent
from torchtrap.facts.shapes import shape
from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind

_RESULT_NAMES = ("incompatible", "incompatible_keys", "load_result")


class IgnoredPartialLoad(Rule):
    """Flags `model.load_state_dict(sd, strict=False)` as a bare statement.

    ## What it does
    Flags a statement that is only a call of `load_state_dict(...)` with
    `strict=False` on a module: its result, the `missing_keys` and
    `unexpected_keys` that did not match, is thrown away. The receiver is a
    module when the value layer says so (an `nn` layer, a local `nn.Module`
    subclass, `self` in one), or unknown: only `nn.Module.load_state_dict`
    takes `strict=` among torch's types (an optimizer's or a scheduler's
    does not).

    Silent when the result is assigned, returned, printed or passed on
    (`msg = model.load_state_dict(sd, strict=False)`), when the next
    statement reports how much loaded (it reads `len(sd)` and
    `model.state_dict()`, as yolov5's "Transferred 342/349 items"), with
    `strict=True` or the default, with `strict=` a variable (the caller decides), for a
    receiver of another kind (an instance of a local class that is not an
    `nn.Module` and defines its own `load_state_dict`), and for a notebook
    cell's last expression (Jupyter displays the result).

    ## Why is this bad?
    With `strict=False`, keys that do not match are skipped without a word,
    so a checkpoint whose keys do not line up loads nothing and the model
    silently keeps its random initialisation. Measured with torch 2.13: a
    state dict saved from an `nn.DataParallel` model (every key prefixed
    `module.`) loaded into the bare model with `strict=False` changes no
    weight at all; the call returns `_IncompatibleKeys` with the model's
    keys as missing and the checkpoint's `module.` keys as unexpected: the
    only sign of the failure, and it is thrown away.

    Fix (safe): keep the result and print it (it lists the keys that did
    not match, or says `<All keys matched successfully>`); look at them
    once, then decide which are expected.

    ## Example
    ```python
    model.load_state_dict(checkpoint["state_dict"], strict=False)
    ```

    ## Use instead
    ```python
    incompatible = model.load_state_dict(checkpoint["state_dict"], strict=False)
    print(incompatible)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.load_state_dict
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#warmstarting-model-using-parameters-from-a-different-model
    - https://github.com/pytorch/pytorch/issues/3805
    """

    code = "TT223"
    name = "ignored-partial-load"
    summary = (
        "`load_state_dict(sd, strict=False)` whose missing and unexpected keys are never looked at"
    )
    fact = (
        "Measured with torch 2.13: a DataParallel checkpoint (`module.` prefix) loaded with "
        "`strict=False` changes no weight, and only the returned keys say so."
    )
    requires_text = ("load_state_dict",)

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.calls_by_name.get("load_state_dict", ()):
            stmt = parent(call)
            if not isinstance(stmt, ast.Expr) or not isinstance(call.func, ast.Attribute):
                continue
            strict = next((kw.value for kw in call.keywords if kw.arg == "strict"), None)
            if len(call.args) >= 2:
                strict = call.args[1]
            if not (isinstance(strict, ast.Constant) and strict.value is False):
                continue
            if stmt.lineno in self.ctx.displayed and parent(stmt) is self.ctx.tree:
                continue
            if not self._module_receiver(call.func.value, stmt):
                continue
            if _counted_next(stmt, call):
                continue
            yield self._finding(stmt, call)

    def _module_receiver(self, receiver: ast.expr, stmt: ast.stmt) -> bool:
        value = self.ctx.values.of(receiver, stmt)
        if value.holds(Kind.MODULE):
            return True
        if value.kind is not Kind.UNKNOWN:
            return False
        classes = self.ctx.facts.classes
        infos = []
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            cls = next((a for a in ancestors(stmt) if isinstance(a, ast.ClassDef)), None)
            info = classes.get(cls.name) if cls is not None else None
            if info is not None:
                infos.append(info)
        else:
            for source, _ in self.ctx.values.sources(receiver, stmt) or ():
                info = classes.class_of_call(source) if isinstance(source, ast.Call) else None
                if info is not None:
                    infos.append(info)
        # A local class that is not a module but loads state its own way.
        return not any(
            not classes.is_module(info)
            and any("load_state_dict" in c.methods for c in classes.lineage(info))
            for info in infos
        )

    def _finding(self, stmt: ast.Expr, call: ast.Call) -> Finding:
        receiver = ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else ""
        shown = f"{receiver}." if len(receiver) <= 16 else ""
        message = (
            f"`{shown}load_state_dict(..., strict=False)` skips keys that do not match: "
            "a prefix mismatch loads nothing, silently"
        )
        return self.finding(call, message, fixes=self._fixes(stmt))

    def _fixes(self, stmt: ast.Expr) -> list[Fix]:
        source = self.ctx.source
        if not edits.alone_on_lines(source, stmt):
            return []
        scope = enclosing_scope(stmt)
        used = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
        name = next((n for n in _RESULT_NAMES if n not in used), None)
        if name is None:
            return []
        start = source.position(stmt.lineno, stmt.col_offset)
        report = f"print({name})"
        return [
            Fix(
                "Keep the result and print the keys that did not match",
                Applicability.SAFE,
                build=lambda: [
                    edits.insert_at(start, f"{name} = "),
                    edits.insert_after_statement(source, stmt, report),
                ],
            )
        ]

    valid = (
        Valid(
            """
            import torch

            def restore(model, path):
                result = model.load_state_dict(torch.load(path), strict=False)
                if result.missing_keys:
                    print("missing:", result.missing_keys)
                msg = model.load_state_dict(torch.load(path), strict=False)
                print(msg)
            """,
            note="the result is assigned and looked at",
        ),
        Valid(
            """
            import torch

            def restore(model, optimizer, path, strict):
                ckpt = torch.load(path)
                model.load_state_dict(ckpt["model"])
                model.load_state_dict(ckpt["model"], strict=True)
                model.load_state_dict(ckpt["model"], strict=strict)
                optimizer.load_state_dict(ckpt["optimizer"])
            """,
            note="strict loads raise on a mismatch; a flag the caller passes",
        ),
        Valid(
            """
            class EMA:
                def __init__(self):
                    self.shadow = {}

                def load_state_dict(self, state, strict=True):
                    self.shadow = dict(state)

            def restore(ckpt):
                ema = EMA()
                ema.load_state_dict(ckpt["ema"], strict=False)
                return ema
            """,
            note="a local class that is not a module, with its own load_state_dict",
        ),
        Valid(
            """
            import torch

            def restore(model, path):
                return model.load_state_dict(torch.load(path), strict=False)
            """,
            note="returned to the caller",
        ),
        Valid(
            """
            import logging
            import torch

            LOGGER = logging.getLogger(__name__)

            def transfer(model, weights):
                csd = torch.load(weights)["model"].float().state_dict()
                csd = {k: v for k, v in csd.items() if k in model.state_dict()}
                model.load_state_dict(csd, strict=False)
                LOGGER.info(f"Transferred {len(csd)}/{len(model.state_dict())} items")
            """,
            note="yolov5: the next statement reports how many keys loaded",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torchvision

            model = torchvision.models.resnet18()
            ckpt = torch.load("ckpt.pth", map_location="cpu")
            model.load_state_dict(ckpt["state_dict"], strict=False)
            """,
            line=7,
            message_contains="a prefix mismatch loads nothing",
            fixed="""
            import torch
            import torchvision

            model = torchvision.models.resnet18()
            ckpt = torch.load("ckpt.pth", map_location="cpu")
            incompatible = model.load_state_dict(ckpt["state_dict"], strict=False)
            print(incompatible)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def load_pretrained(self, path):
                    state = torch.load(path)
                    incompatible = None
                    self.load_state_dict(state, strict=False)
            """,
            line=13,
            fixed="""
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def load_pretrained(self, path):
                    state = torch.load(path)
                    incompatible = None
                    incompatible_keys = self.load_state_dict(state, strict=False)
                    print(incompatible_keys)
            """,
            note="`self` in a module; the fix picks a free name",
        ),
        Invalid(
            """
            def load(model, state_dict):
                model.load_state_dict(state_dict, False)
                return model
            """,
            line=3,
            note="a receiver of unknown type: `strict` is `nn.Module`'s; a positional False",
        ),
    )


def _counted_next(stmt: ast.Expr, call: ast.Call) -> bool:
    """The next statement reports how much loaded: it reads ``len(sd)`` of
    the dict just loaded and ``<model>.state_dict()`` (yolov5's
    "Transferred 342/349 items"), so a mismatch shows."""
    up = parent(stmt)
    block = next(
        (
            b
            for b in (getattr(up, f, None) for f in ("body", "orelse", "finalbody"))
            if isinstance(b, list) and any(s is stmt for s in b)
        ),
        None,
    )
    if block is None or not call.args or not isinstance(call.func, ast.Attribute):
        return False
    i = next(k for k, s in enumerate(block) if s is stmt)
    if i + 1 >= len(block):
        return False
    loaded = shape(call.args[0])
    model = shape(call.func.value)
    nodes = list(ast.walk(block[i + 1]))
    counts_loaded = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "len"
        and n.args
        and shape(n.args[0]) == loaded
        for n in nodes
    )
    reads_model = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "state_dict"
        and shape(n.func.value) == model
        for n in nodes
    )
    return counts_loaded and reads_model
