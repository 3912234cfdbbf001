"""TT205: the deprecated `Module.register_backward_hook`."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.guards import fallback_for
from torchtrap.facts.index import ancestors
from torchtrap.findings import Applicability, Edit, Finding, Fix, Position, Range
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind

OLD, NEW = "register_backward_hook", "register_full_backward_hook"


class NonFullBackwardHook(Rule):
    """Flags `Module.register_backward_hook`, whose `grad_input` misses inputs.

    ## What it does
    Flags calls of `.register_backward_hook(...)` on an `nn.Module`
    (`self`, a submodule, a model, or any receiver not known to be
    something else).

    Silent when the receiver is provably not an `nn.Module`: a tensor, a
    module or object imported from another library
    (`mylib.hooks.register_backward_hook`), an instance of a local class
    that is not a module, or `self` in a class that defines its own
    `register_backward_hook`. Silent too in the fallback branch of a
    compatibility check (`if hasattr(m, "register_full_backward_hook"):
    ... else: m.register_backward_hook(...)`): it only runs on old torch.

    ## Why is this bad?
    `register_backward_hook` is deprecated. It hooks the *last* autograd
    node of the module's forward instead of the module itself, so when the
    forward runs several operations `grad_input` is not the gradient with
    respect to the module's inputs. Measured with torch 2.13 on a module
    whose forward is `self.a(x) * 2 + 1`: the hook receives `grad_input`
    of the final `+ 1` (shapes `[(1, 2), None]`, the gradient of the
    product) instead of the gradient with respect to `x` (`[(1, 2)]`,
    what `register_full_backward_hook` passes), and the first forward
    warns: "FutureWarning: Using a non-full backward hook when the forward
    contains multiple autograd Nodes is deprecated and will be removed in
    future versions. This hook will be missing some grad_input."

    Fix: `register_full_backward_hook` (unsafe: the hook's `grad_input`
    changes meaning, and a full hook may not modify its inputs in place).

    ## Example
    ```python
    handle = model.layer4.register_backward_hook(save_gradient)
    ```

    ## Use instead
    ```python
    handle = model.layer4.register_full_backward_hook(save_gradient)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook
    """

    code = "TT205"
    name = "non-full-backward-hook"
    summary = "deprecated `Module.register_backward_hook` (its `grad_input` misses inputs)"
    requires_text = (OLD,)

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == OLD):
                continue
            if fallback_for(call, NEW):
                continue  # the old-torch path of `if hasattr(m, NEW): ... else: ...`
            if self._not_a_module(func.value, call):
                continue
            yield self._finding(call, func)

    def _not_a_module(self, receiver: ast.expr, call: ast.Call) -> bool:
        facts = self.ctx.facts
        if (
            isinstance(receiver, ast.Name)
            and receiver.id == "self"
            or isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        ):
            cls = next((a for a in ancestors(call) if isinstance(a, ast.ClassDef)), None)
            info = facts.classes.get(cls.name) if cls is not None else None
            if info is None or OLD in info.methods:
                return True  # a class's own method of that name
            return not facts.classes.is_module(info) and not info.bases
        if self.ctx.values.of(receiver, call).holds(Kind.TENSOR):
            return True
        qualname = facts.qualname(receiver)
        if qualname is not None:
            return not qualname.startswith("torch.")
        values = self.ctx.values.sources(receiver, call)
        if values:
            for value, _ in values:
                local = facts.classes.class_of_call(value)
                if local is not None and not facts.classes.is_module(local):
                    return True
        return False

    def _finding(self, call: ast.Call, func: ast.Attribute) -> Finding:
        source = self.ctx.source
        end = source.position(func.end_lineno or func.lineno, func.end_col_offset or 0)
        start = Position(end.line, end.column - len(OLD))
        fix = Fix(
            f"Use `{NEW}` (unsafe: the hook's `grad_input` changes meaning)",
            Applicability.UNSAFE,
            build=lambda: [Edit(Range(start, end), NEW)],
        )
        return self.finding(
            func,
            f"`{OLD}` is deprecated: its `grad_input` covers only the last op; use `{NEW}`",
            fixes=[fix],
        )

    valid = (
        Valid(
            """
            def add_hook(module, hook):
                if hasattr(module, "register_full_backward_hook"):
                    return module.register_full_backward_hook(hook)
                else:
                    return module.register_backward_hook(hook)

            def add_hook_compact(module, hook):
                if not hasattr(module, "register_full_backward_hook"):
                    return module.register_backward_hook(hook)
                return module.register_full_backward_hook(hook)
            """,
            note="the fallback for torch < 1.8, behind a hasattr check",
        ),
        Valid(
            """
            import torch.nn as nn

            model = nn.Linear(2, 2)
            handle = model.register_full_backward_hook(lambda m, gi, go: None)
            """,
            note="the full hook",
        ),
        Valid(
            """
            import torch

            x = torch.ones(2, requires_grad=True)
            x.register_hook(lambda g: g * 2)
            """,
            note="a tensor hook",
        ),
        Valid(
            """
            import mylib.hooks

            mylib.hooks.register_backward_hook(print)
            """,
            note="another library's function of the same name",
        ),
        Valid(
            """
            class Recorder:
                def __init__(self):
                    self.hooks = []

                def register_backward_hook(self, hook):
                    self.hooks.append(hook)

            recorder = Recorder()
            recorder.register_backward_hook(print)
            """,
            note="a local class that is not an nn.Module",
        ),
        Valid(
            """
            import torch.nn as nn

            class Wrapper(nn.Module):
                def register_backward_hook(self, hook):
                    return super().register_backward_hook(hook)
            """,
            note="a class overriding the method itself",
        ),
    )
    invalid = (
        Invalid(
            """
            def add_hook(module, hook):
                if hasattr(module, "register_forward_hook"):
                    return module.register_backward_hook(hook)
                return None
            """,
            line=4,
            note="a check on another attribute is no fallback for the full hook",
        ),
        Invalid(
            """
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            handle = model.register_backward_hook(lambda m, gi, go: None)
            """,
            line=5,
            message_contains="`register_backward_hook` is deprecated",
            fixed="""
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            handle = model.register_full_backward_hook(lambda m, gi, go: None)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn

            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(2, 2)
                    self.register_backward_hook(self._clear)

                def _clear(self, module, grad_input, grad_output):
                    pass
            """,
            line=8,
        ),
        Invalid(
            """
            def attach(module, hook):
                return module.register_backward_hook(hook)
            """,
            line=3,
            note="an unknown receiver: the method name is nn.Module's",
        ),
    )
