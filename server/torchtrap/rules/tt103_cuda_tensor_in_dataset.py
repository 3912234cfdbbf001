"""TT103 cuda-tensor-in-dataset."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torchtrap.facts.dataloaders import Workers
from torchtrap.facts.datasets import DatasetView, chain_root, self_name, self_stores
from torchtrap.facts.devices import Cuda
from torchtrap.facts.index import enclosing_statement, parent, walk
from torchtrap.facts.remote import MESSAGE_LIMIT, is_remote, with_location
from torchtrap.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Range,
    Severity,
    unsafe_title,
)
from torchtrap.fixes.edits import replace
from torchtrap.fixes.no_workers import can_set_no_workers, no_workers_fix
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.datasets import Exposure, Judgement, judge, related_message
from torchtrap.values.remote import remote_uses
from torchtrap.values.worker_payload import PayloadCulprit, cuda_here, payload_culprits

# Calls that bring a CUDA tensor back to the host (the chain ends on the CPU).
BACK_TO_CPU = frozenset({"cpu", "numpy", "item", "tolist"})
NEW_FACTORIES = frozenset({"new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"})
# torch callables whose device= is not a tensor's device.
NOT_TENSOR_FACTORIES = frozenset(
    {"torch.device", "torch.Generator", "torch.autocast", "torch.get_device", "torch.Stream"}
)
# A class whose text has none of these cannot put data on the GPU.
CLASS_WORDS = ("cuda", "device", ".to(", "load(", "Tensor(")
# Keywords of .to() that keep a pure device move a pure device move.
MOVE_KEYWORDS = frozenset({"non_blocking", "copy"})

# The consequence, in the message (the why is in the hover and the docs):
# under fork a worker raises "Cannot re-initialize CUDA in forked
# subprocess"; under spawn/forkserver CUDA IPC sharing is reported to leave
# the tensor (or the batches sent back) reading as zeros (pytorch #128497).
# Candidate endings, longest first: the first that fits MESSAGE_LIMIT.
HELD = (
    " in a Dataset: DataLoader workers {may}crash under fork, may read zeros under spawn",
    ": DataLoader workers {may}crash under fork, may read zeros under spawn",
    ": DataLoader workers {may}crash (fork), may read zeros (spawn)",
    ": {a}crash under fork, zeros under spawn",
)
IN_WORKER = (
    ", which {runs} in DataLoader workers: a crash under fork, zeros under spawn",
    " in DataLoader workers: a crash (fork) or zeros (spawn)",
    ": {a}crash under fork, zeros under spawn",
)


def _first_fitting(what: str, endings: tuple[str, ...], **words: str) -> str:
    for ending in endings:
        message = what + ending.format(**words)
        if len(message) <= MESSAGE_LIMIT:
            return message
    return message


@dataclass
class CudaUse:
    call: ast.Call  # the finding's range
    how: str  # "`.cuda()`", "`.to(device)`, where `device` may be CUDA"
    cuda: Cuda
    kind: str  # "cuda" | "to" | "device" | "map_location" | "legacy"
    device: ast.expr | None  # the device argument, for the keep-on-CPU fix
    method: str  # the dataset method it is in
    held: str | None  # "self.tensor" when the dataset keeps it
    in_worker: bool  # runs inside a DataLoader worker (__getitem__ and what it calls)


class CudaTensorInDataset(Rule):
    """
    ## What it does
    Finds a Dataset that creates or holds CUDA tensors (`.cuda()`,
    `.to("cuda")`, `.to(device)` where `device` is visibly CUDA,
    `device="cuda"` arguments, `torch.load(..., map_location="cuda")`) while
    a DataLoader with workers uses it: in `__init__` (or any method) stored
    on `self`, or anywhere in `__getitem__`/`__iter__` and the methods they
    call, which run inside the workers.

    Severity: **error** when the device is certainly CUDA and a DataLoader
    in the file receives the dataset with a literal `num_workers > 0`;
    **warning** when the device only may be CUDA (`torch.device("cuda" if
    torch.cuda.is_available() else "cpu")`, a parameter's default), when the
    worker count is only known at run time (`args.workers`), or when a
    DataLoader with workers gets a dataset we cannot trace. **Silent** when
    no DataLoader in the file uses the dataset: keeping a small dataset on
    the GPU is a sound, fast design with `num_workers=0`, so a Dataset on
    its own is not evidence of the bug (linking it to a DataLoader in
    another file is a later step). Also silent when every DataLoader using
    it has `num_workers=0`, for `.to("cpu")`, `.to(dtype)`, a CUDA value
    brought back with `.cpu()`/`.item()`, and `.cuda()` outside Datasets
    (the training loop).

    Across files (the whole-program model): a CUDA value made by code that
    runs only in a DataLoader's workers (`.to(self.device)` in
    `__getitem__` with the CUDA device passed in from the training script,
    a transform of a `Compose` that makes tensors on a CUDA device) is
    reported where it is made; a CUDA tensor that a helper in another file
    makes and the dataset keeps is reported at the DataLoader and at the
    dataset's call that gets it. The message names the worker count and the
    DataLoader.

    `torchtrap run` walks the dataset when a DataLoader with workers starts
    (attributes, containers, closures, bound methods; bounded) and reports
    the CUDA tensors it reaches, on the line that stores them, whichever
    file built them.

    ## Why is this bad?
    A Dataset's CUDA tensors break in DataLoader workers: under fork a
    worker that touches one raises an error, and under spawn/forkserver they
    are shared through CUDA IPC, which is reported to turn them into zeros.
    DataLoader workers get the dataset by fork (Linux up to Python 3.13) or
    by pickling (spawn/forkserver: Windows, macOS, and Linux from Python
    3.14). Under fork, CUDA cannot be used in the child: touching a CUDA
    tensor raises "Cannot re-initialize CUDA in forked subprocess". Under
    spawn/forkserver, every CUDA storage is shared through CUDA IPC
    (`reduce_tensor` → `storage._share_cuda_()`), and open pytorch issues
    (#128497, #156618) report the dataset's tensors — and tensors reachable
    from the same pickled objects, such as a model's weights — reading as
    zeros afterwards, with no error. Tensors created on the GPU in
    `__getitem__` also travel back to the main process through CUDA IPC.

    Fixes: `num_workers=0` on the DataLoader (unsafe: loading is no longer
    parallel, so the program slows down, a `worker_init_fn` never runs, and
    a run-time value such as `args.workers` is overridden; `check --fix`
    never changes a worker count; `persistent_workers`, `prefetch_factor`
    and `multiprocessing_context`, which need workers, are reset). Or keep
    the tensor on the CPU and move each batch to the GPU in the training
    loop (unsafe: code that expects the tensor on the GPU must change too).

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Table(Dataset):
        def __init__(self):
            self.weights = torch.tensor([1.0, 2.0]).cuda()

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return self.weights[i]

    loader = DataLoader(Table(), batch_size=1, num_workers=2)
    ```

    ## Use instead
    ```python
    class Table(Dataset):
        def __init__(self):
            self.weights = torch.tensor([1.0, 2.0])  # stays on the CPU

        ...

    for batch in DataLoader(Table(), batch_size=1, num_workers=2, pin_memory=True):
        batch = batch.cuda(non_blocking=True)
    ```

    ## References
    - [torch.multiprocessing: sharing CUDA tensors](https://pytorch.org/docs/stable/multiprocessing.html#sharing-cuda-tensors)
    - CUDA variables in a dataset read as 0 after the DataLoader starts:
      [pytorch #128497](https://github.com/pytorch/pytorch/issues/128497)
    - THPStorage_shareCuda zeroes CUDA tensor:
      [pytorch #156618](https://github.com/pytorch/pytorch/issues/156618)
    - [CUDA in multiprocessing](https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    """

    code = "TT103"
    name = "cuda-tensor-in-dataset"
    summary = "A Dataset with CUDA tensors is copied into DataLoader workers"
    fact = (
        'The fork error reads "Cannot re-initialize CUDA in forked subprocess"; the zeros '
        "under spawn are pytorch #128497 and #156618."
    )
    default_severity = Severity.ERROR
    # "device", "Dataset": a CUDA value from another file (the whole-program model)
    requires_text = ("cuda", "DataLoader", "device", "Dataset", "__getitem__")

    def check(self) -> Iterable[Finding]:
        datasets = self.ctx.values.datasets
        reported: set[int] = set()
        for view in datasets.views():
            if not view.mentions(self.ctx.source, CLASS_WORDS):
                continue
            # Judged first: it is cheap, and most datasets run without
            # visible workers, which spares walking their methods.
            judgement = judge(datasets, view)
            unseen = (
                judgement.exposure is Exposure.INVISIBLE
                if judgement is not None
                else view.protocol and not datasets.uses(view)
            )
            if unseen:
                # Only then ask the project (another file's DataLoaders), and
                # only for a dataset that puts something on the GPU.
                if next(iter(self._cuda_uses(view)), None) is None:
                    continue
                judgement = judge(
                    datasets,
                    view,
                    remote=remote_uses(self.ctx, view.name),
                )
            if judgement is None or judgement.exposure is Exposure.INVISIBLE:
                continue
            uses = [u for u in self._cuda_uses(view) if id(u.call) not in reported]
            for use in uses:
                reported.add(id(use.call))
                yield self._finding(use, judgement)
        ctx = self.ctx
        for found in payload_culprits(ctx.project, ctx.path, ctx.text, ctx.tree, "tensor"):
            yield self._payload_finding(found)
        if ctx.project is None:
            return
        for here in cuda_here(ctx.project, ctx.path, ctx.text, ctx.tree):
            if id(here.node) in reported:
                continue  # this file's own detection said it
            yield self.finding(
                here.node,
                here.message,
                severity=Severity.ERROR if here.certain else Severity.WARNING,
                related=here.related,
            )

    def _payload_finding(self, found: PayloadCulprit) -> Finding:
        """A CUDA tensor the whole program shows reaching this DataLoader's
        workers through other objects, functions or files."""
        culprit = found.culprit
        certain = culprit.sure == "certain" and culprit.loader.workers.kind == "some"
        tail = ": a crash (fork) or zeros (spawn)" if certain else ": a possible crash or zeros"
        message = found.message("workers get a CUDA tensor", tail)
        fixes: list[Fix] = []
        loader = next((lo for lo in self.ctx.facts.dataloaders if lo.node is found.node), None)
        if loader is not None and can_set_no_workers(loader) and loader.workers is Workers.SOME:
            # A literal count here; one passed in from callers is theirs to change.
            fixes.append(no_workers_fix(self.ctx.source, [loader]))
        return self.finding(
            found.node,
            message,
            severity=Severity.ERROR if certain else Severity.WARNING,
            fixes=fixes,
            related=found.related,
        )

    # -- detection -----------------------------------------------------------
    def _cuda_uses(self, view: DatasetView) -> Iterator[CudaUse]:
        worker = {id(fn) for fn in view.worker_methods()}
        seen: set[int] = set()
        for fn in view.all_methods():
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            me = self_name(fn)
            for node in walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                found = self._cuda_call(node)
                if found is None or _back_on_cpu(node, self):
                    continue
                kind, cuda, device, how = found
                held = _held_by(node, fn, me, self)
                in_worker = id(fn) in worker
                if held is None and not in_worker:
                    continue  # a temporary in __init__, or a helper for the training loop
                yield CudaUse(node, how, cuda, kind, device, fn.name, held, in_worker)

    def _cuda_call(self, call: ast.Call) -> tuple[str, Cuda, ast.expr | None, str] | None:
        """(kind, how certainly CUDA, the device argument, how to name it)."""
        func = call.func
        qual = self.ctx.facts.imports.qualname(func)
        text = self.ctx.source.segment
        if isinstance(func, ast.Attribute) and qual is None:
            if func.attr == "cuda":
                return (
                    "cuda",
                    Cuda.YES,
                    None,
                    f"`.{func.attr}()`"
                    if not call.args
                    else (f"`.cuda({text(self.ctx.range(call.args[0]))})`"),
                )
            if func.attr == "to":
                device = _keyword(call, "device") or (call.args[0] if call.args else None)
                if device is None:
                    return None
                cuda = self.ctx.values.device(device)
                if cuda is Cuda.NO:
                    return None
                spelled = text(self.ctx.range(device))
                return "to", cuda, device, _how(f".to({spelled})", spelled, cuda)
            if func.attr in NEW_FACTORIES:
                return self._device_keyword(call, "device")
            return None
        if qual is None:
            return None
        if qual.startswith("torch.cuda.") and qual.endswith("Tensor"):
            return "legacy", Cuda.YES, None, f"`{text(self.ctx.range(func))}`"
        if qual == "torch.load":
            location = _keyword(call, "map_location") or (
                call.args[1] if len(call.args) > 1 else None
            )
            if location is None:
                return None
            cuda = self.ctx.values.device(location)
            if cuda is Cuda.NO:
                return None
            spelled = text(self.ctx.range(location))
            return "map_location", cuda, location, _how(f"map_location={spelled}", spelled, cuda)
        if (
            qual.startswith("torch.")
            and not qual.startswith("torch.cuda.")
            and qual not in NOT_TENSOR_FACTORIES
        ):
            return self._device_keyword(call, "device")
        return None

    def _device_keyword(
        self, call: ast.Call, name: str
    ) -> tuple[str, Cuda, ast.expr | None, str] | None:
        device = _keyword(call, name)
        if device is None:
            return None
        cuda = self.ctx.values.device(device)
        if cuda is Cuda.NO:
            return None
        spelled = self.ctx.source.segment(self.ctx.range(device))
        return "device", cuda, device, _how(f"{name}={spelled}", spelled, cuda)

    # -- reporting -----------------------------------------------------------
    def _finding(self, use: CudaUse, judgement: Judgement) -> Finding:
        loaders = judgement.loaders
        exposure = judgement.exposure
        certain = exposure is Exposure.WORKERS and use.cuda is Cuda.YES
        held = use.held is not None and not use.in_worker
        what = (
            f"`{use.held}` is put on the GPU ({use.how})"
            if held
            else f"`{use.method}` puts data on the GPU ({use.how})"
        )
        may = "may " if exposure is Exposure.UNLINKED else ""
        a = "a possible " if may else "a "
        if held:
            message = _first_fitting(what, HELD, may=may, a=a)
        else:
            message = _first_fitting(what, IN_WORKER, runs="may run" if may else "runs", a=a)
        message = with_location(message, loaders)
        related = [self.ctx.related(lo.node, related_message(lo, exposure)) for lo in loaders]
        return self.finding(
            use.call,
            message,
            severity=Severity.ERROR if certain else Severity.WARNING,
            fixes=self._fixes(use, judgement),
            related=related,
        )

    def _fixes(self, use: CudaUse, judgement: Judgement) -> list[Fix]:
        fixes: list[Fix] = []
        if judgement.exposure in (Exposure.WORKERS, Exposure.MAYBE):
            loaders = judgement.loaders
            if all(can_set_no_workers(lo) and not is_remote(lo) for lo in loaders):
                fixes.append(no_workers_fix(self.ctx.source, loaders))
        cpu = self._keep_on_cpu(use)
        if cpu is not None:
            fixes.append(
                Fix(
                    unsafe_title(
                        "Keep it on the CPU (move batches to the GPU in the training loop)",
                        "code that expects it on the GPU must change too",
                    ),
                    Applicability.UNSAFE,
                    lambda: cpu,
                )
            )
        return fixes

    def _keep_on_cpu(self, use: CudaUse) -> list[Edit] | None:
        """The edit that leaves the value on the CPU; None when there is no
        clean one (an in-place ``self.model.cuda()`` statement, legacy types)."""
        call = use.call
        statement = enclosing_statement(call)
        if isinstance(statement, ast.Expr) and statement.value is call:
            return None
        if use.kind in ("cuda", "to") and isinstance(call.func, ast.Attribute):
            pure_move = use.kind == "cuda" or (
                len(call.args) + len(call.keywords) == 1
                or all(kw.arg in MOVE_KEYWORDS or kw.arg == "device" for kw in call.keywords)
                and len(call.args) <= 1
                and not (call.args and _keyword(call, "device"))
            )
            if pure_move:
                # Delete ".cuda()" / ".to(device)" after the receiver (chains keep working).
                receiver = call.func.value
                start = self.ctx.range(receiver).end
                end = self.ctx.range(call).end
                return [Edit(Range(start, end), "")]
        if use.device is not None:
            return [replace(self.ctx.source, use.device, '"cpu"')]
        return None


def _how(spelled: str, device: str, cuda: Cuda) -> str:
    if cuda is Cuda.MAYBE:
        return f"`{spelled}`, where `{device}` may be CUDA"
    return f"`{spelled}`"


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _back_on_cpu(call: ast.Call, rule: Rule) -> bool:
    """``x.cuda().mean().cpu()``: the chain ends on the host."""
    current: ast.expr = call
    while True:
        attr = parent(current)
        if not (isinstance(attr, ast.Attribute) and attr.value is current):
            return False
        outer = parent(attr)
        if not (isinstance(outer, ast.Call) and outer.func is attr):
            return False
        if attr.attr in BACK_TO_CPU:
            return True
        if attr.attr == "to":
            device = _keyword(outer, "device") or (outer.args[0] if outer.args else None)
            if (
                isinstance(device, ast.Constant)
                and isinstance(device.value, str)
                and device.value.startswith("cpu")
            ):
                return True
        current = outer


def _held_by(call: ast.Call, fn: ast.AST, me: str | None, rule: Rule) -> str | None:
    """``self.tensor`` when the value ends up on the dataset: assigned to a
    ``self`` attribute (or an item of one), appended to one, a ``self``
    attribute moved in place (``self.model.cuda()``), or a local name that
    a later ``self.x = ...`` stores."""
    if me is None:
        return None
    text = rule.ctx.source.segment
    statement = enclosing_statement(call)
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    for target in targets:
        root = chain_root(target)
        if isinstance(root, ast.Name) and root.id == me and target is not root:
            return text(rule.ctx.range(target))
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        outer = statement.value
        if isinstance(outer.func, ast.Attribute):
            # self.items.append(x.cuda()), or self.model.cuda() moving a module in place
            holder = outer.func.value
            root = chain_root(holder)
            if isinstance(root, ast.Name) and root.id == me and holder is not root:
                return text(rule.ctx.range(holder))
    for target in targets:
        if isinstance(target, ast.Name):
            for attr, _stmt, store_target, value in self_stores(fn):  # type: ignore[arg-type]
                if value is not None and any(
                    isinstance(n, ast.Name) and n.id == target.id for n in walk(value)
                ):
                    return text(rule.ctx.range(store_target)) or f"self.{attr}"
    return None


# -- examples ----------------------------------------------------------------

_SEED_000 = """\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class dataset(Dataset):
    def __init__(self):
        super().__init__()
        self.tensor = torch.tensor(5).cuda()

    def __getitem__(self, index):
        time.sleep(1000)
        return 0

    def __len__(self):
        return 1000


my_set = dataset()
dataloder = DataLoader(my_set, batch_size=10, shuffle=False, num_workers=1)
x = dataloder.__iter__()
print(my_set.tensor)
"""

_GETITEM = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]{move}


loader = DataLoader(Points(torch.randn(8, 2)), batch_size=2, num_workers=4)
"""

_LOADED = _GETITEM.format(move="").replace(
    "self.data = data", "self.data = data\n        self.w = torch.load('w.pt', map_location='cuda')"
)

CudaTensorInDataset.valid = (
    Valid(_GETITEM.format(move=""), note="CPU dataset"),
    Valid(_GETITEM.format(move='.to("cpu")'), note=".to('cpu')"),
    Valid(_GETITEM.format(move=".to(torch.float16)"), note=".to(dtype)"),
    Valid(_GETITEM.format(move=".cuda().cpu()"), note="brought back to the host"),
    Valid(_SEED_000.replace("num_workers=1", "num_workers=0"), note="no workers"),
    Valid(_SEED_000.replace(", num_workers=1", ""), note="num_workers missing: no workers"),
    Valid(
        _GETITEM.format(move="")
        + "\nfor batch in loader:\n    batch = batch.cuda(non_blocking=True)\n",
        note=".cuda() in the training loop",
    ),
    Valid(
        _GETITEM.format(move="").replace("num_workers=4", "num_workers=4, pin_memory=True"),
        note="pin_memory=True",
    ),
    Valid(
        """\
        import torch
        from torch.utils.data import Dataset


        class OnGpu(Dataset):
            def __init__(self, data):
                self.data = data.cuda()

            def __len__(self):
                return len(self.data)

            def __getitem__(self, index):
                return self.data[index]
        """,
        note="no DataLoader visible: a GPU-resident dataset is fine with num_workers=0",
    ),
    Valid(
        """\
        import torch
        from torch.utils.data import DataLoader


        class Trainer:
            def __init__(self, model):
                self.model = model.cuda()

            def __getitem__(self, index):
                return self.model.weight[index]


        loader = DataLoader(list(range(8)), num_workers=4)
        """,
        note="not a Dataset",
    ),
    Valid(
        _GETITEM.format(move=".to(device)").replace("index):", "index, device=None):"),
        note="a device parameter without a visible CUDA value",
    ),
    Valid(
        _GETITEM.format(move="").replace(
            "        self.data = data\n",
            '        self.data = data\n        self.buf = torch.zeros(3, device="cpu")\n'
            '        self.w = torch.load("w.pt", map_location="cpu")\n',
        ),
        note="device='cpu', map_location='cpu'",
    ),
    Valid(
        _GETITEM.format(move="").replace(
            "        self.data = data\n",
            "        self.data = data\n        self.mean = data.cuda().mean().item()\n",
        ),
        note="a GPU temporary in __init__ that comes back as a number",
    ),
    Valid(
        _GETITEM.format(move="")
        + """

def gpu_batches(dataset, device="cuda"):
    for i in range(len(dataset)):
        yield dataset[i].to(device)
""",
        note="moving to CUDA outside the Dataset",
    ),
)

CudaTensorInDataset.invalid = (
    Invalid(
        _SEED_000,
        line=10,
        severity=Severity.ERROR,
        message_contains=(
            "`self.tensor` is put on the GPU (`.cuda()`): "
            "DataLoader workers crash under fork, may read zeros under spawn"
        ),
        fix_title="num_workers=0",
        fixed=_SEED_000.replace("num_workers=1", "num_workers=0"),
    ),
    Invalid(
        _SEED_000,
        fix_title="Keep it on the CPU",
        fixed=_SEED_000.replace("torch.tensor(5).cuda()", "torch.tensor(5)"),
    ),
    Invalid(
        _GETITEM.format(move='.to("cuda")'),
        line=13,
        severity=Severity.ERROR,
        message_contains=(
            '`__getitem__` puts data on the GPU (`.to("cuda")`) in DataLoader workers: '
            "a crash (fork) or zeros (spawn)"
        ),
        fix_title="Keep it on the CPU",
        fixed=_GETITEM.format(move=""),
    ),
    Invalid(
        """\
        import torch
        import torch.utils.data as tud

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        class Embeddings(tud.Dataset):
            def __init__(self, table):
                self.table = table.to(device)

            def __len__(self):
                return len(self.table)

            def __getitem__(self, index):
                return self.table[index]


        loader = tud.DataLoader(Embeddings(torch.randn(8, 4)), num_workers=2)
        """,
        line=9,
        severity=Severity.WARNING,
        message_contains="`.to(device)`, where `device` may be CUDA",
        fix_title="Keep it on the CPU",
        fixed="""\
        import torch
        import torch.utils.data as tud

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        class Embeddings(tud.Dataset):
            def __init__(self, table):
                self.table = table

            def __len__(self):
                return len(self.table)

            def __getitem__(self, index):
                return self.table[index]


        loader = tud.DataLoader(Embeddings(torch.randn(8, 4)), num_workers=2)
        """,
        note="module-level device that may be CUDA",
    ),
    Invalid(
        """\
        from torch import zeros
        from torch.utils.data import DataLoader as DL
        from torch.utils.data import Dataset


        class Masks(Dataset):
            def __init__(self):
                self.mask = zeros(4, device="cuda:0")

            def __len__(self):
                return 4

            def __getitem__(self, index):
                return self.mask[index]


        def main(args):
            return DL(Masks(), num_workers=args.workers)
        """,
        line=8,
        severity=Severity.WARNING,
        message_contains="`self.mask` is put on the GPU",
        fix_title="Keep it on the CPU",
        fixed="""\
        from torch import zeros
        from torch.utils.data import DataLoader as DL
        from torch.utils.data import Dataset


        class Masks(Dataset):
            def __init__(self):
                self.mask = zeros(4, device="cpu")

            def __len__(self):
                return 4

            def __getitem__(self, index):
                return self.mask[index]


        def main(args):
            return DL(Masks(), num_workers=args.workers)
        """,
        note="factory with device=, run-time worker count",
    ),
    Invalid(
        _LOADED.replace(
            "num_workers=4)", "num_workers=4, persistent_workers=True, prefetch_factor=4)"
        ),
        line=8,
        severity=Severity.ERROR,
        message_contains="`self.w` is put on the GPU (`map_location='cuda'`)",
        fix_title="num_workers=0",
        fixed=_LOADED.replace(
            "num_workers=4)", "num_workers=0, persistent_workers=False, prefetch_factor=None)"
        ),
        note="options that need workers are reset; torch.load(map_location='cuda')",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Frames(Dataset):
            def __init__(self, frames):
                self.frames = frames

            def __len__(self):
                return len(self.frames)

            def _load(self, index):
                return self.frames[index].cuda().float()

            def __getitem__(self, index):
                return self._load(index) / 255


        loader = DataLoader(Frames(torch.zeros(8, 3)), num_workers=3)
        """,
        line=13,
        severity=Severity.ERROR,
        fix_title="Keep it on the CPU",
        fixed="""\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Frames(Dataset):
            def __init__(self, frames):
                self.frames = frames

            def __len__(self):
                return len(self.frames)

            def _load(self, index):
                return self.frames[index].float()

            def __getitem__(self, index):
                return self._load(index) / 255


        loader = DataLoader(Frames(torch.zeros(8, 3)), num_workers=3)
        """,
        note="through a helper method; chained .cuda().float()",
    ),
    Invalid(
        _SEED_000.replace(
            "my_set = dataset()\ndataloder = DataLoader(my_set, batch_size=10, shuffle=False, "
            "num_workers=1)\nx = dataloder.__iter__()\nprint(my_set.tensor)\n",
            "def make_loader(ds, workers=4):\n    return DataLoader(ds, num_workers=workers)\n",
        ),
        line=10,
        severity=Severity.WARNING,
        message_contains="DataLoader workers may crash under fork, may read zeros under spawn",
        note="a DataLoader with workers gets an untraced dataset",
    ),
    Invalid(
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Scored(Dataset):
            def __init__(self, model, items):
                self.model = model
                self.items = items
                self.model.cuda()

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                return self.items[index]


        loader = DataLoader(Scored(torch.nn.Linear(2, 2), [1, 2]), num_workers=2)
        """,
        line=9,
        severity=Severity.ERROR,
        message_contains="`self.model` is put on the GPU",
        note="a module held by the dataset, moved in place (no keep-on-CPU fix)",
    ),
)
