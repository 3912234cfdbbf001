"""TT221: `p.require_grad = False` and other misspellings of `requires_grad`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from torchtrap.findings import Applicability, Edit, Finding, Fix, Range, Severity
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind

FLAG = "requires_grad"
# Spellings that differ from `requires_grad` by more than two edits but are
# the same words (`requires_gradient`), compared without case and underscores.
_SAME_WORDS = re.compile(r"^requires?grad(s|ient|ients)?$")


def misspells_flag(attr: str) -> bool:
    """``require_grad``, ``requires_grads``, ``requiresgrad``, ``requries_grad``,
    ``requires_gradient``, ``Requires_grad``: not ``requires_grad`` itself."""
    if attr == FLAG:
        return False
    if _SAME_WORDS.match(attr.lower().replace("_", "")):
        return True
    return _distance(attr.lower(), FLAG) <= 2


def _distance(a: str, b: str) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment)."""
    if abs(len(a) - len(b)) > 2:
        return 3
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


class MisspelledGradFlag(Rule):
    """Flags an assignment to a misspelled `requires_grad` on a tensor or parameter.

    ## What it does
    Flags `x.<name> = ...` where `<name>` is a misspelling of
    `requires_grad` (two edits or fewer: `require_grad`, `requires_grads`,
    `requiresgrad`, `requries_grad`, `require_grads`; or the same words:
    `requires_gradient`) and `x` is known to be a tensor or a parameter: a
    loop variable over `.parameters()`/`.named_parameters()`, a module's
    `.weight`/`.bias`, a tensor built by `torch`.

    An error when the lost flag matters: `= False` on a parameter (or a
    value autograd records), `= True` or a variable on a tensor that does
    not require grad. A warning when it is unknown whether the tensor
    requires grad; a hint for `= False` on a tensor that never required
    grad (`pe = torch.zeros(n, d)`: the typo has no effect there).

    Silent when `x` is not known to be a tensor (an object of a class that
    defines such an attribute, a config, `self`), and on reads.

    ## Why is this bad?
    A tensor accepts any new attribute, so `p.require_grad = False` stores a
    flag nothing reads and `p.requires_grad` stays `True`: the layer meant to
    be frozen keeps training, and nothing fails. Measured with torch 2.13 on
    CPU: after `for p in backbone.parameters(): p.require_grad = False`, a
    training step still gives the backbone gradients and changes its
    weights; with `requires_grad` they stay unchanged.

    Fix: rename to `requires_grad` (safe).

    ## Example
    ```python
    for param in model.backbone.parameters():
        param.require_grad = False
    ```

    ## Use instead
    ```python
    for param in model.backbone.parameters():
        param.requires_grad = False
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.requires_grad.html
    - [Autograd mechanics: excluding subgraphs](https://pytorch.org/docs/stable/notes/autograd.html#setting-requires-grad)
    - https://github.com/pytorch-labs/torchfix (TOR002, the same typo)
    """

    code = "TT221"
    name = "misspelled-grad-flag"
    summary = "`p.require_grad = False`: a new attribute, the parameter still gets gradients"
    fact = (
        "Measured with torch 2.13: after `p.require_grad = False` on a backbone's "
        "parameters, a training step still changes them."
    )
    default_severity = Severity.ERROR
    requires_text = ("equire", "equrie", "eqiure", "grad")

    def check(self) -> Iterable[Finding]:
        for stmt in self.ctx.facts.index.of_types(ast.Assign, ast.AugAssign, ast.AnnAssign):
            assert isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in _flattened(targets):
                if not isinstance(target, ast.Attribute) or not misspells_flag(target.attr):
                    continue
                if not self.ctx.values.of(target.value, stmt).holds(Kind.TENSOR):
                    continue
                yield self._finding(target, stmt)

    def _finding(
        self, target: ast.Attribute, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign
    ) -> Finding:
        source = self.ctx.source
        rng = source.node_range(target)
        owner = source.segment(source.node_range(target.value))
        owner = "the tensor" if len(owner) > 24 or "\n" in owner else f"`{owner}`"
        severity, consequence = self._consequence(target.value, stmt, owner)
        message = f"`.{target.attr}` is not `.requires_grad`: {consequence}"
        fixes: list[Fix] = []
        if source.segment(rng).endswith(target.attr):
            start = source.position_at(source.offset(rng.end) - len(target.attr))
            name_range = Range(start, rng.end)
            fixes.append(
                Fix(
                    f"Rename to `{FLAG}`",
                    Applicability.SAFE,
                    build=lambda: [Edit(name_range, FLAG)],
                )
            )
        return self.finding(target, message, severity=severity, fixes=fixes)

    def _consequence(
        self, tensor: ast.expr, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign, owner: str
    ) -> tuple[Severity, str]:
        """How bad the lost flag is: freezing a parameter that keeps
        training, enabling grad on a tensor that stays without it (errors);
        "freezing" a tensor that never required grad (a hint: no effect)."""
        autograd = self.ctx.values.autograd
        value = stmt.value if not isinstance(stmt, ast.AugAssign) else None
        disabling = isinstance(value, ast.Constant) and value.value is False
        no_grad = autograd.without_grad(tensor, stmt)
        if disabling:
            if no_grad:
                return Severity.HINT, f"a new attribute, no effect: {owner} never required grad"
            if autograd.is_parameter(tensor, stmt) or autograd.in_graph(tensor, stmt):
                return Severity.ERROR, f"a new attribute; {owner} still gets gradients"
            return Severity.WARNING, f"a new attribute; {owner} keeps its `requires_grad`"
        if no_grad:
            return Severity.ERROR, f"a new attribute; {owner} still does not require grad"
        return Severity.WARNING, f"a new attribute; {owner} keeps its `requires_grad`"

    valid = (
        Valid(
            """
            import torch.nn as nn

            class Freezer:
                def __init__(self):
                    self.require_grad = False

            def freeze(model):
                for p in model.parameters():
                    p.requires_grad = False
                model.fc.weight.requires_grad_(False)
            """,
            note="a class's own attribute; the right spelling",
        ),
        Valid(
            """
            import argparse

            def configure(cfg, layer):
                cfg.require_grad = False
                layer.requires_grads = True
                if layer.require_grad:
                    pass
            """,
            note="receivers not known to be tensors; a read",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            model = nn.Linear(2, 2)
            model.requires_grad = False
            model.required = True
            for name, p in model.named_parameters():
                p.retains_grad = True
                p.grad = None
            """,
            note="other attributes, too far from `requires_grad`; a module (not a tensor)",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
            for param in model[0].parameters():
                param.require_grad = False
            """,
            line=6,
            severity=Severity.ERROR,
            message_contains="`.require_grad` is not `.requires_grad`",
            fixed="""
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
            for param in model[0].parameters():
                param.requires_grad = False
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            def freeze(model):
                for name, p in model.named_parameters():
                    if name.startswith("backbone"):
                        p.requires_gradient = False

            fc = nn.Linear(4, 2)
            fc.weight.requires_grads = False
            x = torch.zeros(3)
            x.requiresgrad = True
            x.requires_grad_ = True
            """,
            severity=Severity.ERROR,
            message_contains="`x` still does not require grad",
            note="named_parameters, a layer's weight; enabling grad on a torch tensor",
        ),
        Invalid(
            """
            import torch

            def positional(n, d):
                pe = torch.zeros(n, d).float()
                pe.require_grad = False
                return pe
            """,
            line=6,
            severity=Severity.HINT,
            message_contains="a new attribute, no effect: `pe` never required grad",
            note="a factory tensor never required grad: the typo is harmless (a hint)",
        ),
    )


def _flattened(targets: Iterable[ast.expr]) -> Iterable[ast.expr]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _flattened(target.elts)
        else:
            yield target
