"""TT204: hooks registered inside `forward`."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from torchtrap.facts.imports import dotted_name
from torchtrap.facts.index import ancestors, enclosing_function, parent, walk, walk_scope
from torchtrap.facts.modules import may_be_module
from torchtrap.findings import Applicability, Finding, Fix
from torchtrap.fixes import structural
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind

MODULE_HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)
# Words in a test that make the tensor hook conditional on grad mode.
_GRAD_GUARDS = ("requires_grad", "is_grad_enabled", "training")
_CONDITIONAL = (ast.If, ast.IfExp, ast.While, ast.Try, ast.Assert)
_FORWARD_NAMES = frozenset({"forward", "_forward", "forward_features"})

Function = ast.FunctionDef | ast.AsyncFunctionDef


class HookInForward(Rule):
    """Flags hooks registered inside an `nn.Module`'s `forward`.

    ## What it does
    Inside `forward` (also `_forward`, `forward_features`) of an
    `nn.Module` subclass (or a class with an imported base that may be one), flags
    - `x.register_hook(...)` on a tensor computed in (or passed to)
      `forward`, without a guard on `x.requires_grad` (or
      `torch.is_grad_enabled()`, or `self.training`);
    - `module.register_forward_hook(...)`, `register_forward_pre_hook`,
      `register_full_backward_hook`, `register_full_backward_pre_hook` and
      `register_backward_hook` whose handle is thrown away: a new hook on
      every call.

    Silent for guarded registrations (inside the test, or after an earlier
    test that returns or raises; an opt-in flag, a `forward` parameter whose
    default is falsy, counts as a guard), hooks registered in `__init__` or
    any other method, registrations inside an `if` (registered once behind
    a flag), handles that are kept (`h = ...; h.remove()`, stored on
    `self`, collected in a list), `grad_fn.register_hook`,
    `self.<attr>.register_hook` (a parameter requires grad under
    `no_grad` too), and `forward` methods of classes that are not modules.

    ## Why is this bad?
    `Tensor.register_hook` raises on a tensor that does not require grad.
    Inside `forward` that is fine during training, and fails as soon as the
    model is evaluated under `torch.no_grad()`: measured with torch 2.13,
    a gradient-reversal layer (`x = x * 1.0; x.register_hook(...)`)
    raises "RuntimeError: cannot register a hook on a tensor that doesn't
    require gradient" in the first `with torch.no_grad(): model(x)`, an
    error that only appears at evaluation time.

    A module hook registered in `forward` is added again on every call and
    never removed: after 5 forward calls the submodule holds 5 hooks, each
    running on every later call (repeated side effects, growing memory, a
    slower forward), silently.

    Fix for the tensor hook: wrap it in `if x.requires_grad:` (safe: the
    hook only ever runs when a gradient flows). For module hooks there is
    no automatic fix: register the hook once in `__init__`.

    ## Example
    ```python
    def forward(self, x):
        x = x * 1.0
        x.register_hook(grl_hook(coeff))
        return self.classifier(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        x = x * 1.0
        if x.requires_grad:
            x.register_hook(grl_hook(coeff))
        return self.classifier(x)
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.register_hook.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_forward_hook
    """

    code = "TT204"
    name = "hook-in-forward"
    summary = "a hook registered inside `forward` (fails under `no_grad`, or piles up per call)"
    requires_text = ("register_",)

    def check(self) -> Iterable[Finding]:
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            method = func.attr
            if method != "register_hook" and method not in MODULE_HOOKS:
                continue
            function = self._forward_method(call)
            if function is None:
                continue
            if method == "register_hook":
                finding = self._tensor_hook(function, call, func)
            else:
                finding = self._module_hook(function, call, func)
            if finding is not None:
                yield finding

    def _forward_method(self, call: ast.Call) -> Function | None:
        """The ``forward`` method of a (possible) module class that runs ``call``."""
        function = enclosing_function(call)
        if function is None or function.name not in _FORWARD_NAMES:
            return None
        owner = parent(function)
        if not isinstance(owner, ast.ClassDef):
            return None
        classes = self.ctx.facts.classes
        info = classes.get(owner.name)
        if info is None or info.node is not owner or not may_be_module(info, classes):
            return None
        return function

    # -- tensor hooks ---------------------------------------------------------
    def _tensor_hook(
        self, function: Function, call: ast.Call, func: ast.Attribute
    ) -> Finding | None:
        receiver = func.value
        if not isinstance(receiver, ast.Name) or receiver.id == "self":
            return None  # `self.weight.register_hook`, `out.grad_fn.register_hook`: other stories
        if self.ctx.values.of(receiver, call).holds(Kind.MODULE):
            return None
        if _guarded(call, function) or self._requires_grad_set(receiver, function):
            return None
        stmt = parent(call)
        fixes: list[Fix] = []
        if isinstance(stmt, ast.Expr) and structural.can_replace_statements(self.ctx.tree, [stmt]):
            source, tree, name = self.ctx.source, self.ctx.tree, receiver.id
            fixes.append(
                Fix(
                    f"Register the hook only `if {name}.requires_grad:`",
                    Applicability.SAFE,
                    build=lambda: structural.wrap_in_if(
                        source,
                        tree,
                        [stmt],
                        f"{name}.requires_grad",
                    ),
                )
            )
        message = (
            f"`{receiver.id}.register_hook()` in `{function.name}` raises under `torch.no_grad()`; "
            f"guard it with `if {receiver.id}.requires_grad:`"
        )
        return self.finding(call, message, fixes=fixes)

    def _requires_grad_set(self, receiver: ast.Name, function: Function) -> bool:
        """``x.requires_grad_()`` / ``x.requires_grad = True`` in the function."""
        for node in walk_scope(function):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("requires_grad_", "requires_grad")
                and isinstance(node.value, ast.Name)
                and node.value.id == receiver.id
                and not isinstance(parent(node), ast.If)
                and (isinstance(node.ctx, ast.Store) or isinstance(parent(node), ast.Call))
            ):
                return True
        return False

    # -- module hooks -----------------------------------------------------------
    def _module_hook(
        self, function: Function, call: ast.Call, func: ast.Attribute
    ) -> Finding | None:
        stmt = parent(call)
        if not isinstance(stmt, ast.Expr):
            return None  # the handle is kept: it may be removed
        if any(isinstance(a, _CONDITIONAL) for a in _between(stmt, function)):
            return None  # registered once behind a flag, or probed
        shown = dotted_name(func.value) or "module"
        message = (
            f"`{shown}.{func.attr}()` in `{function.name}` adds another hook on every call; "
            "register it once in `__init__`"
        )
        return self.finding(call, message)

    valid = (
        Valid(
            """
            import torch.nn as nn

            class GRL(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    x = x * 1.0
                    if x.requires_grad:
                        x.register_hook(lambda g: -g)
                    return self.fc(x)
            """,
            note="guarded on `requires_grad`",
        ),
        Valid(
            """
            import torch.nn as nn

            class GRL(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    if self.training:
                        x.register_hook(lambda g: -g)
                    return self.fc(x)
            """,
            note="guarded on training mode",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.fc.register_forward_hook(lambda m, i, o: None)

                def forward(self, x):
                    return self.fc(x)
            """,
            note="registered once in `__init__`",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    handle = self.fc.register_forward_hook(lambda m, i, o: None)
                    out = self.fc(x)
                    handle.remove()
                    return out
            """,
            note="the handle is removed in the same call",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.hooked = False

                def forward(self, x):
                    if not self.hooked:
                        self.fc.register_forward_hook(lambda m, i, o: None)
                        self.hooked = True
                    return self.fc(x)
            """,
            note="registered once behind a flag",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def forward(self, x):
                    x.requires_grad_()
                    x.register_hook(print)
                    return x * 2
            """,
            note="the tensor is made to require grad first",
        ),
        Valid(
            """
            class Pipeline:
                def forward(self, x):
                    x.register_hook(print)
                    return x
            """,
            note="not a module: a class without bases",
        ),
        Valid(
            """
            import torch.nn as nn

            class GRL(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    if not x.requires_grad:
                        return self.fc(x)
                    x.register_hook(lambda g: -g)
                    return self.fc(x)
            """,
            note="an earlier grad-mode test that leaves the function",
        ),
        Valid(
            """
            import torch.nn as nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x, reverse=False, coeff=None):
                    if reverse:
                        x.register_hook(lambda g: -g)
                    if coeff is not None and x.dim() == 2:
                        x.register_hook(lambda g: g * coeff)
                    return self.fc(x)
            """,
            note="opt-in flags: `forward` parameters whose default is falsy",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch.nn as nn

            class AdversarialNetwork(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 1)

                def forward(self, x):
                    x = x * 1.0
                    x.register_hook(lambda grad: -grad)  # reverse the gradient
                    return self.fc(x)
            """,
            line=11,
            message_contains="raises under `torch.no_grad()`",
            fixed="""
            import torch.nn as nn

            class AdversarialNetwork(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 1)

                def forward(self, x):
                    x = x * 1.0
                    if x.requires_grad:
                        x.register_hook(lambda grad: -grad)  # reverse the gradient
                    return self.fc(x)
            """,
        ),
        Invalid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    self.fc.register_forward_hook(lambda m, i, o: print(o.shape))
                    return self.fc(x)
            """,
            line=10,
            message_contains="adds another hook on every call",
        ),
        Invalid(
            """
            import torch.nn as nn

            class AdversarialNetwork(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 1)
                    self.iter_num = 0

                def forward(self, x, reverse=True):
                    if self.training:
                        self.iter_num += 1
                    x = x * 1.0
                    if reverse:
                        x.register_hook(lambda grad: -grad)
                    return self.fc(x)
            """,
            line=15,
            note="an earlier `if self.training:` that does not leave the function guards nothing; "
            "a flag that defaults to True is no opt-in",
        ),
    )


def _between(node: ast.AST, function: ast.AST) -> Iterator[ast.AST]:
    for anc in ancestors(node):
        if anc is function:
            return
        yield anc


def _guarded(call: ast.Call, function: Function) -> bool:
    """A test on grad mode (or on an opt-in flag) around the call, or an
    earlier one that leaves the function (``if not x.requires_grad: return x``).
    An earlier ``if self.training: self.iter_num += 1`` guards nothing."""
    flags = _opt_in_flags(function)
    for anc in _between(call, function):
        if isinstance(anc, _CONDITIONAL):
            test = getattr(anc, "test", None)
            if test is None or _mentions_guard(test) or _mentions(test, flags):
                return True  # inside try: probing; a grad-mode test; an opt-in flag
    for node in walk_scope(function):
        if not (isinstance(node, (ast.If, ast.Assert)) and node.lineno < call.lineno):
            continue
        if not _mentions_guard(node.test):
            continue
        if isinstance(node, ast.Assert) or _leaves(node.body) or _leaves(node.orelse):
            return True
    return False


def _leaves(body: list[ast.stmt]) -> bool:
    """The block returns or raises (on some path), so what follows it runs
    only when its test says so."""
    for stmt in body:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return True
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(n, (ast.Return, ast.Raise)) for n in walk_scope(stmt)):
            return True
    return False


def _opt_in_flags(function: Function) -> frozenset[str]:
    """Parameters of ``forward`` whose default is falsy (``reverse=False``,
    ``hook=None``): the caller opts in, an evaluation call leaves them off."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaulted = positional[len(positional) - len(args.defaults) :]
    pairs = list(zip(defaulted, args.defaults, strict=True))
    keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    pairs += [(a, d) for a, d in keywords if d is not None]
    return frozenset(
        a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value in (False, None, 0, "")
    )


def _mentions(test: ast.AST, names: frozenset[str]) -> bool:
    """``if flag:``, ``if flag is not None:``, or one of them in an ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_mentions(v, names) for v in test.values)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
    ):
        test = test.left
    return isinstance(test, ast.Name) and test.id in names


def _mentions_guard(test: ast.AST) -> bool:
    for node in walk(test):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        if name in _GRAD_GUARDS:
            return True
    return False
