"""Building a project index from files (for ``check`` and the language server).

- :func:`layout_for`: a file's project root and source roots (``src``).
- :func:`module_for`: its dotted module name under those roots.
- :func:`summarize_source`: parse + summary only (a file that is indexed
  but not linted, e.g. a module the checked files import).
- :func:`project_files`: the importable modules under a project root.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

from torchtrap.config import DEFAULT_EXCLUDE, Config
from torchtrap.project.layout import find_root, module_name, source_roots
from torchtrap.project.summary import ModuleSummary, summarize
from torchtrap.source import SourceText, UndecodableSource, decode_source

# A project root with more modules than this is indexed only in part
# (the files being checked always are); `check` warns once.
MAX_PROJECT_FILES = 20_000


def layout_for(path: Path, config: Config) -> tuple[Path, list[Path]]:
    """(project root, source roots deepest first) for the file at ``path``."""
    path = Path(os.path.abspath(path))
    root = config.root or find_root(path) or path.parent
    return root, source_roots(root, config.src, config.root)


def module_for(path: Path, config: Config) -> tuple[str, bool]:
    """(dotted module name, is a package) of the file at ``path``."""
    _, roots = layout_for(path, config)
    return module_name(Path(os.path.abspath(path)), roots)


def summarize_source(
    data: bytes | str, path: str, module: tuple[str, bool]
) -> ModuleSummary | None:
    """The summary of a file's source; None when it cannot be parsed."""
    try:
        text = data if isinstance(data, str) else decode_source(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=path)
        return summarize(tree, SourceText(text), path, module[0], module[1])
    except (UndecodableSource, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def project_files(root: Path, config: Config, limit: int = MAX_PROJECT_FILES) -> Iterator[Path]:
    """The ``.py`` files under ``root`` (sorted; hidden folders, virtualenvs,
    build output and ``exclude`` skipped; symlinked folders not followed,
    so a symlink loop cannot trap the walk; unreadable folders skipped)."""
    count = 0
    for folder, dirs, files in os.walk(root, onerror=lambda err: None):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in DEFAULT_EXCLUDE
            and not os.path.isfile(os.path.join(folder, d, "pyvenv.cfg"))
            and not config.is_excluded(Path(folder, d))
        )
        for name in sorted(files):
            if name.endswith((".py", ".pyi")):
                candidate = Path(folder, name)
                if not config.is_excluded(candidate):
                    count += 1
                    if count > limit:
                        return
                    yield candidate
