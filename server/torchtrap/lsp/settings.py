"""Editor settings (the ``torchtrap`` settings object) and the config in
force for a file.

Precedence, lowest to highest: a rule's default severity -> the nearest
``pyproject.toml`` with ``[tool.torchtrap]`` (re-read when it changes) ->
the editor settings (``initializationOptions``, then each
``workspace/didChangeConfiguration``). Editor ``select`` replaces the
project's when non-empty (an empty list means "not set"), ``ignore`` adds
to it, ``severity`` entries win over the project's for the same key (the
longest matching key still wins overall), ``torchVersion`` overrides
``torch-version``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchtrap import RULE_DOCS_URL
from torchtrap.config import Config, load_config
from torchtrap.findings import Severity

log = logging.getLogger("torchtrap.lsp")

DEFAULT_DEBOUNCE_MS = 150
DEFAULT_PROBE_TIMEOUT = 120.0
DEFAULT_DOCS_BASE_URL = RULE_DOCS_URL
# Bigger files (UTF-8 bytes; a notebook's code cells together) are not
# linted as you type: ~1.2 s for 1 MB on the 2-core test machine, see
# docs/benchmarks.md. 0: no limit.
DEFAULT_MAX_FILE_SIZE = 1_000_000
NOTIFICATION_LEVELS = ("off", "onError", "onWarning", "always")
DIAGNOSTIC_MODES = ("openFilesOnly", "workspace")  # Pylance's names


@dataclass(frozen=True)
class Settings:
    enable: bool = True
    run: str = "onType"  # or "onSave"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT
    probe_python: str | None = None  # None: the server's own interpreter
    show_notifications: str = "onError"
    torch_version: str | None = None
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    docs_base_url: str = DEFAULT_DOCS_BASE_URL
    unsafe_fixes: bool | None = None  # None: pyproject's unsafe-fixes decides
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    # TT000 in the editor (as ruff's showSyntaxErrors, but off: while typing,
    # the editor's Python support reports them already). The CLI always does.
    show_syntax_errors: bool = False
    # "workspace": the indexed files' findings are published too, not only
    # the open files' (see workspace_diagnostics.py).
    diagnostic_mode: str = "openFilesOnly"
    # Where the project index keeps its cache (the editor's storage); None:
    # the user's cache directory. Never the workspace folder.
    cache_directory: str | None = None
    problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def on_type(self) -> bool:
        return self.run != "onSave"

    @property
    def interpreter(self) -> str:
        return self.probe_python or sys.executable

    def notify(self, kind: str) -> bool:
        """Whether a notification of ``kind`` (error|warning|info) is shown."""
        level = self.show_notifications
        if level == "always":
            return True
        if level == "onWarning":
            return kind in ("error", "warning")
        return level == "onError" and kind == "error"

    def docs_url(self, code: str) -> str:
        base = self.docs_base_url
        if "{code}" in base:
            return base.replace("{code}", code)
        return base.rstrip("/") + f"/{code}.md"

    def apply(self, config: Config) -> Config:
        """The project config with these settings on top."""
        return config.merged(
            select=self.select or None,
            ignore=self.ignore,
            severity=dict(self.severity),
            torch_version=self.torch_version,
            unsafe_fixes=self.unsafe_fixes,
            show_hints=True,  # faint in the editor, never hidden
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "enable": self.enable,
            "run": self.run,
            "select": list(self.select),
            "ignore": list(self.ignore),
            "severity": {k: v.value for k, v in self.severity},
            "probe": {"timeout": self.probe_timeout, "python": self.interpreter},
            "showNotifications": self.show_notifications,
            "torchVersion": self.torch_version,
            "debounceMs": self.debounce_ms,
            "docsBaseUrl": self.docs_base_url,
            "unsafeFixes": self.unsafe_fixes,
            "maxFileSize": self.max_file_size,
            "showSyntaxErrors": self.show_syntax_errors,
            "diagnosticMode": self.diagnostic_mode,
            "cacheDirectory": self.cache_directory,
        }


def parse_settings(raw: Any, base: Settings | None = None) -> Settings:
    """Build Settings from the client's object; a bad value keeps the
    default and is reported in ``problems`` (never an exception). Accepts
    the object itself or ``{"torchtrap": {...}}``."""
    base = base or Settings()
    if isinstance(raw, Mapping) and isinstance(raw.get("torchtrap"), Mapping):
        raw = raw["torchtrap"]
    if not isinstance(raw, Mapping):
        return base
    problems: list[str] = []
    values: dict[str, Any] = {}

    def codes(key: str) -> None:
        if key not in raw or raw[key] is None:
            return
        value = raw[key]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"torchtrap.{key} must be a list of rule codes; ignored")
            return
        values[key] = tuple(v.strip().upper() for v in value if v.strip())

    if isinstance(raw.get("enable"), bool):
        values["enable"] = raw["enable"]
    if "showSyntaxErrors" in raw and raw["showSyntaxErrors"] is not None:
        if isinstance(raw["showSyntaxErrors"], bool):
            values["show_syntax_errors"] = raw["showSyntaxErrors"]
        else:
            problems.append("torchtrap.showSyntaxErrors must be true or false")
    if "run" in raw:
        if raw["run"] in ("onType", "onSave"):
            values["run"] = raw["run"]
        else:
            problems.append(f"torchtrap.run must be onType or onSave, not {raw['run']!r}")
    codes("select")
    codes("ignore")
    if isinstance(raw.get("severity"), Mapping):
        severity = []
        for key, value in raw["severity"].items():
            try:
                severity.append((str(key).strip().upper(), Severity.parse(str(value))))
            except ValueError:
                problems.append(f"torchtrap.severity[{key!r}]: unknown severity {value!r}")
        values["severity"] = tuple(severity)
    probe = raw.get("probe")
    if isinstance(probe, Mapping):
        timeout = probe.get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            values["probe_timeout"] = float(timeout)
        elif timeout is not None:
            problems.append("torchtrap.probe.timeout must be a positive number")
        python = probe.get("python") or probe.get("interpreter")
        if isinstance(python, str) and python.strip():
            values["probe_python"] = python.strip()
    notifications = raw.get("showNotifications")
    if notifications is True or notifications is False:
        values["show_notifications"] = "always" if notifications else "off"
    elif notifications in NOTIFICATION_LEVELS:
        values["show_notifications"] = notifications
    torch_version = raw.get("torchVersion")
    if isinstance(torch_version, str):
        values["torch_version"] = torch_version.strip() or None
    debounce = raw.get("debounceMs")
    if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and debounce >= 0:
        values["debounce_ms"] = int(debounce)
    if "unsafeFixes" in raw:
        unsafe = raw["unsafeFixes"]
        if isinstance(unsafe, bool) or unsafe is None:
            values["unsafe_fixes"] = unsafe
        else:
            problems.append("torchtrap.unsafeFixes must be true, false or null")
    if "maxFileSize" in raw:
        size = raw["maxFileSize"]
        if isinstance(size, (int, float)) and not isinstance(size, bool) and size >= 0:
            values["max_file_size"] = int(size)
        elif size is not None:
            problems.append("torchtrap.maxFileSize must be a number of bytes (0: no limit)")
    if "diagnosticMode" in raw and raw["diagnosticMode"] is not None:
        if raw["diagnosticMode"] in DIAGNOSTIC_MODES:
            values["diagnostic_mode"] = raw["diagnosticMode"]
        else:
            problems.append("torchtrap.diagnosticMode must be openFilesOnly or workspace")
    cache = raw.get("cacheDirectory")
    if isinstance(cache, str) and cache.strip():
        values["cache_directory"] = cache.strip()
    docs = raw.get("docsBaseUrl")
    if isinstance(docs, str) and docs.strip():
        values["docs_base_url"] = docs.strip()
    from dataclasses import replace

    return replace(base, problems=tuple(problems), **values)


class ConfigCache:
    """``load_config`` per folder, re-read when a ``pyproject.toml`` in the
    folder or above it appears, disappears or changes (by mtime and size),
    so an edit is honoured even by clients that send no file events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[Any, ...], Config]] = {}

    def get(self, path: str | None, fallback_folder: str | None = None) -> Config:
        folder = Path(path).parent if path else Path(fallback_folder) if fallback_folder else None
        if folder is None:
            return Config()
        signature = _signature(folder)
        with self._lock:
            cached = self._cache.get(folder)
            if cached is not None and cached[0] == signature:
                return cached[1]
        try:
            config = load_config(folder)
        except Exception:  # a config problem must never stop linting
            log.exception("cannot load the config for %s", folder)
            config = Config()
        with self._lock:
            self._cache[folder] = (signature, config)
        return config

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


def _signature(folder: Path) -> tuple[Any, ...]:
    out = []
    current = os.path.abspath(folder)
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        try:
            st = os.stat(candidate)
            out.append((candidate, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
        parent = os.path.dirname(current)
        if parent == current:
            return tuple(out)
        current = parent
