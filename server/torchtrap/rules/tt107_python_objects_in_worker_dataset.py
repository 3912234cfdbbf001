"""TT107 python-objects-in-worker-dataset."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.facts.datasets import located_phrase, self_stores
from torchtrap.facts.index import walk
from torchtrap.facts.remote import with_location
from torchtrap.facts.workers import indexed_by_item
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity
from torchtrap.fixes.edits import replace
from torchtrap.fixes.names import ModuleNames
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.datasets import Exposure, judge
from torchtrap.values.remote import remote_uses
from torchtrap.values.workers import python_container

MEASURED = (
    "measured: 500,000 dicts from json.load (134 MB of objects), 2 workers, one shuffled "
    "epoch: 91 MB private memory per worker, vs 11 MB as numpy arrays"
)
# Container producers whose items are str/int/float: a numpy array holds them.
SCALAR_ITEMS = frozenset({".tolist()", ".readlines()"})


class PythonObjectsInWorkerDataset(Rule):
    """
    ## What it does
    Finds a Dataset that keeps a whole annotation or data file as Python
    containers on `self` (`json.load`, `pickle.load`, `yaml.safe_load`,
    `.tolist()`, `.to_dict()`, `readlines()`, also through one local name or
    a comprehension over it) and indexes it with the item index in
    `__getitem__`, while a DataLoader with workers loads it: in the same
    file, or in another file of the project (the class in `datasets.py`,
    `DataLoader(..., num_workers=4)` in `train.py`; the finding then names
    that line).

    Severity: **info** (memory, not correctness). Silent for the ordinary
    `self.files = sorted(glob(...))` image dataset, for containers not
    indexed by the item index (a class-name mapping read by label), for
    numpy arrays and tensors, with `num_workers=0` (in every file of the
    project that loads it), for a DataLoader in another file that gets a
    subclass defining its own `__getitem__`, and when no DataLoader
    visibly loads the dataset (one that gets it through an import the
    project cannot resolve, a third-party or dynamic one, is unknown).

    `torchtrap run` measures each DataLoader worker's private memory (USS, on
    Linux) at batches 1, 8, 64, 512 and 4096 and reports a growth of 16 MB or
    more after the first batch while the dataset holds a Python container of
    10,000 or more objects, on the line that stores it.

    ## Why is this bad?
    Reading a Python object writes its reference count, so each worker
    copies every page of the container it reads: memory grows towards
    workers × the container's size. The kernel's OOM killer then ends with
    "DataLoader worker (pid N) is killed by signal: Killed"
    ([pytorch #13246](https://github.com/pytorch/pytorch/issues/13246)).
    Measured with torch 2.13 on Linux (fork): 500,000 annotation dicts from
    `json.load` (134 MB of Python objects) read through
    `DataLoader(shuffle=True, num_workers=2)`: after one epoch each worker
    held 91 MB of private memory (USS, from `/proc/<pid>/smaps_rollup`);
    with the same data as numpy arrays, 11 MB. With 4 workers and no
    shuffle each worker copied the quarter it read (32 MB each).

    Fix, where the items are str/int/float (`.tolist()`, `readlines()`):
    store a numpy array (`np.array(...)`, fixed width, no per-item
    reference count); unsafe, items come back as numpy scalars (`np.str_`,
    `np.int64`). For dicts and nested lists there is no automatic fix:
    serialise each item to bytes (`pickle.dumps`) into one numpy byte
    buffer plus an offsets array, and decode it in `__getitem__`.

    ## Example
    ```python
    import json
    from torch.utils.data import DataLoader, Dataset

    class Coco(Dataset):
        def __init__(self, path):
            with open(path) as fh:
                self.annotations = json.load(fh)["annotations"]

        def __len__(self):
            return len(self.annotations)

        def __getitem__(self, index):
            return self.annotations[index]["bbox"]

    loader = DataLoader(Coco("train.json"), num_workers=8)
    ```

    ## Use instead
    ```python
    import pickle
    import numpy as np

    class Coco(Dataset):
        def __init__(self, path):
            with open(path) as fh:
                items = [pickle.dumps(a) for a in json.load(fh)["annotations"]]
            self.offsets = np.cumsum([0] + [len(b) for b in items])
            self.blob = np.frombuffer(b"".join(items), dtype=np.uint8)

        def __getitem__(self, index):
            start, end = self.offsets[index], self.offsets[index + 1]
            return pickle.loads(self.blob[start:end].tobytes())["bbox"]
    ```

    ## References
    - [pytorch #13246: DataLoader workers' memory grows with Python lists](https://github.com/pytorch/pytorch/issues/13246)
    - [Demystify RAM usage in multi-process data loaders](https://ppwwyyxx.com/blog/2022/Demystify-RAM-Usage-in-Multiprocess-DataLoader/)
    - TorchTrap probe experiment `worker-memory`
    """

    code = "TT107"
    name = "python-objects-in-worker-dataset"
    summary = "A Dataset keeps a whole file as Python objects that each worker copies"
    default_severity = Severity.INFO
    requires_text = ("load", "tolist", "to_dict", "readlines")

    def check(self) -> Iterable[Finding]:
        values = self.ctx.values
        datasets = values.datasets
        for view in datasets.views():
            getitem = view.methods.get("__getitem__")
            if getitem is None:
                continue
            stores = [
                (attr, fn, value)
                for fn in view.all_methods()
                for attr, _stmt, _target, value in self_stores(fn)
                if value is not None
            ]
            unpacked = _unpacked_attributes(view.all_methods())
            candidates = []
            for attr, fn, value in stores:
                if attr in unpacked:
                    continue  # also bound by `self.a, self.b = ...`: unknown
                how = python_container(values, value, fn)
                if how is not None and indexed_by_item(attr, getitem) is not None:
                    candidates.append((attr, value, how))
            if not candidates:
                continue
            # No DataLoader here gets it: only then ask the other files (a
            # subclass there with its own `__getitem__` may not index it).
            remote = (
                None if datasets.uses(view) else remote_uses(self.ctx, view.name, ("__getitem__",))
            )
            judgement = judge(datasets, view, remote=remote)
            if judgement is None or judgement.exposure not in (Exposure.WORKERS, Exposure.MAYBE):
                continue
            seen: set[str] = set()
            for attr, value, how in candidates:
                if attr in seen or any(
                    a == attr and python_container(values, v, f) is None for a, f, v in stores
                ):
                    continue  # also assigned something else (an array): unknown
                seen.add(attr)
                related = [
                    self.ctx.related(
                        loader.node,
                        f"{located_phrase(loader)}: each worker copies "
                        f"the pages it reads ({MEASURED})",
                    )
                    for loader in judgement.loaders
                ]
                message = (
                    f"`self.{attr}` keeps `{how}` objects that each worker copies as it reads them"
                )
                if how not in SCALAR_ITEMS:
                    message += "; serialise them to bytes"
                message = with_location(message, judgement.loaders)
                yield self.finding(value, message, fixes=self._fixes(value, how), related=related)

    def _fixes(self, value: ast.expr, how: str) -> list[Fix]:
        if how not in SCALAR_ITEMS:
            return []
        ctx = self.ctx

        def build() -> list[Edit]:
            names = ModuleNames(ctx.source, ctx.tree, ctx.facts.index)
            array = names.reference("numpy.array")
            if array is None:
                return []
            text = ctx.source.segment(ctx.range(value))
            return [replace(ctx.source, value, f"{array}({text})"), *names.import_edits()]

        return [
            Fix(
                "Store a numpy array (unsafe: items come back as numpy scalars)",
                Applicability.UNSAFE,
                build,
            )
        ]


def _unpacked_attributes(methods: Iterable[ast.FunctionDef | ast.AsyncFunctionDef]) -> set[str]:
    """Attributes bound by tuple assignment (``self.a, self.b = a, b``),
    which :func:`self_stores` does not pair with a value."""
    found: set[str] = set()
    for fn in methods:
        for node in walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, (ast.Tuple, ast.List)):
                        found.update(
                            e.attr
                            for e in target.elts
                            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                        )
    return found


# -- examples ----------------------------------------------------------------

_COCO = """\
import json

from torch.utils.data import DataLoader, Dataset


class Coco(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.annotations = json.load(fh)["annotations"]

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        return self.annotations[index]["bbox"]


loader = DataLoader(Coco("train.json"), num_workers=8)
"""

_LINES = """\
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Captions(Dataset):
    def __init__(self, path):
        with open(path) as fh:
            self.lines = fh.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i].strip()


def loader(args):
    return DataLoader(Captions(args.path), num_workers=args.workers)
"""

_IMAGES = """\
from glob import glob

from PIL import Image
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, root):
        self.files = sorted(glob(root + "/*.jpg"))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        return Image.open(self.files[index])


loader = DataLoader(Images("data"), num_workers=4)
"""

PythonObjectsInWorkerDataset.valid = (
    Valid(_IMAGES, note="the ordinary sorted(glob(...)) image dataset"),
    Valid(_COCO.replace("num_workers=8", "num_workers=0"), note="no workers"),
    Valid(
        _COCO.replace('\n\nloader = DataLoader(Coco("train.json"), num_workers=8)\n', "\n"),
        note="no DataLoader in this file",
    ),
    Valid(
        _COCO.replace(
            'self.annotations = json.load(fh)["annotations"]',
            'self.annotations = json.load(fh)["annotations"]\n'
            "        self.annotations = to_arrays(self.annotations)",
        ),
        note="replaced by something else before use",
    ),
    Valid(
        """\
        import json

        from torch.utils.data import DataLoader, Dataset


        class Labeled(Dataset):
            def __init__(self, items, names_path):
                self.items = items
                with open(names_path) as fh:
                    self.names = json.load(fh)

            def __len__(self):
                return len(self.items)

            def __getitem__(self, index):
                image, label = self.items[index]
                return image, self.names[label]


        loader = DataLoader(Labeled([], "names.json"), num_workers=4)
        """,
        note="a small mapping read by label, not by the item index",
    ),
    Valid(
        _LINES.replace("self.lines = fh.readlines()", "self.lines = np.array(fh.readlines())"),
        note="already a numpy array",
    ),
    Valid(
        _LINES.replace(
            "self.lines = fh.readlines()",
            "self.lines = fh.readlines()\n        self.lines, self.n = pack(self.lines)",
        ),
        note="rebound by tuple assignment (fairseq's emotion_conversion): unknown",
    ),
)

PythonObjectsInWorkerDataset.invalid = (
    Invalid(
        _COCO,
        line=9,
        severity=Severity.INFO,
        message_contains="`self.annotations` keeps `json.load()` objects that each worker copies",
    ),
    Invalid(
        _LINES,
        line=8,
        severity=Severity.INFO,
        message_contains="`self.lines` keeps `.readlines()` objects",
        fixed=_LINES.replace(
            "self.lines = fh.readlines()", "self.lines = np.array(fh.readlines())"
        ),
    ),
    Invalid(
        """\
        import pandas as pd
        from torch.utils.data import DataLoader, Dataset


        class Table(Dataset):
            def __init__(self, path):
                frame = pd.read_csv(path)
                self.paths = frame["path"].tolist()

            def __len__(self):
                return len(self.paths)

            def __getitem__(self, idx):
                return self.paths[idx]


        loader = DataLoader(Table("t.csv"), num_workers=2)
        """,
        line=8,
        fixed="""\
        import pandas as pd
        from torch.utils.data import DataLoader, Dataset
        import numpy as np


        class Table(Dataset):
            def __init__(self, path):
                frame = pd.read_csv(path)
                self.paths = np.array(frame["path"].tolist())

            def __len__(self):
                return len(self.paths)

            def __getitem__(self, idx):
                return self.paths[idx]


        loader = DataLoader(Table("t.csv"), num_workers=2)
        """,
        note=".tolist(); numpy imported by the fix",
    ),
    Invalid(
        """\
        import pickle

        from torch.utils.data import DataLoader, Dataset


        class Samples(Dataset):
            def __init__(self, path):
                with open(path, "rb") as fh:
                    data = pickle.load(fh)
                self.samples = [(s["x"], s["y"]) for s in data["samples"]]

            def __len__(self):
                return len(self.samples)

            def __getitem__(self, index):
                return self.samples[index]


        loader = DataLoader(Samples("s.pkl"), num_workers=2)
        """,
        line=10,
        message_contains="; serialise them to bytes",
        note="a comprehension over pickle.load output, through a local name",
    ),
)
