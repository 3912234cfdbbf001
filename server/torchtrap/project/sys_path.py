"""Folders a script puts on ``sys.path`` by a path written in the code.

Detectron-era projects run ``import _init_paths`` first, whose module does
``add_path(osp.join(osp.dirname(__file__), 'lib'))``; after it,
``from datasets.coco import COCO`` names ``lib/datasets/coco.py``. Only a
path the file's own text fixes is read: built from ``__file__`` and string
literals (``os.path.join``/``dirname``/``abspath``, ``pathlib.Path`` with
``.parent`` and ``/``), at the module's top level, directly or through a
module-level function of the same file that inserts its parameter. A path
read from the environment or the command line is unknown, and a folder
that does not exist is dropped.
"""

from __future__ import annotations

import ast
import os

_PATH_FUNCS = frozenset({"dirname", "abspath", "realpath", "normpath", "join"})
_PATH_MODULES = frozenset({"os.path", "osp", "path", "posixpath"})
_PATH_PROPS = frozenset({"parent"})
_PATH_METHODS = frozenset({"resolve", "absolute"})


def sys_path_folders(tree: ast.Module, path: str) -> tuple[str, ...]:
    """The existing folders (absolute) that ``tree``'s top level adds to
    ``sys.path``, in order; not the file's own folder or one above it."""
    here = os.path.abspath(path)
    env: dict[str, str | None] = {}
    adders: dict[str, int] = {}  # a function inserting its parameter: name -> position
    found: list[str] = []
    for stmt in _top(tree.body):
        if isinstance(stmt, ast.FunctionDef):
            position = _inserts_parameter(stmt)
            if position is not None:
                adders[stmt.name] = position
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                # assigned twice: unknown from then on
                env[target.id] = None if target.id in env else _evaluate(stmt.value, here, env)
            continue
        for call in _calls(stmt):
            for arg in _inserted(call, adders):
                folder = _evaluate(arg, here, env)
                if folder is None:
                    continue
                if not os.path.isabs(folder):
                    folder = os.path.join(os.path.dirname(here), folder)
                folder = os.path.normpath(folder)
                if _ancestor_or_self(folder, os.path.dirname(here)):
                    continue  # `sys.path.insert(0, '..')`: dotted names climb there already
                if os.path.isdir(folder) and folder not in found:
                    found.append(folder)
    return tuple(found)


def applies_to(adder: str, importer: str) -> bool:
    """Whether the folders the module at ``adder`` puts on ``sys.path`` are
    read for an import in ``importer``: a module under the adder's folder
    (the scripts beside ``_init_paths.py`` and what they import), not the
    whole project (``docs/conf.py`` adding the package is the docs')."""
    return _ancestor_or_self(os.path.dirname(os.path.abspath(adder)), os.path.abspath(importer))


def _ancestor_or_self(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _top(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with the bodies of top-level ``if``/``try``
    (``if __name__ == "__main__":``, ``try: import x``) in order."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            out += _top(stmt.body) + _top(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            out += _top(stmt.body)
        else:
            out.append(stmt)
    return out


def _calls(stmt: ast.stmt) -> list[ast.Call]:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return [stmt.value]
    return []


def _sys_path_method(call: ast.Call) -> str | None:
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "path"
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "sys"
        and func.attr in ("insert", "append")
    ):
        return func.attr
    return None


def _path_argument(call: ast.Call) -> ast.expr | None:
    method = _sys_path_method(call)
    if method == "insert" and len(call.args) == 2:
        return call.args[1]
    if method == "append" and len(call.args) == 1:
        return call.args[0]
    return None


def _inserted(call: ast.Call, adders: dict[str, int]) -> list[ast.expr]:
    arg = _path_argument(call)
    if arg is not None:
        return [arg]
    if isinstance(call.func, ast.Name) and call.func.id in adders:
        position = adders[call.func.id]
        if position < len(call.args):
            return [call.args[position]]
    return []


def _inserts_parameter(fn: ast.FunctionDef) -> int | None:
    """The position of the parameter ``fn`` puts on ``sys.path``
    (``def add_path(path): if path not in sys.path: sys.path.insert(0, path)``)."""
    params = [a.arg for a in fn.args.args]
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            arg = _path_argument(node)
            if isinstance(arg, ast.Name) and arg.id in params:
                return params.index(arg.id)
    return None


def _evaluate(node: ast.expr, here: str, env: dict[str, str | None]) -> str | None:
    """The path string ``node`` holds, or None when the text does not fix it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return here
        return env.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr in _PATH_PROPS:
        inner = _evaluate(node.value, here, env)
        return os.path.dirname(os.path.normpath(inner)) if inner is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path(...) / "lib"
        left, right = _evaluate(node.left, here, env), _evaluate(node.right, here, env)
        return os.path.join(left, right) if left is not None and right is not None else None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    func = node.func
    args = [_evaluate(a, here, env) for a in node.args]
    if any(a is None for a in args):
        return None
    values = [a for a in args if a is not None]
    if isinstance(func, ast.Name) and func.id in ("Path", "str") and len(values) == 1:
        return values[0]
    if isinstance(func, ast.Attribute) and func.attr in _PATH_METHODS and not values:
        inner = _evaluate(func.value, here, env)
        return os.path.abspath(inner) if inner is not None else None
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in _PATH_FUNCS
        and ast.unparse(func.value) in _PATH_MODULES
        and values
    ):
        return None
    if func.attr == "join":
        return os.path.join(*values)
    if len(values) != 1:
        return None
    if func.attr == "dirname":
        return os.path.dirname(values[0])
    return os.path.normpath(os.path.join(os.path.dirname(here), values[0]))
