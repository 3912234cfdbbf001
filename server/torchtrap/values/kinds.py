"""Evidence that a value is a tensor or a module, for :class:`Values`.

The syntax-only pieces: which torch names build tensors or modules
(:func:`qualname_kind`), which annotations say "a tensor", and what a
``for`` loop's target holds (``for p in model.parameters()``, the batches
of a DataLoader). :mod:`torchtrap.values.evaluate` asks them while it
evaluates an expression; no rule asks them directly.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from torchtrap.facts.imports import ImportTable
from torchtrap.facts.tensors import (
    PARAMETER_ITERATORS,
    TENSOR_ANNOTATIONS,
    TORCH_TENSOR_CLASSES,
    TORCH_TENSOR_FUNCTIONS,
    TORCH_TENSOR_NAMESPACES,
)
from torchtrap.values.model import Kind

_NOT_MODULE_NAMESPACES = ("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")
# Written as strings (`x: "Tensor"`), accepted without an import of the name.
_TENSOR_STRINGS = frozenset(
    {"torch.Tensor", "Tensor", "Optional[torch.Tensor]", "Optional[Tensor]"}
)
_PROGRESS_BARS = frozenset({"tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"})


def qualname_kind(qualname: str) -> Kind:
    """TENSOR for a torch function or class that builds a tensor, MODULE
    for an ``nn`` layer or a torchvision model, else UNKNOWN."""
    if qualname in TORCH_TENSOR_CLASSES:
        return Kind.TENSOR
    head, _, last = qualname.rpartition(".")
    if head == "torch" and last in TORCH_TENSOR_FUNCTIONS:
        return Kind.TENSOR
    if qualname.startswith(TORCH_TENSOR_NAMESPACES) and last[:1].islower():
        return Kind.TENSOR
    if (
        qualname.startswith("torch.nn.")
        and last[:1].isupper()
        and not qualname.startswith(_NOT_MODULE_NAMESPACES)
    ):
        return Kind.MODULE
    if qualname.startswith("torchvision.models.") and not last.endswith(("Weights", "_")):
        return Kind.MODULE  # resnet18(), ResNet(...): models
    return Kind.UNKNOWN


def tensor_annotation(imports: ImportTable, annotation: ast.expr | None) -> bool:
    """``torch.Tensor``, ``Tensor | None``, ``Optional[Tensor]``, or one of
    them as a string."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value
        if text.replace(" ", "") in _TENSOR_STRINGS:
            return True
        if len(text) > 100:
            return False
        try:
            annotation = ast.parse(text.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            return False
    if annotation is None:
        return False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        return any(tensor_annotation(imports, s) for s in sides) and all(
            tensor_annotation(imports, s) or _is_none(s) for s in sides
        )
    if isinstance(annotation, ast.Subscript) and imports.qualname(annotation.value) == (
        "typing.Optional"
    ):
        return tensor_annotation(imports, annotation.slice)
    return imports.qualname(annotation) in TENSOR_ANNOTATIONS


def parameter_loop(
    iterable: ast.expr,
    path: tuple[int, ...],
    iterators: Mapping[str, tuple[int, ...]] = PARAMETER_ITERATORS,
) -> bool | None:
    """``for p in m.parameters()`` / ``for name, p in m.named_parameters()``:
    whether the target at ``path`` is what ``iterators`` yields (by default a
    parameter or buffer); None: not such a loop."""
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in iterators
    ):
        return iterators[iterable.func.attr] == path
    return None


def batches_of(
    imports: ImportTable, iterable: ast.expr, path: tuple[int, ...]
) -> tuple[ast.expr, tuple[int, ...]] | None:
    """``enumerate(loader)`` and ``tqdm(loader)`` unwrapped: the iterable
    whose items the target at ``path`` takes, and the path into one item;
    None when the target is ``enumerate``'s counter."""
    while isinstance(iterable, ast.Call) and iterable.args:
        callee = imports.qualname(iterable.func) or getattr(iterable.func, "id", "")
        if callee == "enumerate":
            if not path or path[0] != 1:
                return None
            path = path[1:]
        elif callee not in _PROGRESS_BARS:
            break
        iterable = iterable.args[0]
    return iterable, path


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
