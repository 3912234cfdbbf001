"""TT104 cuda-state-pickled-into-workers."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from torchtrap.core.payload import describe
from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.dataloaders import DataLoaderCall, Workers
from torchtrap.facts.datasets import located_phrase, self_name, self_stores
from torchtrap.facts.index import ancestors, enclosing_function, walk
from torchtrap.facts.remote import is_remote, with_location
from torchtrap.facts.workers import fork_only, is_cuda_expression
from torchtrap.findings import Applicability, Edit, Finding, Fix, Range, Severity
from torchtrap.fixes.edits import insert_before_statement
from torchtrap.fixes.no_workers import can_set_no_workers, no_workers_fix
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind
from torchtrap.values.datasets import Exposure, LoaderStatus, judge
from torchtrap.values.remote import remote_uses
from torchtrap.values.worker_payload import PayloadCulprit, payload_culprits
from torchtrap.values.workers import holds_no_weights, model_holding

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

MEASURED = (
    "under spawn/forkserver (Windows, macOS, Python >= 3.14) each worker gets a pickled copy; "
    "measured: a bound collate_fn of an object holding a 2-layer model sent its 4 parameters "
    "through reduce_tensor once per worker (8 calls, 2 workers) and moved the parent's weights "
    "into shared memory; CUDA tensors go through CUDA IPC"
)


@dataclass
class Carrier:
    """A DataLoader argument that drags a model into the workers."""

    node: ast.expr  # the finding's range
    argument: str  # "collate_fn"
    what: str  # "`Trainer` (an nn.Module)"
    method: FunctionNode | None = None  # the bound method, for the staticmethod fix


class CudaStatePickledIntoWorkers(Rule):
    """
    ## What it does
    Finds DataLoader arguments that carry a model into the workers:
    `collate_fn=self.method` / `worker_init_fn=self.method` bound to an
    object that is or holds an `nn.Module` (a LightningModule, a trainer
    whose `__init__` stores a model) or CUDA tensors; `functools.partial`
    given a model; and a Dataset that stores an `nn.Module` (not one that
    holds no parameters or buffers, like a `Sequential` of torchvision
    transforms or activations, nor a module class of the project whose
    methods register only constant buffers and no layer or Parameter, like
    a CPU feature extractor with a window and a mel filterbank) or an object
    of this file that holds one (or CUDA tensors). For a Dataset it also
    sees DataLoaders in other files of the project (the class in
    `datasets.py`, `DataLoader(..., num_workers=4)` in `train.py`): the
    finding names that line; when every DataLoader in the project that
    loads it has `num_workers=0` or pins `fork`, it stays silent.

    Severity: **warning** with a literal `num_workers > 0`, **info** when
    the worker count is only known at run time. Silent for staticmethods,
    classmethods, module-level functions, bound methods of objects that
    hold no tensors or modules (a tokenizer, a vocab) or whose contents we
    cannot see (`self.model = model` from a parameter), a callable stored in
    an attribute, `num_workers=0`, `multiprocessing_context="fork"` (or
    `set_start_method("fork")` in the DataLoader's file), and a Dataset no
    DataLoader visibly loads (one loaded through an import the project
    cannot resolve, a third-party or dynamic one, is unknown).
    Lambdas and closures are not flagged: under spawn they cannot be
    pickled at all (measured: `PicklingError` / "Can't pickle local
    object"), a different failure.

    `torchtrap run` walks `collate_fn`, `worker_init_fn` and the sampler
    when a DataLoader with workers starts and reports the CUDA tensors it
    reaches, on the line that stores them.

    ## Why is this bad?
    Under spawn and forkserver (Windows, macOS, and Linux from Python 3.14,
    whose default is forkserver) a DataLoader pickles its dataset,
    `collate_fn`, `worker_init_fn` and sampler into each worker. A bound
    method pickles its whole object, and every tensor that object reaches
    goes through `torch.multiprocessing`'s `reduce_tensor`: CPU storages are
    moved to shared memory in the parent, CUDA storages are shared through
    CUDA IPC, reported to leave them reading as zeros (pytorch #128497,
    #156618). Measured with torch 2.13 (CPU, spawn): a
    `collate_fn=trainer.collate` whose trainer holds a 2-layer model sent
    its 4 parameters through `reduce_tensor` once per worker (8 calls with 2
    workers), and the parent's weights became shared (`is_shared()` went
    from False to True); the same method on a tokenizer object sent none.
    A `functools.partial(collate, model=model)` shared the weights too.

    Fixes: make the method a `@staticmethod` (safe when its body does not
    use `self`; `self.method` keeps working and pickles by name), or
    `num_workers=0` (unsafe: loading is no longer parallel, so the program
    slows down, and a `worker_init_fn` never runs; `check --fix` never
    changes a worker count).

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self):
            self.model = torch.nn.Linear(8, 2).cuda()

        def collate(self, batch):
            return torch.stack(batch)

        def loader(self, data):
            return DataLoader(data, collate_fn=self.collate, num_workers=4)
    ```

    ## Use instead
    ```python
    class Trainer:
        ...

        @staticmethod
        def collate(batch):
            return torch.stack(batch)
    ```

    ## References
    - [PyTorch: multiprocessing best practices, CUDA in multiprocessing](https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    - [PyTorch: platform-specific behaviors of DataLoader workers](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors)
    - CUDA variables read as 0 after the DataLoader starts:
      [pytorch #128497](https://github.com/pytorch/pytorch/issues/128497)
    - TorchTrap probe experiment `pickle-reach`
    """

    code = "TT104"
    name = "cuda-state-pickled-into-workers"
    summary = "A DataLoader argument carries a model into every worker"
    default_severity = Severity.WARNING
    # "Dataset": a Dataset whose DataLoader is in another file.
    requires_text = ("DataLoader", "Dataset", "Trainer")

    def check(self) -> Iterable[Finding]:
        facts = self.ctx.facts
        loaders = [d for d in facts.dataloaders if d.may_have_workers and not fork_only(d, facts)]
        found: list[Finding] = []
        for loader in loaders:
            for argument in ("collate_fn", "worker_init_fn"):
                expr = loader.argument(argument)
                if expr is None:
                    continue
                carrier = self._bound_method(expr, argument) or self._partial(expr, argument)
                if carrier is not None:
                    found.append(self._finding(carrier, [loader]))
        found.extend(self._datasets())
        yield from found
        # What the file's own detection found at a DataLoader is not said twice.
        taken = {f.range.start.line for f in found}
        ctx = self.ctx
        for culprit in payload_culprits(ctx.project, ctx.path, ctx.text, ctx.tree, "model"):
            node = culprit.node
            if not taken.intersection(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                yield self._payload_finding(culprit)

    def _payload_finding(self, found: PayloadCulprit) -> Finding:
        """A model the whole program shows reaching this DataLoader's
        workers through a chain of objects (an owned object's model, a
        container, a bound method's owner, a helper in another file)."""
        certain = found.culprit.loader.workers.kind == "some"
        what = describe(found.culprit.hop.obj)
        message = found.message(f"every worker gets a copy of the model `{what}`")
        return self.finding(
            found.node,
            message,
            severity=Severity.WARNING if certain else Severity.INFO,
            related=found.related,
        )

    # -- detection -----------------------------------------------------------
    def _bound_method(self, expr: ast.expr, argument: str) -> Carrier | None:
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return None
        owner = expr.value
        info = self._instance_class(owner)
        if info is None:
            return None
        method = _method(info, expr.attr, self)
        if method is None or self_name(method) is None:
            return None  # a stored callable, a staticmethod or classmethod
        holding = model_holding(info, self.ctx.values)
        if holding is None:
            return None
        what = f"`{info.name}` ({holding})"
        return Carrier(expr, argument, what, method)

    def _instance_class(self, owner: ast.Name) -> ClassInfo | None:
        """The local class ``owner`` is an instance of: ``self`` in a method,
        or a name bound to ``LocalClass(...)``."""
        fn = enclosing_function(owner)
        if fn is not None and self_name(fn) == owner.id:
            cls = next((a for a in ancestors(fn) if isinstance(a, ast.ClassDef)), None)
            if cls is not None and _is_method_of(fn, cls):
                return self.ctx.facts.classes.get(cls.name)
            return None
        bound = self.ctx.values.loaders.bound_values(owner, owner)
        if not isinstance(bound, list) or not bound:
            return None
        classes = [
            self.ctx.facts.classes.class_of_call(v) if isinstance(v, ast.Call) else None
            for v, _ in bound
        ]
        first = classes[0]
        return first if all(c is first for c in classes) else None

    def _partial(self, expr: ast.expr, argument: str) -> Carrier | None:
        if not isinstance(expr, ast.Call) or not expr.args:
            return None
        if self.ctx.facts.qualname(expr.func) != "functools.partial":
            return None
        for arg in [*expr.args[1:], *(k.value for k in expr.keywords)]:
            if self.ctx.values.of(arg).holds(Kind.MODULE):
                text = self.ctx.source.segment(self.ctx.range(arg))
                return Carrier(expr, argument, f"the model `{text}`")
            if isinstance(arg, ast.Name):
                info = self._instance_class(arg)
                holding = model_holding(info, self.ctx.values) if info else None
                if info is not None and holding is not None:
                    return Carrier(expr, argument, f"`{info.name}` ({holding})")
        return None

    def _datasets(self) -> Iterable[Finding]:
        facts = self.ctx.facts
        datasets = self.ctx.values.datasets

        def status(loader: DataLoaderCall) -> LoaderStatus:
            # A DataLoader in another file: its arguments, its module's
            # set_start_method (the project is known once there is one).
            project = self.ctx.project if is_remote(loader) else None
            forked = fork_only(loader, facts, project)
            return LoaderStatus.IGNORED if forked else LoaderStatus.COUNTS

        for view in datasets.views():
            stored = [
                (attr, value, holding)
                for cls in facts.classes.lineage(view.info)
                for fn in cls.methods.values()
                for attr, _stmt, _target, value in self_stores(fn)
                if value is not None
                and not is_cuda_expression(value)  # TT103 reports the move to the GPU
                and (holding := self._stored_model(value, view.info)) is not None
            ]
            if not stored:
                continue
            # No DataLoader here gets it: only then ask the other files.
            remote = None if datasets.uses(view) else remote_uses(self.ctx, view.name)
            judgement = judge(datasets, view, status, remote)
            if judgement is None or judgement.exposure not in (Exposure.WORKERS, Exposure.MAYBE):
                continue
            attr, value, holding = stored[0]
            what = f"`{view.name}` (holds `self.{attr}`, {holding})"
            carrier = Carrier(value, "dataset", what)
            yield self._finding(carrier, judgement.loaders, stored=True)

    def _stored_model(self, value: ast.expr, owner: ClassInfo) -> str | None:
        """ "an nn.Module" for a module; for an instance of another class of
        this file that holds one, "a `Helper` that holds ..."."""
        if self.ctx.values.of(value).holds(Kind.MODULE):
            if holds_no_weights(value, self.ctx.values):
                return None  # `nn.Sequential(T.RandomCrop(32), ...)`, `LogMel()`: no weights
            return "an nn.Module"
        local = self.ctx.facts.classes.class_of_call(value)
        if local is None or local is owner:
            return None
        holding = model_holding(local, self.ctx.values)
        if holding is None:
            return None
        return f"a `{local.name}` with {'CUDA tensors' if 'CUDA' in holding else 'a model'}"

    # -- reporting -----------------------------------------------------------
    def _finding(
        self, carrier: Carrier, loaders: list[DataLoaderCall], stored: bool = False
    ) -> Finding:
        certain = any(lo.workers is Workers.SOME for lo in loaders)
        if stored:
            message = f"Dataset {carrier.what} is pickled into each worker under spawn/forkserver"
        else:
            message = (
                f"`{carrier.argument}` pickles {carrier.what} into each DataLoader worker "
                "under spawn/forkserver"
            )
        message = with_location(message, loaders)
        related = [self.ctx.related(lo.node, f"{located_phrase(lo)}: {MEASURED}") for lo in loaders]
        return self.finding(
            carrier.node,
            message,
            severity=Severity.WARNING if certain else Severity.INFO,
            fixes=self._fixes(carrier, loaders),
            related=related,
        )

    def _fixes(self, carrier: Carrier, loaders: list[DataLoaderCall]) -> list[Fix]:
        fixes: list[Fix] = []
        static = self._static_edits(carrier.method)
        if static is not None:
            name = carrier.method.name if carrier.method else ""
            fixes.append(
                Fix(
                    f"Make `{name}` a @staticmethod (it does not use `self`)",
                    Applicability.SAFE,
                    lambda: static,
                )
            )
        if all(can_set_no_workers(lo) and not is_remote(lo) for lo in loaders):
            fixes.append(no_workers_fix(self.ctx.source, loaders))
        return fixes

    def _static_edits(self, method: FunctionNode | None) -> list[Edit] | None:
        """``@staticmethod`` above the method and its ``self`` parameter
        removed, when the body never uses ``self`` (nor ``super()``)."""
        if method is None or method.decorator_list or not method.args.args:
            return None
        me = method.args.args[0].arg
        for node in walk(method):
            if isinstance(node, ast.Name) and node.id in (me, "super", "__class__"):
                return None
        source = self.ctx.source
        first = method.args.args[0]
        start = source.position(first.lineno, first.col_offset)
        end = source.position(first.end_lineno or first.lineno, first.end_col_offset or 0)
        # Remove "self, " up to the next parameter (or just "self").
        text = source.text
        offset = source.offset(end)
        rest = text[offset:]
        stripped = rest.lstrip(" ")
        if stripped.startswith(","):
            after = offset + (len(rest) - len(stripped)) + 1
            while after < len(text) and text[after] in " \t":
                after += 1
            if text[after : after + 1] in ("\n", "\r", ")"):
                return None  # a parameter list split over lines: not worth the risk
            end = source.position_at(after)
        return [
            insert_before_statement(source, method, "@staticmethod"),
            Edit(Range(start, end), ""),
        ]


def _is_method_of(fn: FunctionNode, cls: ast.ClassDef) -> bool:
    return any(stmt is fn for stmt in cls.body)


def _method(info: ClassInfo, name: str, rule: Rule) -> FunctionNode | None:
    for cls in rule.ctx.facts.classes.lineage(info):
        if name in cls.methods:
            return cls.methods[name]
    return None


# -- examples ----------------------------------------------------------------

_TRAINER = """\
import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(8, 2)

    def collate(self, batch):
        return torch.stack(batch)

    def loader(self, data):
        return DataLoader(data, collate_fn=self.collate, num_workers=4)
"""

_TRAINER_STATIC = _TRAINER.replace(
    "    def collate(self, batch):", "    @staticmethod\n    def collate(batch):"
)

_LIT = """\
import lightning as L
import torch
from torch.utils.data import DataLoader


class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)

    def collate(self, batch):
        return torch.stack(batch) * self.scale

    def train_dataloader(self):
        return DataLoader(range(8), collate_fn=self.collate, num_workers=self.hparams.workers)
"""

_TOKENIZER = """\
import torch
from torch.utils.data import DataLoader


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    def collate(self, batch):
        return torch.tensor([self.vocab[w] for w in batch])


tok = Tokenizer({"a": 1})
loader = DataLoader(["a"], collate_fn=tok.collate, num_workers=2)
"""

CudaStatePickledIntoWorkers.valid = (
    Valid(_TRAINER_STATIC, note="a staticmethod"),
    Valid(_TRAINER.replace("num_workers=4", "num_workers=0"), note="num_workers=0"),
    Valid(
        _TRAINER.replace("num_workers=4", 'num_workers=4, multiprocessing_context="fork"'),
        note="fork: nothing is pickled",
    ),
    Valid(_TOKENIZER, note="a bound method of an object that holds no tensors or modules"),
    Valid(
        _TRAINER.replace("self.model = torch.nn.Linear(8, 2)", "self.model = model").replace(
            "def __init__(self):", "def __init__(self, model):"
        ),
        note="a model from a parameter: unknown",
    ),
    Valid(
        """\
        import torch
        from torch.utils.data import DataLoader


        def collate(batch):
            return torch.stack(batch)


        class Trainer:
            def __init__(self):
                self.model = torch.nn.Linear(8, 2)

            def loader(self, data):
                return DataLoader(data, collate_fn=collate, num_workers=4)
        """,
        note="a module-level function",
    ),
    Valid(
        _TRAINER.replace(
            "        self.model = torch.nn.Linear(8, 2)\n",
            "        self.model = torch.nn.Linear(8, 2)\n"
            "        self.collate_fn = make_collate()\n",
        ).replace("collate_fn=self.collate,", "collate_fn=self.collate_fn,"),
        note="a callable stored in an attribute is pickled alone",
    ),
    Valid(
        """\
        import torch
        from torch.utils.data import DataLoader

        model = torch.nn.Linear(2, 2)
        loader = DataLoader(range(4), collate_fn=lambda b: model(torch.tensor(b)), num_workers=2)
        """,
        note="a lambda cannot be pickled under spawn at all (a different failure)",
    ),
)

CudaStatePickledIntoWorkers.valid += (
    Valid(
        """\
        from torch.utils.data import DataLoader, Dataset


        class Vocab:
            def __init__(self):
                self.ids = {"a": 1}


        class Texts(Dataset):
            def __init__(self, items):
                self.items = items
                self.vocab = Vocab()

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.vocab.ids[self.items[index]]


        loader = DataLoader(Texts(["a"]), num_workers=2)
        """,
        note="a Dataset that stores an object holding no tensors or modules",
    ),
    Valid(
        """\
        import torch
        import torch.nn as nn
        import torchvision.transforms as T
        from torch.utils.data import DataLoader, Dataset


        class Images(Dataset):
            def __init__(self, items):
                self.items = items
                self.augment = nn.Sequential(T.RandomCrop(24), T.ColorJitter(0.2), nn.ReLU())

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.augment(self.items[index])


        loader = DataLoader(Images(torch.randn(8, 3, 32, 32)), num_workers=2)
        """,
        note="a stored module that holds no parameters or buffers (image transforms)",
    ),
)

CudaStatePickledIntoWorkers.invalid = (
    Invalid(
        _TRAINER,
        line=13,
        severity=Severity.WARNING,
        message_contains=(
            "`collate_fn` pickles `Trainer` (holds `self.model`, an nn.Module) into each "
            "DataLoader worker under spawn/forkserver"
        ),
        fix_title="staticmethod",
        fixed=_TRAINER_STATIC,
    ),
    Invalid(
        _TRAINER,
        fix_title="num_workers=0",
        fixed=_TRAINER.replace("num_workers=4", "num_workers=0"),
    ),
    Invalid(
        _LIT,
        line=15,
        severity=Severity.INFO,
        message_contains="pickles `Lit` (an nn.Module)",
        note="a LightningModule's own method; uses self: no staticmethod fix",
    ),
    Invalid(
        """\
        import functools

        import torch
        from torch.utils.data import DataLoader


        def collate(batch, model):
            return model(torch.stack(batch))


        model = torch.nn.Linear(8, 2).cuda()
        loader = DataLoader(
            range(8), collate_fn=functools.partial(collate, model=model), num_workers=2
        )
        """,
        line=13,
        message_contains="pickles the model `model`",
        note="functools.partial given a model",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Scored(Dataset):
            def __init__(self, items):
                self.items = items
                self.scorer = torch.nn.Linear(4, 1)

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.scorer(self.items[index])


        loader = DataLoader(Scored(torch.randn(8, 4)), num_workers=2)
        """,
        line=8,
        message_contains="Dataset `Scored` (holds `self.scorer`, an nn.Module) is pickled",
        note="a Dataset that stores a module",
    ),
    Invalid(
        """\
        import torch
        import torchvision.transforms as T
        from torch.utils.data import DataLoader, Dataset


        class Images(Dataset):
            def __init__(self, items):
                self.items = items
                self.augment = torch.nn.Sequential(T.RandomCrop(24), torch.nn.Conv2d(3, 3, 1))

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.augment(self.items[index])


        loader = DataLoader(Images(torch.randn(8, 3, 32, 32)), num_workers=2)
        """,
        line=9,
        note="transforms with a layer that has weights: the weights are pickled",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Scorer:
            def __init__(self):
                self.net = torch.nn.Linear(4, 1).cuda()


        class Scored(Dataset):
            def __init__(self, items):
                self.items = items
                self.scorer = Scorer()

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.items[index]


        loader = DataLoader(Scored(torch.randn(8, 4)), num_workers=2)
        """,
        line=13,
        message_contains="(holds `self.scorer`, a `Scorer` with a model) is pickled",
        note="a Dataset that stores an object holding a CUDA model",
    ),
)

# Issue 34: a feature extractor that holds only constant buffers.
CudaStatePickledIntoWorkers.valid += (
    Valid(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, Dataset

        class LogMel(nn.Module):
            def __init__(self, n_fft: int = 400, n_mels: int = 80):
                super().__init__()
                self.n_fft = n_fft
                self.register_buffer("window", torch.hann_window(n_fft))
                self.register_buffer("fbank", torch.rand(n_mels, n_fft // 2 + 1))

            def forward(self, wav):
                spec = torch.stft(wav, self.n_fft, window=self.window, return_complex=True)
                return (self.fbank @ spec.abs() ** 2).clamp(min=1e-10).log()

        class Speech(Dataset):
            def __init__(self, waves):
                self.waves = waves
                self.features = LogMel()

            def __len__(self):
                return len(self.waves)

            def __getitem__(self, i):
                return self.features(self.waves[i])

        loader = DataLoader(Speech([]), batch_size=2, num_workers=4)
        """,
        note="issue 34: a CPU feature extractor with constant buffers only, owned by the dataset",
    ),
)
CudaStatePickledIntoWorkers.invalid += (
    Invalid(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, Dataset

        class LogMel(nn.Module):
            def __init__(self, n_fft: int = 400, n_mels: int = 80):
                super().__init__()
                self.register_buffer("window", torch.hann_window(n_fft))
                self.proj = nn.Linear(n_fft // 2 + 1, n_mels)

            def forward(self, wav):
                spec = torch.stft(wav, 400, window=self.window, return_complex=True)
                return self.proj(spec.abs().T)

        class Speech(Dataset):
            def __init__(self, waves):
                self.waves = waves
                self.features = LogMel()

            def __len__(self):
                return len(self.waves)

            def __getitem__(self, i):
                return self.features(self.waves[i])

        loader = DataLoader(Speech([]), batch_size=2, num_workers=4)
        """,
        line=19,
        note="near miss of the feature extractor: a learned projection (weights)",
    ),
)
