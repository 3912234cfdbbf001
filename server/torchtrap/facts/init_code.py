"""Initialisation code: a module's ``__init__``, the functions that set or
reset its weights (``reset_parameters``, ``init_weights``, ``weights_init``
passed to ``model.apply``), and factories that build a module and set its
weights. No forward pass has run there, so no autograd graph exists yet."""

from __future__ import annotations

import ast
import re

from torchtrap.facts.imports import ImportTable
from torchtrap.facts.index import ancestors

# Lowercased, leading underscores stripped: `__init__`, `init_weights`,
# `_init_weights`, `weights_init`, `weight_init`, `initialize_weights`,
# `reset_parameters`, `reset_params`, `_reset_parameters`.
_INIT_NAME = re.compile(r"(init(iali[sz]e)?)(_|$)|(^|_)init$|^reset(_|$)")


def is_init_name(name: str) -> bool:
    return name == "__init__" or bool(_INIT_NAME.search(name.lower().lstrip("_")))


def in_init_code(node: ast.AST) -> bool:
    """Whether ``node`` is inside a function that initialises weights."""
    return any(
        isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_init_name(anc.name)
        for anc in ancestors(node)
    )


def _built_here(name: str, fn: ast.AST, imports: ImportTable) -> bool:
    """``name`` is bound in ``fn`` to a ``torch.nn`` constructor call
    (``m = nn.Linear(...)``): a module (or parameter) no forward has used."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        if not any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            continue
        qualname = imports.qualname(node.value.func) or ""
        if qualname.startswith("torch.nn.") and not qualname.startswith("torch.nn.functional."):
            return True
    return False


def on_fresh_module(owner: ast.expr, at: ast.AST, imports: ImportTable) -> bool:
    """``m.weight`` (or a ``param`` of ``m.parameters()``) where the same
    function built ``m = nn.Linear(...)``: a factory such as fairseq's
    ``def Linear(...): m = nn.Linear(...); m.weight.data.normal_(); return m``."""
    fn = next(
        (a for a in ancestors(at) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    root = owner
    while isinstance(root, ast.Attribute):
        root = root.value
    if fn is None or not isinstance(root, ast.Name):
        return False
    if _built_here(root.id, fn, imports):
        return True
    for anc in ancestors(at):
        if anc is fn:
            break
        if not isinstance(anc, ast.For):
            continue
        bound = {n.id for n in ast.walk(anc.target) if isinstance(n, ast.Name)}
        it = anc.iter
        if (
            root.id in bound
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Attribute)
            and it.func.attr in ("parameters", "named_parameters")
            and isinstance(it.func.value, ast.Name)
            and _built_here(it.func.value.id, fn, imports)
        ):
            return True
    return False
