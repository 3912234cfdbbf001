"""An expression's shape for comparing two expressions.

``ast.dump`` would do, but it formats through a recursive closure: every
call leaves a reference cycle that only a garbage collection frees, between
two keystrokes in the editor (``tests/core/test_no_garbage_cycles.py``)."""

from __future__ import annotations

import ast


def shape(node: ast.AST) -> str:
    """``ast.dump(node)``: its fields, not its positions."""
    return _shape(node)


def _shape(value: object) -> str:
    if isinstance(value, ast.AST):
        fields = ", ".join(f"{name}={_shape(getattr(value, name, None))}" for name in value._fields)
        return f"{type(value).__name__}({fields})"
    if isinstance(value, list):
        return "[" + ", ".join(_shape(item) for item in value) + "]"
    return repr(value)
