"""Classes defined in the module and what they derive from: Datasets,
IterableDatasets and nn.Modules, also through a base defined in the file."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchtrap.facts.imports import ImportTable

DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.IterableDataset",
        "torch.utils.data.TensorDataset",
        "torchvision.datasets.VisionDataset",
        "torchvision.datasets.vision.VisionDataset",
        # PyTorch Geometric's datasets derive from torch's Dataset.
        "torch_geometric.data.Dataset",
        "torch_geometric.data.InMemoryDataset",
        "torch_geometric.data.dataset.Dataset",
        "torch_geometric.data.in_memory_dataset.InMemoryDataset",
    }
)
ITERABLE_DATASET_BASES = frozenset({"torch.utils.data.IterableDataset"})
MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "torch.nn.Sequential",
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "pytorch_lightning.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
    }
)


@dataclass
class ClassInfo:
    node: ast.ClassDef
    name: str
    bases: list[ast.expr]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)

    def method(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return self.methods.get(name)


class ClassTable:
    def __init__(self, class_defs: list[ast.ClassDef], imports: ImportTable) -> None:
        self.imports = imports
        self.classes: dict[str, ClassInfo] = {}
        for node in class_defs:
            info = ClassInfo(node, node.name, list(node.bases))
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    info.methods[stmt.name] = stmt
            self.classes[node.name] = info
        self._memo: dict[tuple[str, frozenset[str]], bool] = {}

    def get(self, name: str) -> ClassInfo | None:
        return self.classes.get(name)

    def derives_from(self, info: ClassInfo, qualnames: frozenset[str]) -> bool:
        key = (info.name, qualnames)
        if key not in self._memo:
            self._memo[key] = False  # cycle guard: `class A(B)`, `class B(A)`
            self._memo[key] = self._derives(info, qualnames)
        return self._memo[key]

    def _derives(self, info: ClassInfo, qualnames: frozenset[str]) -> bool:
        for base in info.bases:
            qualname = self.imports.qualname(base)
            if qualname in qualnames:
                return True
            if isinstance(base, ast.Name):
                local = self.classes.get(base.id)
                if local is not None and local is not info and self.derives_from(local, qualnames):
                    return True
        return False

    def lineage(self, info: ClassInfo) -> list[ClassInfo]:
        """The class, then its bases defined in this module, breadth-first (a
        light MRO); cycles and diamonds visit each class once."""
        lineage: list[ClassInfo] = []
        todo = [info]
        while todo:
            cls = todo.pop(0)
            if any(c is cls for c in lineage):
                continue
            lineage.append(cls)
            for base in cls.bases:
                if isinstance(base, ast.Name):
                    local = self.classes.get(base.id)
                    if local is not None:
                        todo.append(local)
        return lineage

    def is_dataset(self, info: ClassInfo) -> bool:
        return self.derives_from(info, DATASET_BASES)

    def is_iterable_dataset(self, info: ClassInfo) -> bool:
        return self.derives_from(info, ITERABLE_DATASET_BASES)

    def is_module(self, info: ClassInfo) -> bool:
        return self.derives_from(info, MODULE_BASES)

    def datasets(self) -> list[ClassInfo]:
        return [c for c in self.classes.values() if self.is_dataset(c)]

    def modules(self) -> list[ClassInfo]:
        return [c for c in self.classes.values() if self.is_module(c)]

    def class_of_call(self, call: ast.expr) -> ClassInfo | None:
        """The local class a constructor call builds: ``MyDataset(...)``."""
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            return self.classes.get(call.func.id)
        return None
