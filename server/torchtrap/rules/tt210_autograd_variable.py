"""TT210: ``torch.autograd.Variable``, a legacy wrapper; ``volatile=True`` is ignored."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.guards import compatibility_guarded
from torchtrap.facts.index import ancestors, enclosing_statement, parent, walk
from torchtrap.facts.tensors import words
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity
from torchtrap.fixes import edits, structural
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.autograd import NEW_TENSOR

VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Contexts and decorators under which nothing records a graph.
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})
# torch functions that always return a new tensor object (not as_tensor).
_FACTORIES = frozenset(
    f"torch.{name}"
    for name in words(
        """
        tensor zeros ones empty full rand randn randint arange linspace eye from_numpy
        zeros_like ones_like empty_like full_like rand_like randn_like
        """
    )
)
# A wrapped block that trains must not be put under no_grad.
_TRAINS = frozenset({"backward", "step", "zero_grad"})


class AutogradVariable(Rule):
    """Flags `Variable(x, volatile=True)` (ignored since torch 0.4) and plain `Variable(x)`.

    ## What it does
    Flags calls of `torch.autograd.Variable` (through any import of it):

    - `Variable(x, volatile=True)`: a warning. Fix (unsafe, structural): drop the
      wrapper and run the rest of the block under `with torch.no_grad():`;
      offered when `torch` is imported as a module and the block does not
      call `backward()`, `step()` or `zero_grad()`.
    - `Variable(x)`, `Variable(x, requires_grad=...)`: a hint. Fix (safe):
      `x` when `x` evidently does not require grad (a batch from a
      DataLoader, `x.data`, `x.detach()`, a new tensor from a `torch`
      factory, `.new(...)`), else the exact equivalent `x.detach()`;
      `x.detach().requires_grad_(...)` with `requires_grad` (on a fresh
      tensor such as `x.data.clone()`, `x.data.clone().requires_grad_(...)`). Inside
      `torch.no_grad()`, `volatile=True` changes nothing: a hint like a plain `Variable(x)`.
      The same hint where `torch.no_grad()` is the wrong advice: the rest of the
      block trains (`backward()`, `step()`: its graph is wanted), or the value is
      a target or constant that never reaches a model (only a later argument,
      `criterion(out, target)`, a comparison, `target.size(0)`, a slot written into).

    Silent for other libraries' `Variable` (TensorFlow, sympy, JAX, pyro's
    own), a local class called `Variable`, a `Variable` whose import cannot be
    resolved, and under a version check (`if torch.__version__ < "0.4":`).

    ## Why is this bad?
    Since torch 0.4 `Variable` is a tensor, and `Variable(x, requires_grad=r)`
    returns `x.detach().requires_grad_(r)`: measured with torch 2.13, it shares
    `x`'s storage and version counter, is a leaf, and does not require grad
    unless asked (also when `x` does). `volatile` is ignored:
    `Variable(x, volatile=True)` only warns (``UserWarning: volatile was removed
    and now has no effect. Use `with torch.no_grad():` instead.``, easy to miss
    in a log), and `nn.Linear(1000, 1000)(Variable(x, volatile=True))` still has
    a `grad_fn` (`AddmmBackward0`) that holds the 64x1000 input for backward:
    evaluation records the graph and keeps every layer's saved activations
    alive as long as the output lives. Under `torch.no_grad()` the same output
    has no `grad_fn` and saves nothing.

    ## Example
    ```python
    for data, target in test_loader:
        data = Variable(data, volatile=True)
        output = model(data)
        test_loss += F.nll_loss(output, target).item()
    ```

    ## Use instead
    ```python
    for data, target in test_loader:
        with torch.no_grad():
            output = model(data)
            test_loss += F.nll_loss(output, target).item()
    ```

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/ (Variable merged into Tensor)
    - https://pytorch.org/docs/stable/autograd.html#variable-deprecated
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    """

    code = "TT210"
    name = "autograd-variable"
    summary = (
        "`Variable(x, volatile=True)` still records gradients; `Variable(x)` is a legacy wrapper"
    )
    requires_text = ("Variable",)

    def check(self) -> Iterable[Finding]:
        imports = self.ctx.facts.imports
        if not imports.imports_module("torch"):
            return
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not (
                (isinstance(func, ast.Name) and func.id in imports.names)
                or (isinstance(func, ast.Attribute) and func.attr == "Variable")
            ):
                continue
            if imports.qualname(func) not in VARIABLE or compatibility_guarded(call, ()):
                continue  # a torch-version branch keeps the old API on purpose
            if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
                continue  # Variable() and Variable(*args): nothing to suggest
            keywords = {kw.arg: kw.value for kw in call.keywords}
            if None in keywords or set(keywords) - {"volatile", "requires_grad"}:
                continue
            volatile = keywords.get("volatile")
            if (
                volatile is not None
                and not _is_false(volatile)
                and not self._under_no_grad(call)
                and not self._harmless_volatile(call)
            ):
                yield self._volatile(call, volatile)
                continue
            yield self._plain(call, keywords.get("requires_grad"), volatile)

    # -- volatile=True ----------------------------------------------------------
    def _volatile(self, call: ast.Call, volatile: ast.expr) -> Finding:
        fixes = []
        fix = self._no_grad_fix(call)
        if fix is not None:
            fixes.append(fix)
        literal = isinstance(volatile, ast.Constant) and volatile.value is True
        shown = "volatile=True" if literal else "volatile="
        return self.finding(
            call,
            f"`{shown}` has no effect since torch 0.4: gradients are still recorded; "
            "use `with torch.no_grad():`",
            fixes=fixes,
        )

    def _no_grad_fix(self, call: ast.Call) -> Fix | None:
        torch = next((n for n in self.ctx.facts.imports.local_names_for("torch")), None)
        stmt = enclosing_statement(call)
        block = _block_of(stmt) if stmt is not None else None
        if torch is None or stmt is None or block is None:
            return None
        statements = block[block.index(stmt) :]
        if _trains(statements):
            return None
        tree = self.ctx.tree
        if not structural.can_replace_statements(tree, statements):
            return None
        source = self.ctx.source
        old = source.segment(self.ctx.range(call))
        new = source.segment(self.ctx.range(call.args[0]))
        if "\n" in old or "\n" in new:
            return None  # the re-indented text would not contain the call as written

        def build() -> list[Edit]:
            wrapped = structural.replace_statements(
                source, tree, statements, f"with {torch}.no_grad():\n    {structural.BODY}\n"
            )
            if len(wrapped) != 1 or wrapped[0].new_text.count(old) != 1:
                return []
            edit = wrapped[0]
            lines = edit.new_text.replace(old, new).splitlines(keepends=True)
            if len(statements) > 1:
                # `data = Variable(data, volatile=True)` became `data = data`: drop it.
                lines = [line for line in lines if not _self_assignment(line)]
            return [Edit(edit.range, "".join(lines))]

        return Fix(
            f"Drop `Variable(...)` and run the block under `{torch}.no_grad()` "
            "(unsafe: later code in the block no longer records gradients)",
            Applicability.UNSAFE,
            build=build,
        )

    def _harmless_volatile(self, call: ast.Call) -> bool:
        """``volatile=True`` where no_grad is the wrong advice: the block goes
        on to train (its graph is wanted), or the value is a target or a
        constant that never reaches a model (nothing is recorded from it)."""
        stmt = enclosing_statement(call)
        block = _block_of(stmt) if stmt is not None else None
        if stmt is None or block is None:
            return False
        if _trains(block[block.index(stmt) :]):
            return True
        return not self.ctx.values.autograd.in_graph(call.args[0], call) and _never_an_input(
            call, stmt, self.ctx.tree
        )

    def _under_no_grad(self, call: ast.Call) -> bool:
        qualname = self.ctx.facts.imports.qualname
        for anc in ancestors(call):
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    expr = item.context_expr
                    if isinstance(expr, ast.Call) and (
                        qualname(expr.func) in _NO_GRAD
                        or (
                            qualname(expr.func) == "torch.set_grad_enabled"
                            and expr.args
                            and _is_false(expr.args[0])
                        )
                    ):
                        return True
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in anc.decorator_list:
                    target = deco.func if isinstance(deco, ast.Call) else deco
                    if qualname(target) in _NO_GRAD:
                        return True
        return False

    # -- plain Variable(x) --------------------------------------------------------
    def _plain(
        self, call: ast.Call, requires_grad: ast.expr | None, volatile: ast.expr | None = None
    ) -> Finding:
        source = self.ctx.source
        arg = call.args[0]
        text = source.segment(self.ctx.range(arg))
        if not isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            text = f"({text})"
        short = len(text) <= 32 and "\n" not in text
        grad = None
        if requires_grad is not None and not _is_false(requires_grad):
            grad = source.segment(self.ctx.range(requires_grad))
            grad = "" if isinstance(requires_grad, ast.Constant) and grad == "True" else grad
        if grad is None and self.ctx.values.autograd.without_grad(arg, call):
            replacement = text
            title = f"Use `{text}` itself" if short else "Use the tensor itself"
        elif grad is None:
            replacement = f"{text}.detach()"
            title = f"Use `{replacement}`" if short else "Use `.detach()`"
        else:
            # A fresh tensor nobody else holds can take the flag itself.
            fresh = self._fresh(arg) and self.ctx.values.autograd.without_grad(arg, call)
            detach = "" if fresh else ".detach()"
            replacement = f"{text}{detach}.requires_grad_({grad})"
            title = (
                f"Use `{replacement}`"
                if len(replacement) <= 48
                else f"Use `{detach}.requires_grad_()`"
            )
        if short and len(replacement) <= 48:
            equivalent = f"`{text}.detach()" + (
                f".requires_grad_({grad})`" if grad is not None else "`"
            )
        else:
            equivalent = "its argument, detached" + (
                " (requires_grad set)" if grad is not None else ""
            )
        fix = Fix(
            title,
            Applicability.SAFE,
            build=lambda: [edits.replace(source, call, replacement)],
        )
        message = f"`Variable(...)` is a legacy wrapper that only returns {equivalent}"
        if volatile is not None and not _is_false(volatile):
            message += "; `volatile` is ignored"
        return self.finding(call, message, severity=Severity.HINT, fixes=[fix])

    def _fresh(self, expr: ast.expr) -> bool:
        """A new tensor object: ``x.data``, ``x.clone()``, ``x.new(...)``,
        ``torch.zeros(...)`` (not ``.cuda()``/``.to()``, which may return ``x``)."""
        if isinstance(expr, ast.Attribute):
            return expr.attr == "data"
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in ("clone", "detach", *NEW_TENSOR):
            return True
        return self.ctx.facts.imports.qualname(func) in _FACTORIES

    valid = (
        Valid(
            """
            import torch
            import tensorflow as tf
            from sympy import Variable as SymVar
            from pyro.contrib.autoname import Variable

            w = tf.Variable(tf.zeros([3]), trainable=True)
            s = SymVar("s")
            v = Variable(torch.zeros(3), volatile=True)
            """,
            note="other libraries' Variable",
        ),
        Valid(
            """
            import torch

            class Variable:
                def __init__(self, value, volatile=False):
                    self.value = value

            v = Variable(torch.zeros(3), volatile=True)
            """,
            note="a local class",
        ),
        Valid(
            """
            import torch
            from torch.autograd import Variable

            def test(model, x):
                with torch.no_grad():
                    out = model(x)
                v = Variable()
                w = Variable(*x)
                return out
            """,
            note="no argument, *args: nothing to suggest",
        ),
        Valid(
            """
            from mylib.autograd import Variable
            import torch

            v = Variable(torch.zeros(3), volatile=True)
            """,
            note="an unresolved import",
        ),
        Valid(
            """
            import torch
            from torch.autograd import Variable

            def evaluate(model, x):
                if torch.__version__ < "0.4":
                    return model(Variable(x, volatile=True))
                with torch.no_grad():
                    return model(x)
            """,
            note="a torch-version branch",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.autograd import Variable

            def test(model, test_loader):
                test_loss = 0
                for data, target in test_loader:
                    data, target = Variable(data, volatile=True), Variable(target)
                    output = model(data)
                    test_loss += F.nll_loss(output, target).item()
                return test_loss
            """,
            line=9,
            message_contains="`volatile=True` has no effect since torch 0.4",
            fix_title="no_grad",
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.autograd import Variable

            def test(model, test_loader):
                test_loss = 0
                for data, target in test_loader:
                    with torch.no_grad():
                        data, target = data, Variable(target)
                        output = model(data)
                        test_loss += F.nll_loss(output, target).item()
                return test_loss
            """,
            note="the old mnist example",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def evaluate(model, x, optimizer):
                out = model(Variable(x, volatile=True))
                out.sum().backward()
                optimizer.step()
                return out
            """,
            severity=Severity.HINT,
            message_contains="`volatile` is ignored",
            fixed="""
            import torch
            from torch.autograd import Variable

            def evaluate(model, x, optimizer):
                out = model(x.detach())
                out.sum().backward()
                optimizer.step()
                return out
            """,
            note="the block trains: its graph is wanted, no_grad would break it; a hint",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def train(model, loader, criterion, optimizer):
                for x, y in loader:
                    x = Variable(x.cuda())
                    y = Variable(y.cuda(), volatile=True)
                    loss = criterion(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            """,
            severity=Severity.HINT,
            message_contains="`volatile` is ignored",
            note="issue 34: a target in a training step; no_grad there would stop training",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def infer(valid_queue, model, criterion):
                model.eval()
                for step, (input, target) in enumerate(valid_queue):
                    input = Variable(input, volatile=True).cuda()
                    target = Variable(target, volatile=True).cuda(non_blocking=True)
                    logits = model(input)
                    loss = criterion(logits, target)
                    correct = logits.argmax(1).eq(target.data).sum()
                    n = target.size(0)
            """,
            line=8,
            message_contains="`volatile=True` has no effect since torch 0.4",
            note="darts' infer(): the input warns, the target is a hint (test_fp_issue34)",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader
            from torch.autograd import Variable

            loader = DataLoader(range(8), batch_size=4)
            for i, (images, labels) in enumerate(loader):
                images = Variable(images.cuda())
            """,
            severity=Severity.HINT,
            message_contains="legacy wrapper that only returns `images.cuda().detach()`",
            fixed="""
            import torch
            from torch.utils.data import DataLoader
            from torch.autograd import Variable

            loader = DataLoader(range(8), batch_size=4)
            for i, (images, labels) in enumerate(loader):
                images = images.cuda()
            """,
            note="a DataLoader batch never requires grad: the tensor itself",
        ),
        Invalid(
            """
            import torch

            def decoder_state(memory, n):
                hidden = torch.autograd.Variable(memory.data.new(n, 4).zero_())
                angles = torch.autograd.Variable(torch.from_numpy(memory))
                return hidden, angles
            """,
            fixed="""
            import torch

            def decoder_state(memory, n):
                hidden = memory.data.new(n, 4).zero_()
                angles = torch.autograd.Variable(torch.from_numpy(memory))
                return hidden, angles
            """,
            note="fairseq's tacotron2: new tensors, torch.from_numpy",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def saliency(model, x):
                inputs = Variable(x, requires_grad=True)
                model(inputs).sum().backward()
                return inputs.grad
            """,
            severity=Severity.HINT,
            fixed="""
            import torch
            from torch.autograd import Variable

            def saliency(model, x):
                inputs = x.detach().requires_grad_()
                model(inputs).sum().backward()
                return inputs.grad
            """,
            note="requires_grad=True: the exact equivalent",
        ),
        Invalid(
            """
            import torch
            from torch import autograd

            def basis(self):
                return autograd.Variable(self.forward_basis, requires_grad=False)
            """,
            fixed="""
            import torch
            from torch import autograd

            def basis(self):
                return self.forward_basis.detach()
            """,
            note="unknown tensor: x.detach(), the exact equivalent",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def rotated(x):
                return Variable(x.data.clone(), requires_grad=True)
            """,
            fixed="""
            import torch
            from torch.autograd import Variable

            def rotated(x):
                return x.data.clone().requires_grad_()
            """,
            note="detectron2's test: a fresh clone takes the flag itself",
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            @torch.no_grad()
            def predict(model, x):
                return model(Variable(x, volatile=True))
            """,
            severity=Severity.HINT,
            message_contains="`volatile` is ignored",
            note="already under no_grad: a hint like a plain Variable(x)",
        ),
    )


