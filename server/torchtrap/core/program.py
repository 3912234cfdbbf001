"""The files of a program and their module names."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from torchtrap.core.objects import ModuleObj
from torchtrap.project.layout import module_name
from torchtrap.project.sys_path import applies_to, sys_path_folders

SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
MAX_FILE_BYTES = 2_000_000  # generated code past this size says nothing about calls


@dataclass
class Module:
    obj: ModuleObj
    tree: ast.Module


@dataclass
class Program:
    """Parsed modules by dotted name; what could not be read is in ``skipped``."""

    modules: dict[str, Module] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def add(self, name: str, path: str, is_package: bool, tree: ast.Module) -> Module:
        module = Module(ModuleObj(name, path, is_package), tree)
        self.modules.setdefault(name, module)
        return self.modules[name]

    def find(self, name: str, importer: ModuleObj | None = None) -> Module | None:
        """The module ``import name`` reaches from ``importer``: the absolute
        name first, then beside the importer (how a script's folder is on
        ``sys.path``)."""
        found = self.modules.get(name)
        if found is None and importer is not None:
            package = importer.name if importer.is_package else importer.name.rpartition(".")[0]
            while package and found is None:
                found = self.modules.get(f"{package}.{name}")
                package = package.rpartition(".")[0]
        if found is None and importer is not None and "." in name:
            found = self._by_folder(name, importer.path)
        if found is None and importer is not None:
            found = self._on_sys_path(name, importer.path)
        return found

    def _on_sys_path(self, name: str, importer: str) -> Module | None:
        """A module under a folder a script of the program puts on
        ``sys.path`` by a literal path (``import _init_paths``), for an
        importer under that script's folder."""
        roots = self.__dict__.get("_sys_paths")
        if roots is None or roots[0] != len(self.modules):
            found: list[tuple[str, str]] = []
            for module in self.modules.values():
                if module.obj.path.endswith(".py"):
                    path = module.obj.path
                    found += [(path, f) for f in sys_path_folders(module.tree, path)]
            roots = self.__dict__["_sys_paths"] = (len(self.modules), tuple(found))
        if not roots[1]:
            return None
        by_path = self._path_table()
        rel = name.replace(".", os.sep)
        for adder, root in roots[1]:
            if not applies_to(adder, importer):
                continue
            for candidate in (f"{rel}.py", os.path.join(rel, "__init__.py")):
                hit = by_path.get(os.path.join(root, candidate))
                if hit is not None:
                    return hit
        return None

    def _path_table(self) -> dict[str, Module]:
        by_path: dict[str, Module] | None = self.__dict__.get("_paths")
        if by_path is None or len(by_path) != len(self.modules):
            by_path = self.__dict__["_paths"] = {
                os.path.abspath(m.obj.path): m for m in self.modules.values()
            }
        return by_path

    def _by_folder(self, name: str, importer: str) -> Module | None:
        """A dotted name that starts at a folder above the importer: run as
        ``python -m src.train`` from the repository, ``src/train.py``
        imports ``src.data.sets`` although ``src`` is a source root (the
        project index resolves it the same way)."""
        by_path = self._path_table()
        rel = name.replace(".", os.sep)
        folder = os.path.dirname(os.path.abspath(importer))
        while True:
            for candidate in (f"{rel}.py", os.path.join(rel, "__init__.py")):
                found = by_path.get(os.path.join(folder, candidate))
                if found is not None:
                    return found
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent


def absolute(importer: ModuleObj, level: int, name: str | None) -> str | None:
    """The absolute module name of ``from {'.' * level}{name} import``."""
    if level == 0:
        return name
    parts = importer.name.split(".") if importer.name else []
    if not importer.is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if name:
        base.append(name)
    return ".".join(base) or None


def collect_files(paths: list[str]) -> list[str]:
    """Python files under ``paths``, sorted, each once, links not followed
    into folders already seen (a recursive project stays finite)."""
    found: dict[str, None] = {}
    seen_dirs: set[str] = set()
    for path in paths:
        if os.path.isfile(path):
            found[os.path.abspath(path)] = None
            continue
        for folder, dirs, files in os.walk(path, followlinks=True):
            real = os.path.realpath(folder)
            if real in seen_dirs:
                dirs[:] = []
                continue
            seen_dirs.add(real)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            for name in sorted(files):
                if name.endswith(".py"):
                    found[os.path.abspath(os.path.join(folder, name))] = None
    return list(found)


def load(paths: list[str], root: str) -> Program:
    """Parse every file; a file that cannot be read or parsed is skipped
    with the reason (the rest of the program is still analysed)."""
    program = Program()
    roots = [Path(os.path.abspath(root))]
    for path in collect_files(paths):
        name, is_package = module_name(path, roots)
        if not name:
            name = Path(path).stem
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                program.skipped.append((path, "file too large"))
                continue
            with open(path, "rb") as handle:
                tree = ast.parse(handle.read(), filename=path)
        except (OSError, SyntaxError, ValueError, RecursionError) as error:
            program.skipped.append((path, f"{type(error).__name__}: {error}"))
            continue
        program.add(name, path, is_package, tree)
    return program
