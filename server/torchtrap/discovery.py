"""Which files ``torchtrap check`` looks at."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from torchtrap.config import DEFAULT_EXCLUDE, Config

SUFFIXES = (".py", ".pyi", ".ipynb")


def iter_python_files(
    paths: list[str], config_for: ConfigLookup, *, force_exclude: bool = False
) -> Iterator[Path]:
    """Files named on the command line are always checked (as in ruff),
    unless ``force_exclude`` (pre-commit names every staged file); folders
    are walked, skipping hidden ones, virtualenvs, build output and
    ``exclude`` patterns."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if force_exclude and config_for(path.parent).is_excluded(path):
                continue
            if path not in seen:
                seen.add(path)
                yield path
            continue
        for folder, dirs, files in os.walk(path):
            config = config_for(Path(folder))
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d not in DEFAULT_EXCLUDE
                and not _is_venv(Path(folder, d))
                and not config.is_excluded(Path(folder, d))
            )
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    candidate = Path(folder, name)
                    if candidate not in seen and not config.is_excluded(candidate):
                        seen.add(candidate)
                        yield candidate


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


class ConfigLookup:
    """The nearest [tool.torchtrap] per folder, read once per folder."""

    def __init__(self, overrides: dict[str, object] | None = None) -> None:
        from torchtrap.config import load_config

        self._load = load_config
        self._cache: dict[Path, Config] = {}
        self._asked: dict[Path, Config] = {}  # by the path as asked, unresolved
        self._pyprojects: dict[Path, Path | None] = {}  # config.find_pyproject's
        self.overrides = overrides or {}
        self.warnings: list[str] = []

    def __call__(self, folder: Path) -> Config:
        # Discovery and the project's layout ask for the same folders:
        # resolving the path (a system call per component) once is enough.
        hit = self._asked.get(folder)
        if hit is not None:
            return hit
        asked = folder
        folder = folder.resolve()
        if folder not in self._cache:
            config = self._load(folder, self._pyprojects)
            if config.source is not None and config.source not in {
                c.source for c in self._cache.values()
            }:
                self.warnings.extend(config.warnings)
            elif config.source is None:
                self.warnings.extend(w for w in config.warnings if w not in self.warnings)
            self._cache[folder] = config.merged(**self.overrides)  # type: ignore[arg-type]
        found = self._asked[asked] = self._cache[folder]
        return found