def _self_assignment(line: str) -> bool:
    left, eq, right = line.strip().partition(" = ")
    return bool(eq) and left == right and left.isidentifier()


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _block_of(stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list that holds ``stmt``."""
    owner = parent(stmt)
    if owner is None:
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(owner, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


# Tensor methods that read a value without feeding it to a model.
_READS = frozenset({"eq", "ne", "equal", "view_as", "expand_as", "type_as", "size", "numel", "dim"})
# A chain ``t.data.cuda()`` ending in one of these is a number, not an input.
_SCALARS = frozenset({"size", "shape", "numel", "dim", "item", "tolist", "numpy"})


def _never_an_input(call: ast.Call, stmt: ast.stmt, tree: ast.Module) -> bool:
    """The ``Variable(...)`` result, bound to a name, is only a target: every
    later use in the scope is a second argument (``criterion(out, target)``),
    a comparison, a method's argument (``pred.eq(target.data)``), a number
    (``target.size(0)``) or a slot written into. Unknown uses count as inputs."""
    name = _bound_name(call, stmt)
    if name is None:
        return False
    scope = next(
        (a for a in ancestors(stmt) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
        None,
    )
    body = scope.body if scope is not None else tree.body
    own = {id(node) for node in walk(call)}
    uses = [
        node
        for top in body
        for node in walk(top)
        if isinstance(node, ast.Name)
        and node.id == name
        and isinstance(node.ctx, ast.Load)
        and id(node) not in own
        and node.lineno > stmt.lineno  # what it was before is another value
    ]
    return all(_target_use(use) for use in uses)


def _bound_name(call: ast.Call, stmt: ast.stmt) -> str | None:
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    value, target = stmt.value, stmt.targets[0]
    if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple):
        pairs = list(zip(target.elts, value.elts, strict=False))
    else:
        pairs = [(target, value)]
    for left, right in pairs:
        # `Variable(x, volatile=True).cuda()`: the move returns the same value.
        while (
            isinstance(right, ast.Call)
            and isinstance(right.func, ast.Attribute)
            and right.func.attr in ("cuda", "cpu", "to", "float", "long")
        ):
            right = right.func.value
        if right is call:
            return left.id if isinstance(left, ast.Name) else None
    return None


def _target_use(use: ast.Name) -> bool:
    node: ast.AST = use
    up = parent(node)
    last = ""
    while (isinstance(up, ast.Attribute) and up.value is node) or (
        isinstance(up, ast.Call) and up.func is node
    ):
        if isinstance(up, ast.Attribute):
            last = up.attr
        node, up = up, parent(up)
    if last in _SCALARS or isinstance(up, ast.Compare):
        return True
    if isinstance(up, ast.Subscript) and up.value is node:
        return isinstance(up.ctx, ast.Store)
    if isinstance(up, ast.Call):
        if any(kw.value is node for kw in up.keywords) or node in up.args[1:]:
            return True
        func = up.func
        return isinstance(func, ast.Attribute) and func.attr in _READS
    return False


def _trains(statements: list[ast.stmt]) -> bool:
    for stmt in statements:
        for node in walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _TRAINS
            ):
                return True
    return False
