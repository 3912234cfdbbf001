"""TT211: a per-sample count divided by ``len(loader)``, the number of batches."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from torchtrap.facts.dataloaders import DataLoaderCall
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import ancestors, enclosing_scope, parent, walk, walk_scope
from torchtrap.findings import Applicability, Finding, Fix, RelatedLocation
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.loaders import LoaderEvidence, Loaders

# Wrappers that keep a count a count: `correct.item()`, `float(correct)`.
_CONVERSIONS = frozenset({"item", "float", "double", "long", "int", "cpu", "numpy", "detach"})
_CONVERSION_FUNCTIONS = frozenset({"float", "int"})
# Tensor-to-tensor steps between a comparison and its sum: `(p == y).float().sum()`.
_PASS_THROUGH = _CONVERSIONS | {"type", "squeeze", "view", "reshape", "to", "flatten", "bool"}
_COMPARISON_METHODS = frozenset({"eq", "ne", "lt", "gt", "le", "ge"})
_SUM_FUNCTIONS = frozenset({"torch.sum", "numpy.sum", "torch.count_nonzero", "numpy.count_nonzero"})
_MAX_DEPTH = 4

Matcher = Callable[[ast.AST], bool]  # is this node the accumulator?


class LenLoaderAsSampleCount(Rule):
    """Flags a per-sample count or sum divided by `len(loader)`, which counts batches.

    ## What it does
    Flags `n / len(loader)` (also `n /= len(loader)`) where `loader` is a
    `DataLoader` and `n` adds up a per-sample quantity over a loop: a count of
    correct predictions (`correct += (pred == y).sum().item()`,
    `pred.eq(y).sum()`, `torch.sum(pred == y)`), a loss summed over the samples
    (`reduction="sum"`, `size_average=False`), or a batch mean times the batch
    size (`loss.item() * x.size(0)`). The DataLoader is one created in the same
    file, a name, attribute, dict or list item (`dataloaders[phase]`) or
    parameter bound to one there (see TT208), or any iterable whose loop takes
    its items' batch size as a count (`seen += x.size(0)`, `x.shape[0]`,
    `len(x)`): its items are batches, so `len()` counts batches whatever it is
    (no fix then: `.dataset` may not exist).

    Silent when every visible DataLoader has `batch_size=1` (the default) or
    `batch_size=None` (no batching): then `len(loader) == len(loader.dataset)`
    (10 samples: 10 for both, measured).
    Silent for averages of per-batch values (`total_loss += loss.item()` with a
    mean-reduced loss, then `total_loss / len(loader)` is correct), for
    `len(loader)` used as a step count (`batch_idx / len(loader)`,
    `epochs * len(loader)`), for `len(loader.dataset)`, and when the numerator
    is anything else or its accumulation is not visible.

    ## Why is this bad?
    `len(loader)` is the number of batches, `ceil(len(dataset) / batch_size)`
    (`floor` with `drop_last=True`): measured with torch 2.13, 10 samples at
    `batch_size=4` give `len(loader) == 3`. A count of correct samples divided
    by it is inflated by about the batch size: the runnable example
    (`examples/tt211_len_loader_accuracy.py`) reports an "accuracy" of 1600%
    for a model whose true accuracy is 50%.

    Fix: `len(loader.dataset)`, the number of samples. It is safe when the
    DataLoader call is visible with no `sampler`, `batch_sampler`, `drop_last`
    or `**kwargs`. With a `sampler` (and none of the others) the fix divides
    by `len(loader.sampler)`, the samples the loader draws, also safe: a
    `DistributedSampler` gives each replica its share (10 samples, 2
    replicas: `len(loader.sampler) == 5`, `len(loader.dataset) == 10`), a
    `SubsetRandomSampler` of 6 of 10 samples gives `len(loader.sampler) ==
    6` (measured, torch 2.13). Unsafe with `drop_last`, which skips the
    last partial batch, or a `batch_sampler` or `**kwargs`, which may load
    fewer samples.

    ## Example
    ```python
    correct = 0
    for data, target in test_loader:
        pred = model(data).argmax(dim=1)
        correct += (pred == target).sum().item()
    print(f"accuracy: {100.0 * correct / len(test_loader):.1f}%")
    ```

    ## Use instead
    ```python
    correct = 0
    for data, target in test_loader:
        pred = model(data).argmax(dim=1)
        correct += (pred == target).sum().item()
    print(f"accuracy: {100.0 * correct / len(test_loader.dataset):.1f}%")
    ```

    ## References
    - https://discuss.pytorch.org/t/about-the-relation-between-batch-size-and-length-of-data-loader/10510
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
    """

    code = "TT211"
    name = "len-loader-as-sample-count"
    summary = "a per-sample count divided by `len(loader)`, the number of batches"
    requires_text = ("len(",)

    def check(self) -> Iterable[Finding]:
        loaders: Loaders | None = None
        for call in self.ctx.facts.index.of(ast.Call):
            if not (
                isinstance(call.func, ast.Name)
                and call.func.id == "len"
                and len(call.args) == 1
                and not call.keywords
            ):
                continue
            division = _division_by(call)
            if division is None:
                continue
            numerator, node = division
            if loaders is None:
                loaders = self.ctx.values.loaders
            terms = self._accumulated(numerator, node)
            if terms is None:
                continue
            evidence = loaders.dataloader(call.args[0], call)
            if evidence is None and _yields_batches(call.args[0], terms):
                # The loop counts its items with `x.size(0)`: whatever the
                # iterable is, its items are batches and len() counts them.
                evidence = LoaderEvidence(())
            if evidence is None or (
                evidence.calls and not any(_batches(d) for d in evidence.calls)
            ):
                continue
            yield self._finding(call, numerator, terms, evidence)

    # -- the numerator ------------------------------------------------------------
    def _accumulated(self, numerator: ast.expr, at: ast.AST) -> list[ast.AST] | None:
        """The ``+=`` statements that build the numerator when each adds a
        per-sample quantity inside a loop; None otherwise."""
        core = _core(numerator)
        if isinstance(core, ast.Name):
            scope = enclosing_scope(at)
            statements = list(walk_scope(scope))
            target_of = _name_target(core.id)
        elif (
            isinstance(core, ast.Attribute)
            and isinstance(core.value, ast.Name)
            and core.value.id == "self"
        ):
            cls = next((a for a in ancestors(at) if isinstance(a, ast.ClassDef)), None)
            if cls is None:
                return None
            statements = list(walk(cls))
            target_of = _self_target(core.attr)
        else:
            return None
        terms: list[ast.AST] = []
        for node in statements:
            if node is at:
                continue  # `correct /= len(loader)` itself
            if isinstance(node, ast.AugAssign) and target_of(node.target):
                if not isinstance(node.op, ast.Add) or not _in_loop(node):
                    return None
                if not self._per_sample(node.value, node, 0):
                    return None
                terms.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_unpacks(t, target_of) for t in targets):
                    return None
                if not any(target_of(t) for t in targets) or node.value is None:
                    continue
                value = node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
                    continue  # the start value
                if _is_conversion_of(value, target_of):
                    continue  # correct = correct.item()
                if (
                    isinstance(value, ast.BinOp)
                    and isinstance(value.op, ast.Add)
                    and target_of(value.left)
                    and _in_loop(node)
                    and self._per_sample(value.right, node, 0)
                ):
                    terms.append(node)
                    continue
                return None
            elif (
                isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
                and _binds(node.target, target_of)
                or isinstance(node, ast.arg)
                and isinstance(core, ast.Name)
                and node.arg == core.id
            ):
                return None
        return terms or None

    def _per_sample(self, value: ast.expr, at: ast.AST, depth: int) -> bool:
        """A count of matching samples, a sum-reduced loss, or a batch mean
        times the batch size."""
        if depth > _MAX_DEPTH:
            return False
        value = _strip(value, _CONVERSIONS)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
            return _batch_size(value.left) or _batch_size(value.right)
        if isinstance(value, ast.Name):
            values = self.ctx.values.sources(value, at)
            return bool(values) and all(
                self._per_sample(v, where, depth + 1) for v, where in values or ()
            )
        if not isinstance(value, ast.Call):
            return False
        if _sum_reduced(value) or self._sum_reducing_callee(value, at):
            return True
        func = value.func
        imports = self.ctx.facts.imports
        if imports.qualname(func) in _SUM_FUNCTIONS:
            return (
                len(value.args) == 1 and not value.keywords and _comparison(value.args[0], imports)
            )
        if isinstance(func, ast.Attribute) and func.attr in ("sum", "count_nonzero"):
            return not value.args and not value.keywords and _comparison(func.value, imports)
        return False

    def _sum_reducing_callee(self, call: ast.Call, at: ast.AST) -> bool:
        """``criterion(out, y)`` where ``criterion = nn.X(reduction="sum")``."""
        if not isinstance(call.func, (ast.Name, ast.Attribute)):
            return False
        values = self.ctx.values.sources(call.func, at)
        return bool(values) and all(
            isinstance(v, ast.Call) and _sum_reduced(v) for v, _ in values or ()
        )

    # -- the finding --------------------------------------------------------------------
    def _finding(
        self, call: ast.Call, numerator: ast.expr, terms: list[ast.AST], evidence: LoaderEvidence
    ) -> Finding:
        loader = call.args[0]
        source = self.ctx.source
        text = source.segment(self.ctx.range(loader))
        shown = text if "\n" not in text else "loader"
        core = source.segment(self.ctx.range(_core(numerator)))
        core = core if "\n" not in core else "it"
        unknown = [
            d
            for d in evidence.calls
            if d.has_splat
            or d.argument("batch_sampler") is not None
            or _truthy(d.argument("drop_last"))
        ]
        # With a sampler (a DistributedSampler's replica, a subset) the loader
        # draws len(loader.sampler) samples, not len(loader.dataset): measured
        # 5 of 10 for replica 0 of 2, 6 of 10 for SubsetRandomSampler(range(6)).
        # (DataLoader refuses a sampler with a batch_sampler.)
        sampled = any(d.argument("sampler") is not None for d in evidence.calls)
        attr = "sampler" if sampled else "dataset"
        partial = bool(unknown)
        safe = bool(evidence.calls) and not partial
        message = _message(shown, core, attr, partial)
        batches_only = not evidence.calls and not evidence.annotated
        if len(message) > 120:
            message = _message("loader", "it", attr, partial)
        end = source.node_range(loader).end
        title = f"Divide by `len({shown}.{attr})`"
        if not safe and sampled:
            title += " (unsafe: drop_last may skip the last partial batch)"
        elif not safe:
            title += " (unsafe: a sampler or drop_last may load fewer samples)"
        fix = Fix(
            title,
            Applicability.SAFE if safe else Applicability.UNSAFE,
            build=lambda: [edits.insert_at(end, f".{attr}")],
        )
        fixes = [] if batches_only else [fix]  # `.dataset` only exists on a DataLoader
        related: list[RelatedLocation] = [
            self.ctx.related(term, f"`{core}` adds a per-sample quantity here")
            for term in terms[:2]
        ]
        related += [
            self.ctx.related(d.node, "the DataLoader: len() of it is the number of batches")
            for d in evidence.calls[:2]
        ]
        return self.finding(call, message, fixes=fixes, related=related)

    valid = (
        Valid(
            """
            import torch
            from torch.utils.data import DataLoader

            def train(model, dataset, criterion):
                loader = DataLoader(dataset, batch_size=32)
                total_loss = 0.0
                for x, y in loader:
                    loss = criterion(model(x), y)
                    total_loss += loss.item()
                return total_loss / len(loader)
            """,
            note="an average of per-batch mean losses: correct",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def train(model, dataset, epochs):
                loader = DataLoader(dataset, batch_size=32)
                total_steps = epochs * len(loader)
                for batch_idx, (x, y) in enumerate(loader):
                    progress = 100.0 * batch_idx / len(loader)
                    print(f"{progress:.0f}% of {total_steps}")
            """,
            note="len(loader) as a step count",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def test(model, dataset):
                test_loader = DataLoader(dataset, batch_size=32)
                correct = 0
                for data, target in test_loader:
                    pred = model(data).argmax(dim=1)
                    correct += (pred == target).sum().item()
                return 100.0 * correct / len(test_loader.dataset)
            """,
            note="len(loader.dataset): the number of samples",
        ),
        Valid(
            """
            def test(model, loader):
                correct = 0
                for data, target in loader:
                    correct += (model(data).argmax(1) == target).sum().item()
                return correct / len(loader)
            """,
            note="unknown loader: may be a list of samples",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def evaluate(model, dataset, metric):
                loader = DataLoader(dataset, batch_size=8)
                correct = 0
                psnr = 0.0
                for data, target in loader:
                    correct += metric(model(data), target)
                    psnr += (model(data) - target).pow(2).mean().item()
                return correct / len(loader), psnr / len(loader)
            """,
            note="per-batch values of unknown kind, per-batch means",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def evaluate(model, dataset):
                loader = DataLoader(dataset, batch_size=8)
                correct = (model(dataset.x).argmax(1) == dataset.y).sum().item()
                return correct / len(loader)
            """,
            note="not accumulated in a loop",
        ),
        Valid(
            """
            from torch.utils.data import DataLoader

            def test(model, dataset):
                per_sample = DataLoader(dataset)
                unbatched = DataLoader(dataset, batch_size=None)
                correct = 0
                for data, target in per_sample:
                    correct += (model(data).argmax(1) == target).sum().item()
                return correct / len(per_sample), correct / len(unbatched)
            """,
            note="batch_size 1 (the default) or None: len(loader) counts samples",
        ),
        Valid(
            """
            def evaluate(model, samples):
                correct = 0
                for x, y in samples:
                    correct += (model(x).argmax() == y).sum().item()
                    print(x.size(0))
                return correct / len(samples)
            """,
            note="an unknown iterable whose item size is not taken as a count",
        ),
    )
    invalid = (
        Invalid(
            """
            def evaluate(model, batches):
                correct = 0
                seen = 0
                for x, y in batches:
                    correct += (model(x).argmax(1) == y).sum().item()
                    seen += x.size(0)
                return correct / len(batches)
            """,
            line=8,
            message_contains="counts batches, not samples",
            note="whatever `batches` is, its items have a batch size: len() counts batches",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def test(model, dataset):
                test_loader = DataLoader(dataset, batch_size=32)
                correct = 0
                with torch.no_grad():
                    for data, target in test_loader:
                        pred = model(data).argmax(dim=1)
                        correct += (pred == target).sum().item()
                print(f"accuracy: {100.0 * correct / len(test_loader):.1f}%")
            """,
            line=12,
            message_contains="`len(test_loader)` counts batches",
            fix_title="Divide by",
            fixed="""
            import torch
            from torch.utils.data import DataLoader

            def test(model, dataset):
                test_loader = DataLoader(dataset, batch_size=32)
                correct = 0
                with torch.no_grad():
                    for data, target in test_loader:
                        pred = model(data).argmax(dim=1)
                        correct += (pred == target).sum().item()
                print(f"accuracy: {100.0 * correct / len(test_loader.dataset):.1f}%")
            """,
            note="counting correct samples over batches",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.utils.data import DataLoader

            def evaluate(model, loader):
                test_loss = 0
                correct = 0
                for data, target in loader:
                    output = model(data)
                    test_loss += F.nll_loss(output, target, reduction="sum").item()
                    pred = output.argmax(dim=1, keepdim=True)
                    correct += pred.eq(target.view_as(pred)).sum().item()
                test_loss /= len(loader)
                return test_loss, correct / len(loader)

            evaluate(None, DataLoader(range(10), batch_size=4, sampler=range(6)))
            """,
            line=14,
            message_contains="use `len(loader.sampler)`",
            note="a parameter bound by the file's call; a sampler: divide by its length",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader, DistributedSampler

            def test(model, dataset):
                sampler = DistributedSampler(dataset, shuffle=False)
                loader = DataLoader(dataset, batch_size=32, sampler=sampler)
                correct = 0
                with torch.no_grad():
                    for data, target in loader:
                        correct += (model(data).argmax(1) == target).sum().item()
                return correct / len(loader)
            """,
            line=12,
            fix_title="Divide by `len(loader.sampler)`",
            fixed="""
            import torch
            from torch.utils.data import DataLoader, DistributedSampler

            def test(model, dataset):
                sampler = DistributedSampler(dataset, shuffle=False)
                loader = DataLoader(dataset, batch_size=32, sampler=sampler)
                correct = 0
                with torch.no_grad():
                    for data, target in loader:
                        correct += (model(data).argmax(1) == target).sum().item()
                return correct / len(loader.sampler)
            """,
            note="a DistributedSampler: each replica sees len(loader.sampler) samples",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader, DistributedSampler

            def test(model, dataset):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=32, sampler=sampler, drop_last=True)
                correct = 0
                for data, target in loader:
                    correct += (model(data).argmax(1) == target).sum().item()
                return correct / len(loader)
            """,
            line=11,
            message_contains="use `len(loader.sampler)` (mind drop_last)",
            note="a sampler and drop_last: the fix is unsafe",
        ),
        Invalid(
            """
            import torch.nn as nn
            from torch.utils.data import DataLoader

            class Evaluator:
                def __init__(self, dataset):
                    self.loader = DataLoader(dataset, batch_size=16)
                    self.criterion = nn.CrossEntropyLoss(reduction="sum")

                def run(self, model):
                    running = 0.0
                    for x, y in self.loader:
                        running += self.criterion(model(x), y).item()
                    return running / len(self.loader)
            """,
            fixed="""
            import torch.nn as nn
            from torch.utils.data import DataLoader

            class Evaluator:
                def __init__(self, dataset):
                    self.loader = DataLoader(dataset, batch_size=16)
                    self.criterion = nn.CrossEntropyLoss(reduction="sum")

                def run(self, model):
                    running = 0.0
                    for x, y in self.loader:
                        running += self.criterion(model(x), y).item()
                    return running / len(self.loader.dataset)
            """,
            note="an attribute loader, a sum-reduced criterion",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def train(model, dataset, criterion):
                loader = DataLoader(dataset, batch_size=32)
                epoch_loss = 0.0
                for inputs, labels in loader:
                    loss = criterion(model(inputs), labels)
                    epoch_loss += loss.item() * inputs.size(0)
                return epoch_loss / len(loader)
            """,
            fixed="""
            import torch
            from torch.utils.data import DataLoader

            def train(model, dataset, criterion):
                loader = DataLoader(dataset, batch_size=32)
                epoch_loss = 0.0
                for inputs, labels in loader:
                    loss = criterion(model(inputs), labels)
                    epoch_loss += loss.item() * inputs.size(0)
                return epoch_loss / len(loader.dataset)
            """,
            note="a batch mean times the batch size",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def accuracy(model, loader: DataLoader):
                hits = 0
                for x, y in loader:
                    batch_hits = torch.sum(model(x).argmax(1) == y)
                    hits = hits + batch_hits
                return float(hits) / len(loader)
            """,
            note="an annotated parameter (fix unsafe), torch.sum, hits = hits + ...",
        ),
        Invalid(
            """
            import torch
            from torch.utils.data import DataLoader

            def train_model(model, image_datasets):
                dataloaders = {
                    x: DataLoader(image_datasets[x], batch_size=4, shuffle=True)
                    for x in ["train", "val"]
                }
                for phase in ["train", "val"]:
                    running_corrects = 0
                    for inputs, labels in dataloaders[phase]:
                        _, preds = torch.max(model(inputs), 1)
                        running_corrects += torch.sum(preds == labels.data)
                    epoch_acc = running_corrects.double() / len(dataloaders[phase])
            """,
            fixed="""
            import torch
            from torch.utils.data import DataLoader

            def train_model(model, image_datasets):
                dataloaders = {
                    x: DataLoader(image_datasets[x], batch_size=4, shuffle=True)
                    for x in ["train", "val"]
                }
                for phase in ["train", "val"]:
                    running_corrects = 0
                    for inputs, labels in dataloaders[phase]:
                        _, preds = torch.max(model(inputs), 1)
                        running_corrects += torch.sum(preds == labels.data)
                    epoch_acc = running_corrects.double() / len(dataloaders[phase].dataset)
            """,
            note="the transfer-learning tutorial's loop with len(dataloaders[phase])",
        ),
    )


def _batches(loader: DataLoaderCall) -> bool:
    """May this DataLoader put more than one sample in a batch? Not with
    the default ``batch_size=1`` or ``batch_size=None`` (no batching): then
    ``len(loader) == len(dataset)``."""
    if loader.has_splat or loader.argument("batch_sampler") is not None:
        return True
    size = loader.arguments.get("batch_size")
    if size is None:
        return False
    return not (isinstance(size, ast.Constant) and size.value in (None, 1))


def _message(loader: str, core: str, attr: str, partial: bool) -> str:
    message = f"`len({loader})` counts batches, not samples: `{core}` is a per-sample sum; "
    if partial:
        mind = "drop_last" if attr == "sampler" else "the sampler"
        return message + f"use `len({loader}.{attr})` (mind {mind})"
    return message + f"use `len({loader}.{attr})`"


def _division_by(call: ast.Call) -> tuple[ast.expr, ast.AST] | None:
    """(numerator, division node) when ``call`` is the divisor."""
    node: ast.AST = call
    up = parent(node)
    while isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "float":
        node, up = up, parent(up)
    if isinstance(up, ast.BinOp) and isinstance(up.op, ast.Div) and up.right is node:
        return up.left, up
    if isinstance(up, ast.AugAssign) and isinstance(up.op, ast.Div) and up.value is node:
        return up.target, up
    return None


def _strip(value: ast.expr, methods: frozenset[str]) -> ast.expr:
    """``x.item()`` / ``float(x)`` / ``x.float()`` → ``x``."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in methods:
            value = func.value
        elif (
            isinstance(func, ast.Name) and func.id in _CONVERSION_FUNCTIONS and len(value.args) == 1
        ):
            value = value.args[0]
        else:
            break
    return value


