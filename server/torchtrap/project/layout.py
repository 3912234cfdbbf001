"""Where a project starts and what each file's module name is.

Like ruff's ``src``: a file's module name is its path relative to the
deepest source root that contains it. The roots are ``[tool.torchtrap]
src = [...]`` (relative to the pyproject.toml) when set, else the project
root and ``<root>/src``. The project root is the folder of the nearest
pyproject.toml, setup.py, setup.cfg or ``.git`` above the file.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MODULE_SUFFIXES = (".py", ".pyi")


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` with a root marker."""
    folder = start if start.is_dir() else start.parent
    return _marked(str(folder))


@functools.lru_cache(maxsize=4096)
def _marked(folder: str) -> Path | None:
    # One folder at a time, memoised: a thousand files share a few folders.
    if any(os.path.exists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
        return Path(folder)
    up = os.path.dirname(folder)
    return _marked(up) if up != folder else None


def source_roots(
    root: Path, src: tuple[str, ...] = (), config_root: Path | None = None
) -> list[Path]:
    """The folders module names are relative to, deepest first."""
    if src:
        base = config_root or root
        roots = [Path(os.path.normpath(base / entry)) for entry in src]
    else:
        roots = [root, root / "src"]
    return sorted(dict.fromkeys(roots), key=lambda p: len(p.parts), reverse=True)


def module_name(path: Path | str, roots: list[Path]) -> tuple[str, bool]:
    """(dotted module name, is a package ``__init__``); ("", False) for a
    file outside every root or whose path is not a valid dotted name."""
    text = os.fspath(path)
    for root in roots:
        prefix = os.path.join(os.fspath(root), "")
        if not text.startswith(prefix):
            continue
        parts = text[len(prefix) :].split(os.sep)
        if not parts[-1].endswith(MODULE_SUFFIXES):
            return "", False
        parts[-1] = parts[-1].rsplit(".", 1)[0]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        if not parts or not all(p.isidentifier() for p in parts):
            return "", is_package
        return ".".join(parts), is_package
    return "", False
