"""Initialisation code: a module's ``__init__`` and the functions that set
or reset its weights (``reset_parameters``, ``init_weights``,
``weights_init`` passed to ``model.apply``). No forward pass has run there,
so no autograd graph exists yet."""

from __future__ import annotations

import ast
import re

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