def _core(numerator: ast.expr) -> ast.expr:
    """``100.0 * correct.item()`` → ``correct``."""
    value = _strip(numerator, _CONVERSIONS)
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        if isinstance(value.left, ast.Constant):
            value = _strip(value.right, _CONVERSIONS)
        elif isinstance(value.right, ast.Constant):
            value = _strip(value.left, _CONVERSIONS)
        else:
            break
    return value


def _comparison(value: ast.expr, imports: ImportTable) -> bool:
    """``pred == y``, ``pred.eq(y)``, ``torch.eq(pred, y)``, through
    ``.float()``/``.view(...)``/``.squeeze()``."""
    value = _strip(value, _PASS_THROUGH)
    if isinstance(value, ast.Compare):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _COMPARISON_METHODS:
            if imports.qualname(func) == f"torch.{func.attr}":
                return len(value.args) == 2  # torch.eq(pred, y)
            return len(value.args) == 1  # pred.eq(y)
    return False


def _batch_size(value: ast.expr) -> bool:
    """``x.size(0)``, ``x.shape[0]``, ``x.size()[0]``, ``len(x)``."""
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "size":
            return len(value.args) == 1 and _is_zero(value.args[0])
        return isinstance(func, ast.Name) and func.id == "len" and len(value.args) == 1
    if isinstance(value, ast.Subscript) and _is_zero(value.slice):
        base = value.value
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            return True
        return (
            isinstance(base, ast.Call)
            and isinstance(base.func, ast.Attribute)
            and base.func.attr == "size"
            and not base.args
        )
    return False


