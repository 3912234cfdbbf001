"""``.torchtrap_cache/``: summaries and findings of unchanged files.

One file per tool version (``<version>/check.pickle``) maps each file's
absolute path to an :class:`Entry` keyed by a hash of the file's bytes, the
config and the module name. Findings that depended on other files (a rule
asked ``ctx.project``) are valid only for the same project digest.

Safe under concurrent runs: written to a temporary file then moved into
place with ``os.replace`` (readers see the old or the new file, never half
of one). A cache that cannot be read (corrupt, another version, written by
something else) gives one warning and is rebuilt. Only TorchTrap's own
plain data classes are unpickled (a cache file from an untrusted checkout
cannot run code).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchtrap import __version__
from torchtrap.config import Config
from torchtrap.findings import Finding
from torchtrap.project.summary import SUMMARY_VERSION, ModuleSummary

CACHE_DIR_NAME = ".torchtrap_cache"
_FORMAT = 1
_HEADER = ("torchtrap-cache", _FORMAT, __version__, SUMMARY_VERSION)

_ALLOWED = {
    "torchtrap.findings": {
        "Finding",
        "Fix",
        "Edit",
        "Range",
        "Position",
        "RelatedLocation",
        "Severity",
        "Applicability",
        "_fix_with_edits",
    },
    "torchtrap.project.summary": {
        "ModuleSummary",
        "ClassFact",
        "FunctionFact",
        "LoaderFact",
        "ArgFact",
        "CallSite",
        "Span",
    },
    "torchtrap.project.passing": {"PassingSite", "PassedArg"},
    "torchtrap.project.cache": {"Entry"},
}


@dataclass
class Entry:
    key: str
    summary: ModuleSummary | None
    findings: list[Finding] | None  # None: not linted, or it needed the project
    project_digest: str | None = None  # findings made with this project
    project_findings: list[Finding] | None = None


def rules_key() -> str:
    """The rule set part of an entry's key: ``check`` and the language
    server share entries, so both must compute it here."""
    from torchtrap.rules import ALL_RULES

    return repr([(r.code, r.__module__, r.__qualname__) for r in ALL_RULES])


def entry_key(data: bytes, config: Config, module: tuple[str, bool], rules: str = "") -> str:
    """The file's bytes, its config, its module name and the rule set
    (``rules``: e.g. the codes and classes of ALL_RULES)."""
    h = hashlib.blake2b(data, digest_size=20)
    h.update(_config_key(config, rules))
    h.update(repr(module).encode("utf-8", "replace"))
    return h.hexdigest()


_CONFIG_KEYS: dict[int, tuple[Config, str, bytes]] = {}


def _config_key(config: Config, rules: str) -> bytes:
    # repr(Config) per file showed up in profiles: once per config object.
    found = _CONFIG_KEYS.get(id(config))
    if found is None or found[0] is not config or found[1] != rules:
        found = (config, rules, repr((config, rules)).encode("utf-8", "replace"))
        _CONFIG_KEYS[id(config)] = found
    return found[2]


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"unexpected {module}.{name} in the cache")


def default_folder() -> Path:
    return Path(os.environ.get("TORCHTRAP_CACHE_DIR") or CACHE_DIR_NAME)


class Cache:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_folder()
        self.file = self.folder / __version__ / "check.pickle"
        self.entries: dict[str, Entry] = {}
        self.warnings: list[str] = []
        self._dirty = False

    def load(self) -> None:
        self.entries = self._read()

    def _read(self) -> dict[str, Entry]:
        try:
            data = self.file.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as err:
            self._warn(f"cannot read the cache {self.file}: {err.strerror or err}; rebuilding it")
            return {}
        try:
            header, entries = _SafeUnpickler(io.BytesIO(data)).load()
            if header != _HEADER or not isinstance(entries, dict):
                raise ValueError("another version")
            if not all(isinstance(e, Entry) for e in entries.values()):
                raise ValueError("unexpected content")
        except Exception as err:  # any damage to a cache file means: rebuild
            self._warn(f"the cache {self.file} is unreadable ({err}); rebuilding it")
            return {}
        return entries

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def get(self, path: str, key: str) -> Entry | None:
        entry = self.entries.get(path)
        return entry if entry is not None and entry.key == key else None

    def put(self, path: str, entry: Entry) -> None:
        self.entries[path] = entry
        self._dirty = True

    def save(self) -> None:
        """Merge with what another run may have written meanwhile, then
        replace the file atomically."""
        if not self._dirty:
            return
        merged = self._read() if self.file.exists() else {}
        merged.update(self.entries)
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.folder / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Created by torchtrap automatically.\n*\n")
            fd, tmp = tempfile.mkstemp(prefix="check.", suffix=".tmp", dir=self.file.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    pickle.dump((_HEADER, merged), out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, self.file)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as err:
            self._warn(f"cannot write the cache in {self.folder}: {err.strerror or err}")
        self._dirty = False


def clean(folder: Path | None = None) -> bool:
    """Remove the cache folder; True when there was one."""
    target = folder if folder is not None else default_folder()
    if not target.is_dir():
        return False
    shutil.rmtree(target, ignore_errors=True)
    return True
