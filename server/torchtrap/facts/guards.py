"""Code that only runs on old versions, or that expects a missing attribute.

Legacy-API rules (TT208-TT210) stay silent on lines that compatibility code
puts behind a version check (``if sys.version_info[0] == 2:``,
``if torch.__version__ < "0.4":``, ``if six.PY2:``) or inside a ``try:``
whose handler catches AttributeError / ImportError (the fallback is there).
"""

from __future__ import annotations

import ast

from torchtrap.facts.index import ancestors, walk

_VERSION_WORDS = ("version", "PY2", "PY3", "PY27")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _mentions_version(test: ast.expr) -> bool:
    for node in walk(test):
        name = (
            node.attr
            if isinstance(node, ast.Attribute)
            else node.id
            if isinstance(node, ast.Name)
            else None
        )
        if name is not None and any(word in name for word in _VERSION_WORDS):
            return True
    return False


def _catches(handler: ast.ExceptHandler, names: tuple[str, ...]) -> bool:
    if handler.type is None:
        return False  # a bare except swallows anything: no sign of a fallback
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        (isinstance(t, ast.Name) and t.id in names)
        or (isinstance(t, ast.Attribute) and t.attr in names)
        for t in types
    )


def compatibility_guarded(node: ast.AST, errors: tuple[str, ...] = ("AttributeError",)) -> bool:
    """Is ``node`` under a version check, or in a ``try:`` body whose handler
    catches one of ``errors``, within its function?"""
    child: ast.AST = node
    for anc in ancestors(node):
        if isinstance(anc, (ast.If, ast.IfExp)) and _mentions_version(anc.test):
            return True
        if (
            isinstance(anc, ast.Try)
            and any(child is s for s in anc.body)
            and any(_catches(h, errors) for h in anc.handlers)
        ):
            return True
        if isinstance(anc, _FUNCTIONS):
            return False
        child = anc
    return False
