"""Tensors allocated without initialising their memory (TT225): syntax only.

``torch.empty(...)``, ``torch.empty_like(t)``, ``torch.empty_strided``,
``t.new_empty(...)``, and the legacy constructors given sizes:
``torch.Tensor(n)``, ``torch.FloatTensor(n, m)``, ``torch.cuda.LongTensor(n)``,
``torch.Tensor(x.size())``. The legacy constructors given data
(``torch.Tensor([1, 2])``, ``torch.FloatTensor(array)``) copy it, and
``torch.tensor(...)`` always copies: neither is uninitialised.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from torchtrap.facts.imports import ImportTable

# qualname -> the zero-filled twin's name (the fix).
EMPTY_FUNCTIONS: dict[str, str] = {
    "torch.empty": "zeros",
    "torch.empty_like": "zeros_like",
}
EMPTY_METHODS: dict[str, str] = {"new_empty": "new_zeros"}

# Legacy constructors: class name -> the dtype they allocate (None: the default dtype).
LEGACY_CONSTRUCTORS: dict[str, str | None] = {
    "Tensor": None,
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
}

# Methods of an int-valued expression that give a size (`x.size(0)`, `x.numel()`).
_SIZE_METHODS = frozenset({"size", "numel", "dim", "nelement"})
_SIZE_BUILTINS = frozenset({"len", "int", "max", "min"})


@dataclass(frozen=True)
class Allocation:
    """An uninitialised allocation: ``call``, what builds it (for the
    message: ``torch.empty``), and how to get zeros instead."""

    call: ast.Call
    spelled: str  # `torch.empty`, `torch.FloatTensor`, `.new_empty`
    zeros: str  # the zero-filled function or method name
    dtype: str | None = None  # a legacy constructor's dtype
    device: str | None = None  # "cuda" for torch.cuda.*Tensor


def uninitialised(
    call: ast.Call, imports: ImportTable, is_int: Callable[[ast.expr], bool] | None = None
) -> Allocation | None:
    """The allocation ``call`` makes when it leaves memory uninitialised
    (not one with a literal 0 in its size: it has no element to read).
    ``is_int``: the caller's evidence that a lone argument is an int (a
    name bound to an int literal), for ``torch.Tensor(n)``."""
    if _empty_size(call):
        return None
    func = call.func
    qualname = imports.qualname(func)
    if qualname in EMPTY_FUNCTIONS:
        return Allocation(call, qualname, EMPTY_FUNCTIONS[qualname])
    if isinstance(func, ast.Attribute) and func.attr in EMPTY_METHODS and qualname is None:
        return Allocation(call, f".{func.attr}", EMPTY_METHODS[func.attr])
    if qualname is None:
        return None
    head, _, last = qualname.rpartition(".")
    if head not in ("torch", "torch.cuda") or last not in LEGACY_CONSTRUCTORS:
        return None
    if not call.args or call.keywords and any(k.arg is None for k in call.keywords):
        return None
    # Two or more positional arguments can only be sizes; one may be data.
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    lone = call.args[0] if len(call.args) == 1 else None
    if lone is not None and not size_like(lone) and not (is_int is not None and is_int(lone)):
        return None
    device = "cuda" if head == "torch.cuda" else None
    return Allocation(call, qualname, "zeros", LEGACY_CONSTRUCTORS[last], device)


def size_like(node: ast.expr) -> bool:
    """Evidently an int or a shape (not data to copy): an int literal,
    ``len(...)``, ``x.size(...)``, ``x.shape``/``x.shape[i]``, arithmetic on
    them. A plain name is not evidence: it may hold a list."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return (
            size_like(node.left)
            and size_like(node.right)
            or (
                isinstance(node.op, (ast.FloorDiv, ast.Mult, ast.Add, ast.Sub))
                and (size_like(node.left) or size_like(node.right))
                and not isinstance(node.left, (ast.List, ast.Tuple))
                and not isinstance(node.right, (ast.List, ast.Tuple))
            )
        )
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr in _SIZE_METHODS
        return isinstance(func, ast.Name) and func.id in _SIZE_BUILTINS
    return False


def _empty_size(call: ast.Call) -> bool:
    """A literal 0 among the sizes: ``torch.empty(0)``, ``torch.empty((0, 4))``."""
    sizes: list[ast.expr] = list(call.args)
    size = next((kw.value for kw in call.keywords if kw.arg == "size"), None)
    if size is not None:
        sizes.append(size)
    flat: list[ast.expr] = []
    for node in sizes:
        flat.extend(node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node])
    return any(isinstance(n, ast.Constant) and n.value == 0 for n in flat)
