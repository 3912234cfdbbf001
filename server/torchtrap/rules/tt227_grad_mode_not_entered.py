"""TT227: `torch.no_grad()` as a statement: the context manager is never entered."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.autograd import GRAD_OFF, grad_off_context
from torchtrap.facts.index import parent
from torchtrap.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Position,
    Range,
    Severity,
    unsafe_title,
)
from torchtrap.fixes import edits
from torchtrap.fixes.apply import apply_edits
from torchtrap.fixes.structural import BODY, can_replace_statements, replace_statements
from torchtrap.rules.base import Invalid, Rule, Valid

# Grad-mode context managers whose constructor changes nothing: only
# `__enter__` does. (`torch.set_grad_enabled(False)` works called alone.)
CONTEXT_ONLY: dict[str, str] = {
    "torch.no_grad": "gradients are still recorded",
    "torch.autograd.no_grad": "gradients are still recorded",
    "torch.autograd.grad_mode.no_grad": "gradients are still recorded",
    "torch.inference_mode": "gradients are still recorded",
    "torch.autograd.inference_mode": "gradients are still recorded",
    "torch.autograd.grad_mode.inference_mode": "gradients are still recorded",
    "torch.enable_grad": "grad mode is unchanged",
    "torch.autograd.enable_grad": "grad mode is unchanged",
    "torch.autograd.grad_mode.enable_grad": "grad mode is unchanged",
}
_BLOCK_ENDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class GradModeNotEntered(Rule):
    """Flags `torch.no_grad()`, `torch.enable_grad()`, `torch.inference_mode()` as bare statements.

    ## What it does
    Flags an expression statement that only calls `torch.no_grad()`,
    `torch.enable_grad()` or `torch.inference_mode()` (also through
    `torch.autograd` and any import of them): the context manager is built
    and thrown away, never entered.

    Silent for `with torch.no_grad():`, the decorators (`@torch.no_grad()`),
    a context manager kept in a name, and `torch.set_grad_enabled(False)`,
    which switches grad mode when called alone as well.

    ## Why is this bad?
    These context managers change grad mode only in `__enter__`, so calling
    one alone does nothing: after `torch.no_grad()` autograd still records
    every operation (memory for the graph, and a value computed there still
    requires grad). Measured with torch 2.13 on CPU: after a bare
    `torch.no_grad()`, `(x * 2).requires_grad` is `True` for an `x` that
    requires grad; inside `with torch.no_grad():` it is `False`.
    `torch.inference_mode()` alone leaves `torch.is_inference_mode_enabled()`
    `False`, and `torch.enable_grad()` alone inside a `no_grad` block
    leaves grad off. A bare `torch.no_grad()` inside a block or function
    where grad is already off changes nothing either: a hint that it is
    redundant, not a warning that gradients are recorded.

    Fix: wrap the statements that follow in the same block in a `with`
    (unsafe: re-indents them, and the code may have meant a narrower block).
    At module level, where the call reads as a switch for the whole program,
    the fix is `torch.set_grad_enabled(False)` instead (unsafe: global; an
    `inference_mode()` becomes plain no-grad).

    ## Example
    ```python
    def predict(model, x):
        torch.no_grad()
        return model(x)
    ```

    ## Use instead
    ```python
    def predict(model, x):
        with torch.no_grad():
            return model(x)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html
    - [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    """

    code = "TT227"
    name = "grad-mode-not-entered"
    summary = "`torch.no_grad()` as a statement, not a `with`: nothing is switched off"
    fact = (
        "Measured with torch 2.13: after a bare `torch.no_grad()`, `(x * 2).requires_grad` "
        "is still True."
    )
    default_severity = Severity.ERROR
    requires_text = ("no_grad", "enable_grad", "inference_mode")

    def check(self) -> Iterable[Finding]:
        imports = self.ctx.facts.imports
        for stmt in self.ctx.facts.index.of(ast.Expr):
            call = stmt.value
            if not isinstance(call, ast.Call):
                continue
            qualname = imports.qualname(call.func)
            if qualname not in CONTEXT_ONLY:
                continue
            source = self.ctx.source
            shown = source.segment(source.node_range(call))
            if len(shown) > 40 or "\n" in shown:
                shown = qualname.rsplit(".", 1)[-1] + "()"
            consequence = CONTEXT_ONLY[qualname]
            severity = None
            if grad_off_context(stmt, imports) is not None:
                # Inside a no_grad block nothing is recorded anyway: a bare
                # no_grad() there is redundant, a bare enable_grad() leaves grad off.
                if qualname in GRAD_OFF:
                    consequence, severity = "harmless here, grad mode is already off", Severity.HINT
                else:
                    consequence = "gradients stay off in this no_grad block"
            message = (
                f"`{shown}` as a statement does nothing (only `with` enters it): {consequence}"
            )
            if isinstance(parent(stmt), ast.Module):
                fixes = self._global_switch(stmt, qualname)
            else:
                fixes = self._fixes(stmt, shown)
            yield self.finding(call, message, severity=severity, fixes=fixes)

    def _global_switch(self, stmt: ast.Expr, qualname: str) -> list[Fix]:
        """At module level the call reads as a switch for the whole program
        (min-dalle's fix): ``torch.set_grad_enabled(False)``, which works alone.
        Wrapping the module's imports and definitions in a ``with`` would not."""
        call = stmt.value
        assert isinstance(call, ast.Call)
        if call.args or call.keywords:
            return []  # `inference_mode(False)`: no switch to translate it to
        torch = next(iter(sorted(self.ctx.facts.imports.local_names_for("torch"))), None)
        if torch is None:
            return []
        enabled = "True" if qualname.endswith("enable_grad") else "False"
        new = f"{torch}.set_grad_enabled({enabled})"
        title = unsafe_title(
            f"Replace with `{new}`",
            "switches grad mode for the whole program, from this import on",
        )
        source = self.ctx.source
        return [Fix(title, Applicability.UNSAFE, build=lambda: [edits.replace(source, call, new)])]

    def _fixes(self, stmt: ast.Expr, shown: str) -> list[Fix]:
        following = _following(stmt)
        tree = self.ctx.tree
        source = self.ctx.source
        if not following or not can_replace_statements(tree, [stmt, *following], source):
            return []
        text = source.segment(source.node_range(stmt.value))
        first, last = stmt.lineno, following[-1].end_lineno or following[-1].lineno

        def build() -> list[Edit]:
            # libcst re-indents the statements (strings and comments kept);
            # the text before the bare call and after the block is unchanged,
            # so the edit is that middle, less the bare call's own lines.
            wrapped = replace_statements(source, tree, following, f"with {text}:\n    {BODY}\n")
            if not wrapped:
                return []
            new_text = apply_edits(source.text, wrapped)
            start = source.offset(Position(first, 0))
            end = Position(last, len(source.line(last)))
            suffix = len(source.text) - source.offset(end)
            own = source.text[start : source.offset(Position((stmt.end_lineno or first) + 1, 0))]
            middle = new_text[start : len(new_text) - suffix]
            if not middle.startswith(own):
                return []
            return [Edit(Range(Position(first, 0), end), middle[len(own) :])]

        title = unsafe_title(
            f"Wrap the rest of the block in `with {shown}:`",
            "re-indents the statements after it; a narrower block may be meant",
        )
        return [Fix(title, Applicability.UNSAFE, build=build)]

    valid = (
        Valid(
            """
            import torch

            @torch.no_grad()
            def predict(model, x):
                return model(x)

            def score(model, x):
                with torch.no_grad(), torch.autocast("cpu"):
                    y = model(x)
                with torch.inference_mode():
                    z = model(x)
                with torch.enable_grad():
                    w = model(x)
                return y, z, w
            """,
            note="entered with `with` or as a decorator",
        ),
        Valid(
            """
            import torch

            torch.set_grad_enabled(False)
            torch.autograd.set_grad_enabled(True)
            ctx = torch.no_grad()
            with ctx:
                pass
            guard = torch.inference_mode()
            guard.__enter__()
            """,
            note="set_grad_enabled works as a function; a kept manager entered by hand",
        ),
        Valid(
            """
            import contextlib

            class Model:
                def no_grad(self):
                    return contextlib.nullcontext()

            def run(m, no_grad):
                m.no_grad()
                no_grad()
            """,
            note="other functions named `no_grad`",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def predict(model, x):
                torch.no_grad()
                return model(x)
            """,
            line=5,
            severity=Severity.ERROR,
            message_contains="`torch.no_grad()` as a statement does nothing",
            fixed="""
            import torch

            def predict(model, x):
                with torch.no_grad():
                    return model(x)
            """,
        ),
        Invalid(
            """
            from torch import inference_mode

            def evaluate(model, loader):
                total = 0
                inference_mode()
                # one pass
                for x in loader:
                    total += model(x).sum().item()
                s = '''
            kept
            '''
                return total, s
            """,
            line=6,
            fixed="""
            from torch import inference_mode

            def evaluate(model, loader):
                total = 0
                # one pass
                with inference_mode():
                    for x in loader:
                        total += model(x).sum().item()
                    s = '''
            kept
            '''
                    return total, s
            """,
            note="imported by name; comments and strings kept by the re-indent",
        ),
        Invalid(
            """
            import torch

            def train_step(model, x):
                with torch.no_grad():
                    torch.enable_grad()
            """,
            line=6,
            message_contains="gradients stay off in this no_grad block",
            note="nothing follows in the block: flagged without a fix",
        ),
        Invalid(
            """
            import torch

            @torch.no_grad()
            def predict(model, x):
                torch.no_grad()
                return model(x)
            """,
            line=6,
            severity=Severity.HINT,
            message_contains="harmless here, grad mode is already off",
            note="issue 35: under `@torch.no_grad()` nothing is recorded anyway; a hint",
        ),
        Invalid(
            """
            import torch
            torch.no_grad()

            from .models import Decoder
            """,
            line=3,
            fixed="""
            import torch
            torch.set_grad_enabled(False)

            from .models import Decoder
            """,
            note="module level (min-dalle before PR 24): the global switch, not a `with`",
        ),
    )


def _following(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements after ``stmt`` in its block, up to a definition."""
    owner = parent(stmt)
    if owner is None:
        return []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            break
    else:
        handlers = [h for h in getattr(owner, "handlers", []) if stmt in h.body]
        if not handlers:
            return []
        block = handlers[0].body
    index = next(i for i, s in enumerate(block) if s is stmt)
    out: list[ast.stmt] = []
    for s in block[index + 1 :]:
        if isinstance(s, _BLOCK_ENDS):
            break
        out.append(s)
    return out
