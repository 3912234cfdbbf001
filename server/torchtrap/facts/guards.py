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


def _hasattr_of(test: ast.expr, attribute: str) -> bool | None:
    """True for ``hasattr(x, "attr")``, False for ``not hasattr(x, "attr")``,
    None for any other test."""
    negated = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = True, test.operand
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "hasattr"
        and len(test.args) == 2
        and isinstance(test.args[1], ast.Constant)
        and test.args[1].value == attribute
    ):
        return not negated
    return None


def fallback_for(node: ast.AST, attribute: str) -> bool:
    """Is ``node`` the fallback of a feature check, run only when the newer
    API is missing: the ``else`` of ``if hasattr(m, "attribute"):`` or the
    body of ``if not hasattr(m, "attribute"):`` (also as ``x if ... else y``)?"""
    child: ast.AST = node
    for anc in ancestors(node):
        if isinstance(anc, (ast.If, ast.IfExp)):
            has = _hasattr_of(anc.test, attribute)
            in_else = child in anc.orelse if isinstance(anc, ast.If) else child is anc.orelse
            in_body = child in anc.body if isinstance(anc, ast.If) else child is anc.body
            if (has is True and in_else) or (has is False and in_body):
                return True
        if isinstance(anc, _FUNCTIONS):
            return False
        child = anc
    return False
