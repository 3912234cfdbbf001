"""The language server's indexing work, run in a separate process (see
project_index.py): parsing a thousand files in a thread would hold the GIL
and slow every lint of the open files down.

Plain functions on plain data (no LSP imports, cheap to spawn): which files
a workspace folder has (the same set and layout ``torchtrap check`` uses),
and their summaries, read from the index cache when unchanged. The editor's
cache lives in the editor's storage or the user's cache directory, one per
workspace folder (``cache_folder``), never in the user's project: opening a
folder must not add a ``.torchtrap_cache/`` to it (``torchtrap check``
keeps its own there, see project/cache.py).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from torchtrap.config import Config
from torchtrap.project.cache import Cache, Entry, entry_key, rules_key
from torchtrap.project.summary import ModuleSummary


@dataclass(frozen=True)
class Layout:
    """Where a file belongs: its project root and dotted module name."""

    root: str
    module: tuple[str, bool]
    config: Config


def discover(folders: list[str]) -> tuple[dict[str, Layout], list[str]]:
    """The Python files of the workspace folders and their project roots'
    importable modules, as ``check`` would index them; and warnings."""
    from torchtrap.checker import project_items
    from torchtrap.discovery import ConfigLookup, iter_python_files

    configs = ConfigLookup()
    warnings: list[str] = []
    files: list[Path] = []
    arg_roots: dict[Path, Path] = {}
    for folder in folders:
        for file in iter_python_files([folder], configs):
            if file.suffix != ".ipynb":
                files.append(file)
                arg_roots[file] = Path(folder)
    items = project_items(files, configs, arg_roots, warnings.append, {Path(f) for f in folders})
    layouts = {
        os.path.abspath(item.path): Layout(item.root, item.module, item.config) for item in items
    }
    return layouts, warnings + configs.warnings


def layout_of(path: str, folder: str) -> Layout | None:
    """The layout of one file of ``folder`` (a file created after the index
    was built); None when ``exclude`` leaves it out."""
    from torchtrap.checker import file_layout
    from torchtrap.discovery import ConfigLookup
    from torchtrap.project.layout import module_name

    config = ConfigLookup()(Path(path).parent)
    if config.is_excluded(path):
        return None
    root, sources = file_layout(Path(path), config, Path(folder))
    return Layout(str(root), module_name(path, sources), config)


def user_cache_dir() -> Path:
    """The platform's per-user cache directory, ``torchtrap`` below it."""
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    return base / "torchtrap"


def cache_folder(folder: str, base: str | None = None) -> Path:
    """The index cache of workspace folder ``folder``: ``$TORCHTRAP_CACHE_DIR``
    when set (shared with ``check``, as before), else a subfolder named
    after the folder (its name and a hash of its path) of ``base`` (the
    editor's storage) or of the user's cache directory."""
    explicit = os.environ.get("TORCHTRAP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    path = os.path.abspath(folder)
    digest = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path))[:40] or "root"
    return (Path(base) if base else user_cache_dir() / "lsp") / f"{name}-{digest}"


# One cache per folder, kept between calls of this (worker) process.
_CACHES: dict[Path, Cache] = {}


def _cache(folder: Path) -> Cache:
    cache = _CACHES.get(folder)
    if cache is None:
        cache = _CACHES[folder] = Cache(folder)
        cache.load()
    return cache


def summarize_files(
    batch: list[tuple[str, Layout]], cache_dir: str | None
) -> list[tuple[str, ModuleSummary | None]]:
    """(path, summary) per file: from the cache when the file is unchanged,
    else parsed (and put in the cache); None for a file that cannot be read
    or parsed."""
    from torchtrap.project.build import summarize_source

    cache = _cache(Path(cache_dir)) if cache_dir else None
    rules = rules_key()
    out: list[tuple[str, ModuleSummary | None]] = []
    for path, layout in batch:
        try:
            data = Path(path).read_bytes()
        except OSError:  # deleted or unreadable meanwhile
            out.append((path, None))
            continue
        key = entry_key(data, layout.config, layout.module, rules) if cache else ""
        entry = cache.get(path, key) if cache else None
        if entry is not None:
            out.append((path, entry.summary))
            continue
        summary = summarize_source(data, path, layout.module)
        if cache is not None:
            cache.put(path, Entry(key, summary, None))
        out.append((path, summary))
    return out


def summarize_packed(batch: list[tuple[str, Layout]], cache_dir: str | None) -> bytes:
    """``summarize_files``, pickled here: the server receives plain bytes
    while it builds (no objects for its collector to scan in the middle of
    an open file's lint) and unpacks them all at once when the index is
    ready (see ``unpack``)."""
    return pickle.dumps(summarize_files(batch, cache_dir), pickle.HIGHEST_PROTOCOL)


def unpack(blobs: list[bytes]) -> list[tuple[str, ModuleSummary | None]]:
    """The summaries of ``summarize_packed`` batches, frozen out of the
    garbage collector (``gc.freeze``): thousands of long-lived objects
    (they hold no cycles; a replaced summary is still freed by reference
    counting) that every later collection would otherwise scan. Measured:
    left to the collector, the first collection after unpacking the bench
    corpus took 55-76 ms, in the middle of an open file's lint."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        results = [item for blob in blobs for item in pickle.loads(blob)]
        gc.freeze()
        return results
    finally:
        if enabled:
            gc.enable()


def save_caches() -> list[str]:
    """Write what this process added to the caches (merged with what a
    concurrent ``torchtrap check`` wrote, atomically; see cache.py)."""
    warnings: list[str] = []
    for cache in _CACHES.values():
        cache.save()
        warnings.extend(cache.warnings)
    _CACHES.clear()
    return warnings


def quiet() -> None:
    """Worker process initializer: its stdout is the editor's protocol
    stream (inherited), so nothing may ever be written there. (Not niced:
    measured, a lower priority starved the index under load, 23 s instead
    of 6-8 s, and did not make the open file's lints faster.)"""
    import sys

    os.dup2(2, 1)
    sys.stdout = sys.stderr
