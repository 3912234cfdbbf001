"""Import aliases: which local name means which qualified name.

A light table instead of libcst's QualifiedNameProvider (measured ~9x slower
than the parse itself): ``import torch.nn as nn`` maps ``nn`` to
``torch.nn``, ``from torch.utils.data import DataLoader as DL`` maps ``DL``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

# Public names under the paths people import them from.
_CANONICAL = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.utils.data.dataset.Dataset": "torch.utils.data.Dataset",
    "torch.utils.data.dataset.IterableDataset": "torch.utils.data.IterableDataset",
    "torch.utils.data.dataloader.get_worker_info": "torch.utils.data.get_worker_info",
    "torch.utils.data._utils.worker.get_worker_info": "torch.utils.data.get_worker_info",
    "torch.nn.modules.module.Module": "torch.nn.Module",
    "numpy.random.mtrand.RandomState": "numpy.random.RandomState",
    "numpy.random._generator.default_rng": "numpy.random.default_rng",
    "torch._C.Generator": "torch.Generator",
    "torch.nn.functional": "torch.nn.functional",
    # Lightning's module base at every path it is imported from.
    "lightning.pytorch.core.LightningModule": "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.module.LightningModule": "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.lightning.LightningModule": "lightning.pytorch.LightningModule",
    "pytorch_lightning.core.LightningModule": "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.module.LightningModule": "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.lightning.LightningModule": "pytorch_lightning.LightningModule",
    # PyTorch Geometric's DataLoader subclasses torch's (same workers, same pickling).
    "torch_geometric.loader.DataLoader": "torch.utils.data.DataLoader",
    "torch_geometric.loader.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch_geometric.data.DataLoader": "torch.utils.data.DataLoader",
}


def canonical(qualname: str) -> str:
    return _CANONICAL.get(qualname, qualname)


class ImportTable:
    def __init__(self, imports: Iterable[ast.Import | ast.ImportFrom]) -> None:
        self.names: dict[str, str] = {}
        for node in imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        # `import torch.utils.data` binds `torch`.
                        top = alias.name.split(".", 1)[0]
                        self.names[top] = top
            elif node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualname(self, node: ast.AST) -> str | None:
        """``np.random.default_rng`` → ``numpy.random.default_rng``; None for
        names that were not imported (locals, builtins, attributes of values)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.names.get(node.id)
        if base is None:
            # A pasted fragment spells `torch.utils.data.DataLoader` out without
            # `import torch`: a dotted path that long names nothing else.
            if node.id == "torch" and parts[-2:] == ["data", "utils"]:
                base = "torch"
            else:
                return None
        parts.append(base)
        return canonical(".".join(reversed(parts)))

    def imports_module(self, prefix: str) -> bool:
        return any(q == prefix or q.startswith(prefix + ".") for q in self.names.values())

    def local_names_for(self, qualname: str) -> list[str]:
        return [name for name, q in self.names.items() if canonical(q) == qualname]


def dotted_name(node: ast.AST) -> str | None:
    """``self.rng.integers`` → "self.rng.integers"; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
