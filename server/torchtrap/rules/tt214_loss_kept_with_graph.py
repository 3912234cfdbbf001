"""TT214: a loss accumulated across iterations with its autograd graph."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.imports import dotted_name
from torchtrap.facts.index import enclosing_function, walk_scope
from torchtrap.facts.remote import MESSAGE_LIMIT
from torchtrap.findings import Applicability, Edit, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loops import BACKWARD, Event, Loop, LoopFacts, keeps_parameter

# Calls whose arguments are only shown or logged.
_LOG_CALLS = frozenset(
    {"print", "info", "debug", "warning", "log", "add_scalar", "add_scalars", "write"}
    | {"set_postfix", "set_description", "format", "round", "log_dict", "log_metrics"}
)
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


@dataclass(frozen=True)
class _Accumulation:
    node: ast.stmt | ast.Call  # `total += v`, `total = total + v`, `losses.append(v)`
    target: ast.expr  # `total`, `stats[k]`, `losses`
    values: tuple[ast.expr, ...]  # what is added or appended (dict/list items included)


class LossKeptWithGraph(Rule):
    """Flags a loss (or another tensor with an autograd graph) accumulated across loop iterations.

    ## What it does
    Flags `total += loss`, `total = total + loss`, `stats[k] += loss`,
    `losses.append(loss)` and `history.append({"loss": loss})` in a loop,
    when the accumulator lives across iterations (bound before the loop, or
    an attribute of `self`) and the value evidently carries an autograd
    graph: a loss the same iteration backpropagates (`loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`), a term of
    such a loss, what a helper of this file returns after backpropagating
    it, or a module's output in an iteration that trains; also arithmetic
    (`loss * x.size(0)`) and methods that keep the graph (`.mean()`,
    `.cpu()`).

    Silent for `.item()`, `float(...)`, `.detach()`, `.data`, `.tolist()`
    (also a name rebound to one before it is added: `loss = loss.detach().cpu().numpy()`);
    under `torch.no_grad()`, `torch.inference_mode()`,
    `torch.set_grad_enabled(False)`; when the sum itself is backpropagated
    (gradient accumulation: `total.backward()`); for accumulation within one
    step (summing the losses of several heads inside the step, then one
    backward), and when the graph is not evident (a value from another file).

    `torchtrap run` reports losses whose graphs stay alive across steps
    (8 or more from earlier steps), naming what keeps them: a meter's
    attribute (`AverageMeter.sum`, also in another file) or a list.

    ## Why is this bad?
    A tensor that carries an autograd graph keeps that graph alive, and a
    sum of such tensors links every iteration's graph into one, so memory
    grows with every step until the process is killed (often reported as
    "DataLoader worker killed by signal" or a CUDA out-of-memory in a later
    epoch). Measured with torch 2.13 on CPU: `total += loss` after
    `loss.backward()` keeps about 7 KB per step for a two-layer MLP (18 MB
    in 2,500 steps) and 4 graph nodes per step; without a backward (an
    evaluation without `no_grad`) it keeps every activation, 94 KB per step
    (235 MB in 2,500 steps). With `.item()` the growth is 0.1 MB.

    Fixes (safe): `.item()` where the total is only logged or printed, else
    `.detach()` (keeps a tensor, on the same device).

    ## Example
    ```python
    total_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
    total_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    ```

    ## References
    - https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
    - https://pytorch.org/docs/stable/generated/torch.Tensor.item.html
    """

    code = "TT214"
    name = "loss-kept-with-graph"
    summary = (
        "a loss accumulated across iterations without `.item()`/`.detach()`: its graph stays alive"
    )
    fact = "torch 2.13: `total += loss` kept 18 MB in 2,500 steps of a small MLP; `.item()`: 0.1 MB"
    requires_text = ("backward",)

    def check(self) -> Iterable[Finding]:
        loops = self.ctx.values.loops
        for acc in self._accumulations():
            finding = self._check(loops, acc)
            if finding is not None:
                yield finding

    def _accumulations(self) -> Iterator[_Accumulation]:
        index = self.ctx.facts.index
        for aug in index.of(ast.AugAssign):
            if isinstance(aug.op, (ast.Add, ast.Sub)):
                yield _Accumulation(aug, aug.target, (aug.value,))
        for assign in index.of(ast.Assign):
            value = assign.value
            if (
                len(assign.targets) == 1
                and isinstance(value, ast.BinOp)
                and isinstance(value.op, ast.Add)
                and dotted_name(assign.targets[0]) is not None
                and dotted_name(value.left) == dotted_name(assign.targets[0])
            ):
                yield _Accumulation(assign, assign.targets[0], (value.right,))
        yield from self._stored_by_method()
        for call in self.ctx.facts.calls_by_name.get("append", ()):
            if not (isinstance(call.func, ast.Attribute) and len(call.args) == 1):
                continue
            arg = call.args[0]
            if isinstance(arg, ast.Dict):
                values = tuple(v for v in arg.values if v is not None)
            elif isinstance(arg, (ast.List, ast.Tuple)):
                values = tuple(arg.elts)
            else:
                values = (arg,)
            yield _Accumulation(call, call.func.value, values)

    def _stored_by_method(self) -> Iterator[_Accumulation]:
        """``meter.update(loss)`` where the project method adds its argument
        into an attribute of the object (``self.sum += val * n``) or appends
        it, as it is: the meter keeps every step's graph."""
        loops = self.ctx.values.loops
        for call in self.ctx.facts.index.of(ast.Call):
            func = call.func
            if not (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, (ast.Name, ast.Attribute))
                and call.args
                and not any(isinstance(a, ast.Starred) for a in call.args)
                and loops.enclosing_loops(call)
            ):
                continue
            if func.attr == "append" or not loops.may_backpropagate(loops.enclosing_loops(call)[0]):
                continue
            method = loops.project_method(call)
            if method is None:
                continue
            params = [a.arg for a in (*method.args.posonlyargs, *method.args.args)]
            if params[:1] != ["self"]:
                continue
            stored = [
                arg
                for name, arg in zip(params[1:], call.args, strict=False)
                if keeps_parameter(method, name)
            ]
            # A display's elements are what the method keeps (`meter.update([a, b])`).
            items = [
                e
                for arg in stored
                for e in (arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg])
            ]
            if items:
                yield _Accumulation(call, func.value, tuple(items))

    def _check(self, loops: LoopFacts, acc: _Accumulation) -> Finding | None:
        enclosing = loops.enclosing_loops(acc.node)
        if not enclosing:
            return None
        loop = enclosing[0]
        if not loops.may_backpropagate(loop):
            return None
        if loops.in_framework(loop) or grad_off_context(acc.node, self.ctx.facts.imports):
            return None
        root = _root(acc.target)
        if root is None or (root != "self" and _bound_in(loop, root, acc.node)):
            return None  # a fresh accumulator each iteration: within one step
        events = loops.iteration(loop)
        if not any(e.kind == BACKWARD for e in events):
            return None
        graph = [v for v in acc.values if loops.carries_graph(v, acc.node, events)]
        if not graph:
            return None
        function = enclosing_function(loop)
        scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.Module = function or self.ctx.tree
        own = [e for e in loops.function_events(scope) if loops.foreign_path(e.node) is None]
        if _sum_backpropagated(own, acc.target):
            return None  # gradient accumulation: the sum is backpropagated
        return self._finding(acc, graph, events, scope, loop)

    def _finding(
        self,
        acc: _Accumulation,
        graph: list[ast.expr],
        events: list[Event],
        scope: ast.AST,
        loop: Loop,
    ) -> Finding:
        target = ast.unparse(acc.target)
        value = ast.unparse(graph[0])
        verb = "adds up"
        if isinstance(acc.node, ast.Call):
            method = acc.node.func.attr if isinstance(acc.node.func, ast.Attribute) else ""
            verb = "appends" if method == "append" else f"keeps (`.{method}()`)"
        candidates = (
            f"`{target}` {verb} `{value}` with its autograd graph: every iteration's graph "
            "stays alive and memory grows each step",
            f"`{target}` {verb} a tensor with its autograd graph: memory grows each step",
        )
        message = next((m for m in candidates if len(m) <= MESSAGE_LIMIT), candidates[-1])
        source = self.ctx.source
        fixes: list[Fix] = []
        if any(self.ctx.values.loops.container_of_graph(v, events) for v in graph):
            # A dict or list holding the loss: `.detach()` would not work on it.
            return self.finding(acc.node, message)
        root = _root(acc.target)
        if (
            root is not None
            and root != "self"
            and all(_scalar_loss(v, events) for v in graph)
            and _only_logged(scope, root, acc)
        ):
            fixes.append(
                Fix(
                    "Add `.item()`: keep the number, not the graph",
                    Applicability.SAFE,
                    build=lambda: _wrap(source, graph, "item"),
                )
            )
        fixes.append(
            Fix(
                "Add `.detach()`: keep the value, not the graph",
                Applicability.SAFE,
                build=lambda: _wrap(source, graph, "detach"),
            )
        )
        node = acc.node if isinstance(acc.node, ast.stmt) else graph[0]
        return self.finding(node, message, fixes=fixes)

    valid = (
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                total = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total += loss.item()
                return total
            """,
            note="`.item()`",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                total, losses = 0.0, []
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total += float(loss)
                    losses.append(loss.detach())
                return total, losses
            """,
            note="`float()`, `.detach()`",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion, steps=4):
                optimizer.zero_grad()
                total = 0
                for i, (x, y) in enumerate(loader):
                    total = total + criterion(model(x), y) / steps
                    if (i + 1) % steps == 0:
                        total.backward()
                        optimizer.step()
                        optimizer.zero_grad()
                        total = 0
            """,
            note="the sum is backpropagated once: gradient accumulation",
        ),
        Valid(
            """
            import torch

            def train(model, heads, loader, optimizer, criterion):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = 0
                    for head in heads:
                        loss += criterion(head(model(x)), y)
                    loss.backward()
                    optimizer.step()
            """,
            note="accumulation within one step",
        ),
        Valid(
            """
            import torch

            def train(model, loader, val_loader, optimizer, criterion):
                val_losses = []
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    with torch.no_grad():
                        val_losses.append(criterion(model(x), y))
            """,
            note="under `no_grad`",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion, log):
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    log.append(loss.data)
            """,
            note="`.data` has no graph",
        ),
        Valid(
            """
            import torch
            from mylib import train_step

            def train(model, loader):
                total = 0
                for batch in loader:
                    loss = train_step(model, batch)
                    total += loss
                return total
            """,
            note="the loss comes from another file: its graph is not evident",
        ),
        Valid(
            """
            import torch
            import lightning as L

            class Model(L.LightningModule):
                def training_step(self, batch, batch_idx):
                    for micro in batch:
                        loss = self(micro)
                        self.manual_backward(loss)
                        self.losses.append(loss)
            """,
            note="inside a LightningModule hook",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer):
                outputs = []
                for batch in loader:
                    optimizer.zero_grad()
                    output = model(batch)
                    output["loss"].backward()
                    optimizer.step()
                    output["loss"] = output["loss"].detach()
                    outputs.append(output)
                return outputs
            """,
            note="the backpropagated item is replaced by its detached value (packnet-sfm's fix)",
        ),
        Valid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                running = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    loss = loss.detach().cpu().numpy()
                    running += loss
                return running
            """,
            note="issue 34: the name is rebound to a detached numpy value before it is added",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                total_loss = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total_loss += loss
                print(f"mean loss {total_loss / len(loader):.3f}")
            """,
            line=11,
            message_contains="`total_loss` adds up `loss` with its autograd graph",
            fix_title=".item()",
            fixed="""
            import torch

            def train(model, loader, optimizer, criterion):
                total_loss = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    total_loss += loss.item()
                print(f"mean loss {total_loss / len(loader):.3f}")
            """,
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                losses = []
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss)
                return torch.stack(losses).mean()
            """,
            line=11,
            message_contains="`losses` appends `loss`",
            note="a list used as tensors later: only `.detach()` is offered",
            fixed="""
            import torch

            def train(model, loader, optimizer, criterion):
                losses = []
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    losses.append(loss.detach())
                return torch.stack(losses).mean()
            """,
        ),
        Invalid(
            """
            import torch
            from collections import defaultdict

            def train(model, loader, optimizer, criterion, scaler):
                stats = defaultdict(float)
                history = []
                for x, y in loader:
                    optimizer.zero_grad()
                    ce = criterion(model(x), y)
                    reg = model.penalty()
                    loss = ce + 0.1 * reg
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    stats["ce"] += ce
                    history.append({"loss": loss, "step": len(history)})
                return stats, history
            """,
            line=16,
            message_contains="`stats['ce']` adds up `ce`",
            note="a term of the backpropagated loss, into a dict; a dict appended to a list",
        ),
        Invalid(
            """
            import torch

            def step(model, batch, optimizer):
                optimizer.zero_grad()
                loss = model(batch)
                loss.backward()
                optimizer.step()
                return loss

            def train(model, loader, optimizer):
                running = 0
                for batch in loader:
                    running = running + step(model, batch, optimizer)
                return running
            """,
            line=14,
            note="a helper of this file returns the backpropagated loss",
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer):
                outputs = []
                for batch in loader:
                    optimizer.zero_grad()
                    output = model(batch)
                    output["loss"].backward()
                    optimizer.step()
                    outputs.append(output)
                return outputs
            """,
            line=11,
            note="a dict holding the backpropagated loss (packnet-sfm #51): no fix for a dict",
        ),
        Invalid(
            """
            import torch

            class Trainer:
                def fit(self, loader):
                    for x, y in loader:
                        self.optimizer.zero_grad()
                        loss = self.criterion(self.model(x), y)
                        loss.backward()
                        self.optimizer.step()
                        self.epoch_loss += loss * x.size(0)
            """,
            line=11,
            message_contains="`self.epoch_loss`",
            fixed="""
            import torch

            class Trainer:
                def fit(self, loader):
                    for x, y in loader:
                        self.optimizer.zero_grad()
                        loss = self.criterion(self.model(x), y)
                        loss.backward()
                        self.optimizer.step()
                        self.epoch_loss += (loss * x.size(0)).detach()
            """,
        ),
        Invalid(
            """
            import torch

            def train(model, loader, optimizer, criterion):
                running = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    loss_np = loss.detach().cpu().numpy()
                    running += loss
                return running, loss_np
            """,
            line=12,
            note="near miss of the rebound name: the detached copy has another name",
        ),
    )


def _root(target: ast.expr) -> str | None:
    """``total`` of ``total``, ``stats`` of ``stats[k]``, ``self`` of ``self.x``."""
    node = target
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound_in(loop: Loop, name: str, accumulation: ast.AST) -> bool:
    """Is ``name`` (re)bound inside the loop's body (other than by the
    accumulation itself), so that it starts afresh in each iteration?"""
    if not any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in loop.body
        for n in (stmt, *walk_scope(stmt))
    ):
        return False
    for stmt in loop.body:
        for node in (stmt, *walk_scope(stmt)):
            if node is accumulation:
                continue
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.For, ast.AsyncFor)):
                targets = [node.target]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            else:
                continue
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and sub.id == name:
                        return True
    return False


def _sum_backpropagated(events: list[Event], target: ast.expr) -> bool:
    root = _root(target)
    spelled = ast.unparse(target)
    for event in events:
        if event.kind != BACKWARD or not isinstance(event.node, ast.Call):
            continue
        for node in ast.walk(event.node):
            if isinstance(node, ast.Name) and node.id == root and root != "self":
                return True
            if isinstance(node, (ast.Attribute, ast.Subscript)) and ast.unparse(node) == spelled:
                return True
    return False


def _scalar_loss(value: ast.expr, events: list[Event]) -> bool:
    """A name backpropagated without a gradient argument: a one-element
    tensor, so ``.item()`` works."""
    if not isinstance(value, ast.Name):
        return False
    for event in events:
        call = event.node
        if event.kind != BACKWARD or event.via or not isinstance(call, ast.Call):
            continue
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "backward"
            and not call.args
            and ast.unparse(func.value) in (value.id, f"{_receiver(func.value)}")
        ):
            inner = func.value
            if isinstance(inner, ast.Name) and inner.id == value.id:
                return True
            if (
                isinstance(inner, ast.Call)
                and inner.args
                and isinstance(inner.args[0], ast.Name)
                and inner.args[0].id == value.id
            ):
                return True  # scaler.scale(loss).backward()
    return False


def _receiver(expr: ast.expr) -> str:
    return ast.unparse(expr)


def _only_logged(scope: ast.AST, root: str, acc: _Accumulation) -> bool:
    """Every other read of the accumulator is shown or logged (an f-string,
    ``print``, a logger), so a float works as well as a tensor."""
    inside = {id(n) for n in ast.walk(acc.node)}
    for node in walk_scope(scope):
        if not (isinstance(node, ast.Name) and node.id == root and isinstance(node.ctx, ast.Load)):
            continue
        if id(node) in inside:
            continue
        if not _in_log(node, scope):
            return False
    return True


def _in_log(node: ast.AST, scope: ast.AST) -> bool:
    from torchtrap.facts.index import ancestors

    for anc in ancestors(node):
        if anc is scope or isinstance(anc, ast.stmt):
            return False
        if isinstance(anc, ast.JoinedStr):
            return True
        if isinstance(anc, ast.Call):
            func = anc.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _LOG_CALLS:
                return True
    return False


def _wrap(source: object, values: list[ast.expr], method: str) -> list[Edit]:
    from torchtrap.source import SourceText

    assert isinstance(source, SourceText)
    out: list[Edit] = []
    for value in values:
        text = source.segment(source.node_range(value))
        wrapped = f"{text}.{method}()" if isinstance(value, _ATOMS) else f"({text}).{method}()"
        out.append(edits.replace(source, value, wrapped))
    return out