def _yields_batches(iterable: ast.expr, terms: list[ast.AST]) -> bool:
    """A loop over ``iterable`` (also through ``enumerate``/``tqdm``) around
    an accumulation, whose body takes the batch size of one of its items
    (``x.size(0)``, ``x.shape[0]``, ``len(x)``) as a count."""
    wanted = dotted_name(iterable)  # (not ast.dump: its recursive closure is cyclic garbage)
    if wanted is None:
        return False
    for term in terms:
        for loop in ancestors(term):
            if isinstance(loop, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                break
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            source = loop.iter
            while (
                isinstance(source, ast.Call)
                and isinstance(source.func, ast.Name)
                and source.func.id in ("enumerate", "tqdm", "iter")
                and source.args
            ):
                source = source.args[0]
            if dotted_name(source) != wanted:
                continue
            items = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
            for stmt in loop.body:
                for node in walk(stmt):
                    # A count: `total += x.size(0)`, `loss.item() * x.size(0)`.
                    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                        counted = [_strip(node.value, _CONVERSIONS)]
                    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                        counted = [node.left, node.right]
                    else:
                        continue
                    for value in counted:
                        base = _sized(value) if _batch_size(value) else None
                        if isinstance(base, ast.Name) and base.id in items:
                            return True
    return False


def _sized(node: ast.expr) -> ast.expr | None:
    """``x`` of ``x.size(0)``, ``x.shape[0]``, ``x.size()[0]``, ``len(x)``."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return node.func.value
        return node.args[0] if node.args else None
    if isinstance(node, ast.Subscript):
        base = node.value
        if isinstance(base, ast.Attribute):
            return base.value
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
            return base.func.value
    return None


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def _sum_reduced(call: ast.Call) -> bool:
    """``F.nll_loss(..., reduction="sum")`` / the legacy ``size_average=False``."""
    for kw in call.keywords:
        if kw.arg == "reduction" and isinstance(kw.value, ast.Constant) and kw.value.value == "sum":
            return True
        if (
            kw.arg == "size_average"
            and isinstance(kw.value, ast.Constant)
            and kw.value.value is False
        ):
            return True
    return False


def _truthy(value: ast.expr | None) -> bool:
    """drop_last: anything but a literal False counts as maybe True."""
    if value is None:
        return False
    return not (isinstance(value, ast.Constant) and not value.value)


def _in_loop(node: ast.AST) -> bool:
    for anc in ancestors(node):
        if isinstance(anc, (ast.For, ast.AsyncFor, ast.While)):
            return True
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
    return False


def _name_target(name: str) -> Matcher:
    def matches(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    return matches


def _self_target(attr: str) -> Matcher:
    def matches(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        )

    return matches


def _unpacks(target: ast.AST, matches: Matcher) -> bool:
    return isinstance(target, (ast.Tuple, ast.List)) and any(
        matches(e) or _unpacks(e, matches) for e in target.elts
    )


def _binds(target: ast.AST, matches: Matcher) -> bool:
    return bool(matches(target) or _unpacks(target, matches))


def _is_conversion_of(value: ast.expr, matches: Matcher) -> bool:
    stripped = _strip(value, _CONVERSIONS)
    return stripped is not value and bool(matches(stripped))
