"""TT225: a tensor allocated without initialising it, read before it is written."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.allocation import Allocation, uninitialised
from torchtrap.facts.index import enclosing_function, enclosing_scope, parent, walk_scope
from torchtrap.facts.modules import enclosing_method, self_name
from torchtrap.facts.tensors import words
from torchtrap.findings import Applicability, Edit, Finding, Fix
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid

# In-place methods that write every element.
INIT_METHODS = words(
    """
    zero_ fill_ normal_ uniform_ copy_ random_ bernoulli_ exponential_ geometric_ cauchy_
    log_normal_ set_ resize_as_
    """
)
# Methods that read the elements (arithmetic, reductions, in-place arithmetic).
READ_METHODS = words(
    """
    sum mean max min prod std var norm item tolist numpy add sub mul div matmul mm bmm exp
    log sqrt abs pow clamp softmax log_softmax sigmoid tanh relu argmax argmin add_ sub_
    mul_ div_ addmm_ addcmul_ addcdiv_ clamp_ pow_ exp_ log_ sqrt_ abs_ masked_fill_
    index_add_ scatter_add_
    """
)
# Metadata: looking at these does not read an element.
METADATA = words(
    """
    shape size dim ndim numel nelement dtype device is_cuda layout requires_grad
    """
)
READ_FUNCTIONS = words(
    """
    sum mean max min prod std var norm matmul mm bmm exp log sqrt abs add sub mul div
    softmax log_softmax sigmoid tanh relu argmax argmin allclose equal isnan
    """
)


class UninitialisedTensor(Rule):
    """Flags a tensor from `torch.empty`/`torch.Tensor(n)` read before it is written.

    ## What it does
    Flags `x = torch.empty(...)`, `torch.empty_like(t)`, `t.new_empty(...)`,
    and the legacy constructors given sizes (`torch.Tensor(n)`,
    `torch.FloatTensor(n, m)`, `torch.cuda.LongTensor(n)`,
    `torch.Tensor(x.size())`) when the first thing the same function does
    with `x` reads its elements: arithmetic (`x + 1`, `x += y`), a reduction
    or math method (`x.sum()`, `x.add_(y)`), a torch function that computes
    with it (`torch.sum(x)`, `F.relu(x)`), or `print(x)`. A legacy constructor's tensor
    returned as it is (`return torch.FloatTensor(1, bsz, hidden)`) is
    flagged too: callers treat it as zeros.

    Silent when the first use writes every element: `zero_()`, `fill_()`,
    `normal_()`, `uniform_()`, `copy_()` and the other in-place random
    fills, `torch.nn.init.*(x)`, `out=x`, `x[:] = ...` / `x[...] = ...`;
    when it writes part (`x[i] = ...`, filled in a loop) or passes `x` to a
    call that may fill it (a kernel, `dist.all_gather`, an RNN); for
    `torch.empty` returned to the caller (an allocation helper); for a
    legacy constructor given data (`torch.Tensor([1, 2])`,
    `torch.FloatTensor(array)`) or `torch.tensor(...)`, which copy; and
    for `nn.Parameter(torch.Tensor(n, m))` stored on a module when
    something in the file may fill it: a `reset_parameters`/`init_weights`
    style method, `.apply(...)`, a loop over `.parameters()`,
    `load_state_dict`, or `nn.init.*`, a helper or an in-place fill given
    it. With none of those, a parameter the module uses (arithmetic, a
    torch function, `torch.cat`) is flagged: it trains from garbage.
    Only looking at the size (`x.shape`, `x.size(0)`) is not a use, and neither is copying it along
    (`torch.cat((t, padding))`: DETR pads a buffer for `all_gather` and cuts
    the padding off after).

    ## Why is this bad?
    These calls allocate memory and do not initialise it, so the tensor
    holds whatever bytes were there before: often zeros on a fresh page,
    sometimes leftovers of a freed tensor, huge values or NaN, so results
    change from run to run and can turn into NaN losses. `torch.Tensor(3)`
    is not `torch.tensor([3])` and not three zeros. Measured with torch
    2.13 on CPU: a sum accumulated into `torch.empty(dim)` right after a
    temporary tensor of 1.5s is freed starts from 1.5 instead of 0 for 7 or
    8 of 8 sizes tried (2,048 to 10,000 floats), in every run; which block
    the allocator hands back depends on the heap, so the same code can be
    right in one run and wrong in the next.

    Fix (safe): allocate with `torch.zeros` / `zeros_like` / `new_zeros`
    (the legacy constructors keep their dtype and device); unsafe for a
    parameter, which may need a random init instead.

    ## Example
    ```python
    counts = torch.Tensor(num_classes)
    for label in labels:
        counts[label] += 1
    ```

    ## Use instead
    ```python
    counts = torch.zeros(num_classes)
    for label in labels:
        counts[label] += 1
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.empty.html
    - https://pytorch.org/docs/stable/tensors.html#torch.Tensor
    - https://github.com/pytorch/pytorch/issues/47245
    """

    code = "TT225"
    name = "uninitialised-tensor"
    summary = (
        "a tensor from `torch.empty`/`torch.Tensor(n)` read before it is written: garbage or NaN"
    )
    fact = (
        "Measured with torch 2.13 on CPU: `torch.empty(dim)` right after a tensor of 1.5s is "
        "freed held the 1.5s for 7 or 8 of 8 sizes, in every run."
    )
    requires_text = ("empty", "Tensor(")

    def check(self) -> Iterable[Finding]:
        self._scopes: dict[int, tuple[dict[str, list[ast.Name]], set[int]]] = {}
        imports = self.ctx.facts.imports
        for call in self.ctx.facts.index.of(ast.Call):
            alloc = uninitialised(call, imports, self._int_constant)
            if alloc is None:
                continue
            up = parent(call)
            if (
                isinstance(up, ast.Call)
                and up.args[:1] == [call]
                and imports.qualname(up.func) in _IDENTITY_WRAPPERS
            ):
                up = parent(up)  # Variable(torch.FloatTensor(1)): the same memory
            if isinstance(up, (ast.BinOp, ast.UnaryOp)):
                yield self._finding(alloc, None, up)
                continue
            if (
                isinstance(up, ast.Call)
                and up.args[:1] == [call]
                and imports.qualname(up.func) in _PARAMETERS
            ):
                found = self._unfilled_parameter(up)
                if found is not None:
                    yield self._finding(alloc, f"self.{found[0]}", found[1], parameter=True)
                continue
            if (
                isinstance(up, ast.Return)
                and alloc.zeros == "zeros"
                and alloc.spelled != "torch.empty"
            ):
                yield self._finding(alloc, None, up)
                continue
            if isinstance(up, ast.Assign) and len(up.targets) == 1:
                target = up.targets[0]
            elif isinstance(up, ast.AnnAssign):
                target = up.target
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            read = self._first_read(up, target.id)
            if read is not None:
                yield self._finding(alloc, target.id, read)

    # -- detection ------------------------------------------------------------
    def _int_constant(self, node: ast.expr) -> bool:
        """A name bound once, to an int literal (``n = 10`` ... ``torch.Tensor(n)``),
        or a parameter annotated ``int`` that is never rebound
        (``def __init__(self, num_tags: int)``)."""
        if not isinstance(node, ast.Name):
            return False
        if _int_parameter(node):
            return True
        value = self.ctx.values.constant(node)
        constant = value.constant
        return (
            constant is not None
            and isinstance(constant.value, int)
            and not isinstance(constant.value, bool)
        )

    def _first_read(self, stmt: ast.stmt, name: str) -> ast.AST | None:
        """Where ``name`` (bound at ``stmt``) is first read, when its first
        use reads it; None when it writes it, may write it, or is not used."""
        scope = enclosing_scope(stmt)
        end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
        names, own = self._names_in(scope)
        uses = [n for n in names.get(name, ()) if (n.lineno, n.col_offset) >= end]
        for use in uses:
            if id(use) not in own:
                return None  # a closure or a decorator: it runs at another time
            assign = parent(use)
            if isinstance(use.ctx, ast.Store) and isinstance(assign, ast.Assign):
                # `x = x + 1`: the value is evaluated before the target is bound.
                read = next(
                    (n for n in ast.walk(assign.value) if isinstance(n, ast.Name) and n.id == name),
                    None,
                )
                if read is not None:
                    use = read
            verdict = self._use(use)
            if verdict == "skip":
                continue
            return verdict if isinstance(verdict, ast.AST) else None
        return None

    def _unfilled_parameter(self, param: ast.Call) -> tuple[str, ast.AST] | None:
        """``self.w = nn.Parameter(torch.empty(n))`` in a method of a class
        that derives from ``nn.Module`` alone and has nothing that may fill
        it: no ``reset_parameters``-style method, no ``.apply(...)``, no loop
        over ``.parameters()``, no ``load_state_dict``, and no use of ``.w``
        in the file that may write it (``nn.init.*(self.w)``, ``self.w.data
        = ...``, a helper given it). (attribute, first read) when it is read
        (arithmetic, a torch function, ``torch.cat``); None otherwise."""
        assign = parent(param)
        if not (
            isinstance(assign, ast.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Attribute)
            and isinstance(assign.targets[0].value, ast.Name)
        ):
            return None
        target = assign.targets[0]
        owner = target.value
        method = enclosing_method(assign)
        if method is None or not isinstance(owner, ast.Name) or self_name(method[0]) != owner.id:
            return None
        cls = method[1]
        imports = self.ctx.facts.imports
        if len(cls.bases) != 1 or imports.qualname(cls.bases[0]) not in _MODULE_BASES:
            return None  # a base class may fill it
        tree = self.ctx.tree
        if _fills_generically(tree):
            return None
        reads: list[ast.AST] = []
        for node in self.ctx.facts.index.of(ast.Attribute):
            if node.attr != target.attr or node is target:
                continue
            verdict = self._parameter_use(node)
            if verdict is None:
                return None  # may write it
            if isinstance(verdict, ast.AST):
                reads.append(verdict)
        if not reads:
            return None
        reads.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        return target.attr, reads[0]

    def _parameter_use(self, node: ast.Attribute) -> ast.AST | str | None:
        """A read of a parameter's elements (the node), "skip" for metadata or
        a copy bound to a name, None for anything that may write it. Looks
        through ``.data``, views (``.view(1, -1)``) and indexing."""
        if not isinstance(node.ctx, ast.Load):
            return None
        expr: ast.expr = node
        derived = False
        while True:
            up = parent(expr)
            if isinstance(up, ast.Attribute) and up.value is expr and up.attr == "data":
                expr = up
                continue
            call = parent(up) if isinstance(up, ast.Attribute) else None
            if (
                isinstance(up, ast.Attribute)
                and up.value is expr
                and up.attr in _VIEWS
                and isinstance(call, ast.Call)
                and call.func is up
            ):
                expr, derived = call, True
                continue
            if isinstance(up, ast.Subscript) and up.value is expr and isinstance(up.ctx, ast.Load):
                expr, derived = up, True
                continue
            break
        if not isinstance(expr.ctx if isinstance(expr, ast.Attribute) else ast.Load(), ast.Load):
            return None  # self.w.data = ...
        up = parent(expr)
        if isinstance(up, ast.Attribute) and up.value is expr:
            if up.attr in METADATA:
                return "skip"
            call = parent(up)
            if isinstance(call, ast.Call) and call.func is up and up.attr in READ_METHODS:
                return call
            return None  # .normal_(), .copy_(...), anything else
        if isinstance(up, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return up
        if isinstance(up, ast.AugAssign):
            return up  # `llh += self.end[tags]`, or the parameter itself updated
        if isinstance(up, ast.Assign) and up.value is expr and derived:
            return "skip"  # a copy or view bound to a name: its own value from here
        call = up
        if isinstance(call, (ast.List, ast.Tuple)):
            call = parent(call)
        if isinstance(call, ast.Call) and call.func is not expr:
            qualname = self.ctx.facts.imports.qualname(call.func) or ""
            if qualname.startswith("torch.") and not qualname.startswith(
                ("torch.nn.init.", "torch.nn.Parameter", "torch.nn.parameter.")
            ):
                return call  # computed with (`torch.cat`, `F.linear`): garbage flows on
        return None

    def _names_in(self, scope: ast.AST) -> tuple[dict[str, list[ast.Name]], set[int]]:
        """The names in ``scope`` (nested scopes included) by identifier, in
        source order, and the ids of those in ``scope`` itself; once per scope."""
        cache = self._scopes
        if id(scope) not in cache:
            names: dict[str, list[ast.Name]] = {}
            for node in ast.walk(scope):
                if isinstance(node, ast.Name):
                    names.setdefault(node.id, []).append(node)
            for found in names.values():
                found.sort(key=lambda n: (n.lineno, n.col_offset))
            own = {id(n) for n in walk_scope(scope) if isinstance(n, ast.Name)}
            cache[id(scope)] = (names, own)
        return cache[id(scope)]

    def _use(self, name: ast.Name) -> ast.AST | str | None:
        """ "skip": only metadata; a node: a read there; None: a write or unknown."""
        augmented = parent(name)
        if isinstance(augmented, ast.AugAssign) and augmented.target is name:
            return augmented  # x += y reads x
        if isinstance(name.ctx, (ast.Store, ast.Del)):
            return None
        node: ast.expr = name
        up = parent(node)
        while isinstance(up, ast.Attribute) and up.attr == "data" and up.value is node:
            node, up = up, parent(up)
        if isinstance(up, ast.Attribute) and up.value is node:
            if up.attr in METADATA:
                return "skip"
            call = parent(up)
            if isinstance(call, ast.Call) and call.func is up:
                if up.attr in INIT_METHODS:
                    return None
                if up.attr in READ_METHODS and not _has_out(call):
                    return call
            return None
        if isinstance(up, ast.Call) and up.func is not node:
            return self._argument(up, node)
        if isinstance(up, ast.keyword):
            return None  # out=x, or passed along
        if isinstance(up, ast.Subscript) and up.value is node:
            outer = parent(up)
            if isinstance(outer, ast.AugAssign) and outer.target is up:
                return outer  # x[i] += 1 reads x[i]
            if isinstance(up.ctx, ast.Store):
                return None  # x[:] = ... fills it; x[i] = ... may, in a loop
            return outer if isinstance(outer, (ast.BinOp, ast.UnaryOp, ast.Compare)) else None
        if isinstance(up, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in up.ops):
            return None  # `x is None` looks at the object, not its elements
        if isinstance(up, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.FormattedValue)):
            return up
        if isinstance(up, (ast.List, ast.Tuple)):
            call = parent(up)
            if isinstance(call, ast.Call) and up in call.args:
                return self._argument(call, up)
        return None

    def _argument(self, call: ast.Call, arg: ast.expr) -> ast.AST | None:
        """A call given the tensor: a read for ``print`` and torch functions
        that read their inputs; None (may write it) for any other call."""
        if _has_out(call):
            return None
        func = call.func
        if isinstance(func, ast.Name) and func.id == "print" and func.id not in self._bound_names():
            return call
        qualname = self.ctx.facts.imports.qualname(func) or ""
        head, _, last = qualname.rpartition(".")
        if head == "torch" and last in READ_FUNCTIONS:
            return call
        if head == "torch.nn.functional" and arg is not None:
            return call
        return None

    def _bound_names(self) -> set[str]:
        return set(self.ctx.facts.classes.classes) | {
            n.name for n in self.ctx.tree.body if isinstance(n, ast.FunctionDef)
        }

    # -- findings -------------------------------------------------------------
    def _finding(
        self, alloc: Allocation, name: str | None, read: ast.AST, parameter: bool = False
    ) -> Finding:
        what = (
            f"`{alloc.spelled}(...)`"
            if not alloc.spelled.startswith(".")
            else f"`{alloc.spelled}(...)`"
        )
        if name is None:
            how = "returned" if isinstance(read, ast.Return) else "used"
            message = f"{what} is uninitialised memory (garbage, maybe NaN), {how} as it is"
            related = []
        elif parameter:
            message = f"`{name}` is a parameter of {what} that nothing fills: garbage, maybe NaN"
            related = [self.ctx.related(read, f"`{name}` is used here, never initialised")]
        else:
            message = (
                f"`{name}` from {what} is uninitialised memory (garbage, maybe NaN), "
                "read before it is written"
            )
            related = [self.ctx.related(read, f"`{name}` is read here before any write")]
        fixes = self._fixes(alloc, safe=not parameter)
        return self.finding(alloc.call, message, fixes=fixes, related=related)

    def _fixes(self, alloc: Allocation, safe: bool = True) -> list[Fix]:
        call = alloc.call
        func = call.func
        if not isinstance(func, ast.Attribute):
            return []
        source = self.ctx.source
        root: ast.expr = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if alloc.spelled.startswith("."):
            new_func = f"{source.segment(source.node_range(func.value))}.{alloc.zeros}"
        elif isinstance(root, ast.Name):
            torch = root.id
            new_func = f"{torch}.{alloc.zeros}"
        else:
            return []
        extra: list[str] = []
        if alloc.dtype is not None:
            extra.append(
                f"dtype={root.id if isinstance(root, ast.Name) else 'torch'}.{alloc.dtype}"
            )
        if alloc.device is not None and not any(kw.arg == "device" for kw in call.keywords):
            extra.append('device="cuda"')
        shown = new_func.rsplit(".", 1)[-1]

        def build() -> list[Edit]:
            out = [edits.replace(source, func, new_func)]
            if extra:
                name, _, value = ", ".join(extra).partition("=")
                out.append(edits.add_keyword_argument(source, call, name, value))
            return out

        # A parameter's zeros are deterministic but may not be the init the
        # model needs (a weight matrix wants a random one): unsafe.
        applicability = Applicability.SAFE if safe else Applicability.UNSAFE
        title = f"Allocate with `{shown}` (zero-filled)"
        if not safe:
            title = f"Allocate with `{shown}` (unsafe: a weight may need a random init instead)"
        return [Fix(title, applicability, build=build)]

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            def make(n, m, src):
                a = torch.empty(n, m)
                a.normal_(0, 0.02)
                b = torch.Tensor(n, m)
                nn.init.xavier_uniform_(b)
                c = torch.empty_like(src)
                c.copy_(src)
                d = torch.empty(n)
                torch.randn(n, out=d)
                e = torch.empty(n)
                e[:] = 1.0
                empty = torch.empty((0, 4))
                print(empty.sum())
                f = torch.empty(n, m)
                f.data.zero_()
                return a + b + c + d + e + f, empty
            """,
            note="written whole first: in-place fills, nn.init, out=, a full slice; no element",
        ),
        Valid(
            """
            import torch

            def pad(t, n):
                padding = torch.empty(size=(n - len(t),), dtype=torch.uint8)
                return torch.cat((t, padding), dim=0)

            def gather(x, n):
                out = torch.empty(n, x.shape[1])
                for i in range(out.shape[0]):
                    out[i] = x[i % len(x)]
                buf = torch.empty_like(x)
                my_kernel(x, buf)
                return out, buf
            """,
            note="filled element by element, or by a call that may write it; padding copied along",
        ),
        Valid(
            """
            import torch
            import numpy as np

            def values(xs):
                a = torch.Tensor([1, 2, 3])
                b = torch.FloatTensor(np.array(xs))
                c = torch.tensor(3)
                d = torch.Tensor(xs)
                return a + b + c + d
            """,
            note="constructors given data copy it",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Linear(nn.Module):
                def __init__(self, n, m):
                    super().__init__()
                    self.weight = nn.Parameter(torch.Tensor(m, n))
                    self.reset_parameters()

                def reset_parameters(self):
                    nn.init.kaiming_uniform_(self.weight)

            def alloc(shape, device):
                return torch.empty(shape, device=device)

            def test_load(shape, load):
                out = torch.empty(shape)

                @patch("pkg.create", side_effect=[out])
                def run(mock):
                    load()

                run()
                return out.numpy()
            """,
            note="filled by reset_parameters; an allocation helper; handed to a closure first",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            from timm.layers import trunc_normal_

            class Prompt(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.contexts = nn.Parameter(torch.empty(1, n))
                    nn.init.trunc_normal_(self.contexts)
                    self.bias = nn.Parameter(torch.empty(n))
                    trunc_normal_(self.bias, std=0.02)
                    self.scale = nn.Parameter(torch.empty(n))
                    self.scale.data.fill_(1.0)
                    self.unused = nn.Parameter(torch.empty(n))

                def forward(self, x):
                    print(self.unused.shape)
                    return torch.cat([x, self.contexts], dim=0) * self.scale + self.bias

            class Loaded(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.weight = nn.Parameter(torch.empty(n, n))

                def forward(self, x):
                    return x @ self.weight

            def build(n, path):
                model = Loaded(n)
                model.load_state_dict(torch.load(path))
                return model
            """,
            note="parameters of torch.empty that an init function, a helper, a fill, or a "
            "checkpoint load in the file may fill, or that are only looked at",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class GATLayer(nn.Module):
                def __init__(self, heads: int, features: int):
                    super().__init__()
                    self.scoring_fn_target = nn.Parameter(torch.Tensor(1, heads, features))
                    self.init_params()

                def init_params(self):
                    nn.init.xavier_uniform_(self.scoring_fn_target)

                def forward(self, x):
                    return (x * self.scoring_fn_target).sum(dim=-1)

            class LSoftmaxLinear(nn.Module):
                def __init__(self, input_features: int, output_features: int):
                    super().__init__()
                    self.weight = nn.Parameter(torch.FloatTensor(input_features, output_features))

                def forward(self, x):
                    return x.mm(self.weight)

                def reset_parameters(self):
                    nn.init.kaiming_normal_(self.weight.data.t())
            """,
            note="filled by an init method (pytorch-GAT), or by a reset_parameters the "
            "user's model calls from another file (lsoftmax-pytorch's models.py)",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch

            def class_counts(labels, num_classes):
                counts = torch.Tensor(num_classes + 1)
                for label in labels:
                    counts[label] += 1
                return counts
            """,
            line=5,
            message_contains="read before it is written",
            fixed="""
            import torch

            def class_counts(labels, num_classes):
                counts = torch.zeros(num_classes + 1)
                for label in labels:
                    counts[label] += 1
                return counts
            """,
        ),
        Invalid(
            """
            import torch

            def accumulate(batches, dim):
                total = torch.empty(dim)
                for b in batches:
                    total += b.sum(0)
                return total
            """,
            line=5,
            fixed="""
            import torch

            def accumulate(batches, dim):
                total = torch.zeros(dim)
                for b in batches:
                    total += b.sum(0)
                return total
            """,
        ),
        Invalid(
            """
            import torch

            def init_hidden(bsz, hidden):
                return torch.cuda.FloatTensor(1, bsz, hidden)
            """,
            line=5,
            message_contains="returned as it is",
            fixed="""
            import torch

            def init_hidden(bsz, hidden):
                return torch.zeros(1, bsz, hidden, dtype=torch.float32, device="cuda")
            """,
        ),
        Invalid(
            """
            import torch

            NUM_BINS = 16

            def histogram(values):
                bins = torch.Tensor(NUM_BINS)
                for v in values:
                    bins[int(v * NUM_BINS)] += 1
                return bins
            """,
            line=7,
            note="a size held in a name bound to an int literal",
            fixed="""
            import torch

            NUM_BINS = 16

            def histogram(values):
                bins = torch.zeros(NUM_BINS)
                for v in values:
                    bins[int(v * NUM_BINS)] += 1
                return bins
            """,
        ),
        Invalid(
            """
            import torch
            from torch.autograd import Variable

            def orthogonal_penalty(weights):
                loss = Variable(torch.FloatTensor(1), requires_grad=True)
                for w in weights:
                    loss = loss + (w @ w.t()).norm()
                return loss
            """,
            line=6,
            note="wrapped in Variable: the same uninitialised memory",
        ),
        Invalid(
            """
            import torch

            def mix(x):
                noise = x.new_empty(x.size())
                print(noise.mean())
                return x + noise
            """,
            line=5,
            fixed="""
            import torch

            def mix(x):
                noise = x.new_zeros(x.size())
                print(noise.mean())
                return x + noise
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Localizer(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.bg_embeddings = nn.Parameter(
                        torch.empty(1, dim)
                    )
                    self.proj = nn.Linear(dim, dim)

                def forward(self, text_cls):
                    text_emb = torch.cat([text_cls, self.bg_embeddings], dim=0)
                    return self.proj(text_emb)
            """,
            line=9,
            message_contains="is a parameter of `torch.empty(...)` that nothing fills",
            fixed="""
            import torch
            import torch.nn as nn

            class Localizer(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.bg_embeddings = nn.Parameter(
                        torch.zeros(1, dim)
                    )
                    self.proj = nn.Linear(dim, dim)

                def forward(self, text_cls):
                    text_emb = torch.cat([text_cls, self.bg_embeddings], dim=0)
                    return self.proj(text_emb)
            """,
            note="an nn.Parameter nothing initialises (STALE's background embedding, issue 16)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class CRF(nn.Module):
                def __init__(self, num_tags: int) -> None:
                    super().__init__()
                    self.start_transitions = nn.Parameter(torch.Tensor(num_tags))

                def score(self, emissions, tags):
                    llh = self.start_transitions[tags[0]]
                    return llh + self.start_transitions.view(1, -1) + emissions[0]

                def _new(self):
                    return next(self.parameters()).new()
            """,
            line=8,
            message_contains="`self.start_transitions` is a parameter of `torch.Tensor(...)`",
            note="sized by a parameter annotated int, read through indexing and a view "
            "(pytorch-crf 0.4.0, issue 1)",
        ),
    )


_PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
# Methods that (re)initialise a module's parameters by convention.
_INIT_METHOD_NAMES = frozenset(
    {
        "reset_parameters",
        "_reset_parameters",
        "reset_params",
        "init_weights",
        "_init_weights",
        "init_params",
        "_init_params",
        "initialize",
        "initialize_weights",
        "_initialize_weights",
        "weights_init",
        "init_parameters",
    }
)
_GENERIC_FILLERS = frozenset({"apply", "load_state_dict"})
_PARAMETER_LISTS = frozenset({"parameters", "named_parameters"})
# Methods that return a view or reshaped copy: a read of the result reads the parameter.
_VIEWS = words(
    """
    view reshape unsqueeze squeeze t transpose permute expand expand_as flatten detach clone
    contiguous float double half cpu cuda to
    """
)


def _int_parameter(name: ast.Name) -> bool:
    """``name`` is a parameter of its function annotated ``int``, never rebound."""
    function = enclosing_function(name)
    if function is None:
        return False
    args = function.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name.id:
            annotation = arg.annotation
            if not (isinstance(annotation, ast.Name) and annotation.id == "int"):
                return False
            return not any(
                isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store)
                for n in ast.walk(function)
            )
    return False


def _fills_generically(tree: ast.Module) -> bool:
    """The file has something that may fill every parameter at once: an
    init method by convention, ``.apply(...)``, ``load_state_dict``, a loop
    over ``.parameters()`` (``next(self.parameters())`` or an optimizer given
    them fills nothing)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in _INIT_METHOD_NAMES:
                return True
        elif isinstance(node, (ast.For, ast.comprehension)):
            it = node.iter
            if (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Attribute)
                and it.func.attr in _PARAMETER_LISTS
            ):
                return True
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _GENERIC_FILLERS
        ):
            return True
    return False


_IDENTITY_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def _has_out(call: ast.Call) -> bool:
    return any(kw.arg == "out" for kw in call.keywords)
