"""``[tool.torchtrap]`` settings: which rules run, at what severity, where.

Precedence (lowest to highest): rule defaults → the nearest pyproject.toml
with a ``[tool.torchtrap]`` table → front-end overrides (CLI flags, editor
settings), applied with :meth:`Config.merged`.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchtrap.findings import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KNOWN_KEYS = {
    "select",
    "ignore",
    "per-file-ignores",
    "severity",
    "exclude",
    "extend-exclude",
    "torch-version",
    "unsafe-fixes",
    "numpy-version",
    "src",
    "show-hints",
}

DEFAULT_EXCLUDE = (
    ".venv",
    "venv",
    "node_modules",
    "build",
    "dist",
    "site-packages",
    "__pycache__",
    "__pypackages__",
)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # codes or prefixes; None = every rule
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()
    exclude: tuple[str, ...] = ()
    torch_version: str | None = None
    unsafe_fixes: bool = False  # fix-all / --fix apply unsafe fixes too (as ruff's)
    # A front end's choice, not a [tool.torchtrap] key: whether a batch run
    # keeps each fix's edits (JSON/SARIF print them; the text output needs
    # only titles, and a structural fix's edits cost a libcst parse).
    fix_edits: bool = True
    numpy_version: str | None = None
    # Hint-level findings (modernisation, not bugs) in `check`'s output: off,
    # as Pyright's CLI; they never fail `check`. The editor always shows them.
    show_hints: bool = False
    src: tuple[str, ...] = ()  # source roots for module names, relative to ``root`` (as ruff's)
    root: Path | None = None  # folder of the pyproject.toml it came from
    source: Path | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)

    # -- queries -----------------------------------------------------------
    def is_enabled(self, code: str, path: str | None = None) -> bool:
        if self.select is not None and not _matches(code, self.select):
            return False
        if _matches(code, self.ignore):
            return False
        if path and self.per_file_ignores:
            rel = self.relative(path)
            for pattern, codes in self.per_file_ignores:
                if _glob(rel, pattern) and _matches(code, codes):
                    return False
        return True

    def shows(self, finding_severity: Severity) -> bool:
        """Whether ``check`` reports (and ``--fix`` fixes) a finding of this severity."""
        return self.show_hints or finding_severity is not Severity.HINT

    def severity_for(self, code: str, default: Severity) -> Severity:
        # The longest matching code or prefix wins ("TT101" beats "TT1"); on a
        # tie the later entry wins, so front-end overrides (merged last) win.
        best: tuple[int, Severity] | None = None
        for key, sev in self.severity:
            if code.startswith(key) and (best is None or len(key) >= best[0]):
                best = (len(key), sev)
        return best[1] if best else default

    def is_excluded(self, path: str | Path) -> bool:
        if not self.exclude:  # asked for every file and folder walked
            return False
        rel = self.relative(str(path))
        parts = Path(rel).parts
        for pattern in self.exclude:
            if _glob(rel, pattern) or any(fnmatch.fnmatch(p, pattern) for p in parts):
                return True
        return False

    def relative(self, path: str) -> str:
        if self.root is not None:
            try:
                return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
            except ValueError:
                pass
        return Path(path).as_posix()

    # -- building ----------------------------------------------------------
    def merged(
        self,
        *,
        select: Iterable[str] | None = None,
        extend_select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        severity: Mapping[str, str | Severity] | None = None,
        torch_version: str | None = None,
        unsafe_fixes: bool | None = None,
        fix_edits: bool | None = None,
        show_hints: bool | None = None,
    ) -> Config:
        """This config with a front end's overrides on top."""
        new = self
        if show_hints is not None:
            new = replace(new, show_hints=show_hints)
        if fix_edits is not None:
            new = replace(new, fix_edits=fix_edits)
        if unsafe_fixes is not None:
            new = replace(new, unsafe_fixes=unsafe_fixes)
        if select is not None:
            new = replace(new, select=_codes(select))
        if extend_select:
            new = replace(new, select=(new.select or ()) + _codes(extend_select))
        if ignore:
            new = replace(new, ignore=new.ignore + _codes(ignore))
        if severity:
            extra = tuple((k.upper(), _severity(v)) for k, v in severity.items())
            new = replace(new, severity=new.severity + extra)
        if torch_version:
            new = replace(new, torch_version=torch_version)
        return new


def _codes(values: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip().upper() for v in str(value).split(",") if v.strip())
    return tuple(out)


def _severity(value: str | Severity) -> Severity:
    return value if isinstance(value, Severity) else Severity.parse(value)


def _matches(code: str, selectors: Iterable[str]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in selectors)


def _glob(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    return (
        fnmatch.fnmatch(rel, pattern)
        or fnmatch.fnmatch(rel, pattern + "/*")
        or fnmatch.fnmatch(Path(rel).name, pattern)
    )


def from_table(
    table: Mapping[str, Any], root: Path | None = None, source: Path | None = None
) -> Config:
    """Build a Config from a ``[tool.torchtrap]`` table; problems become
    warnings (shown once by the front end), never exceptions."""
    warnings: list[str] = []
    where = f"{source}: " if source else ""

    def str_list(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            warnings.append(f"{where}[tool.torchtrap] {key} must be a list of strings; ignored")
            return ()
        return tuple(value)

    for key in table:
        if key not in KNOWN_KEYS:
            hint = _closest(key)
            warnings.append(
                f"{where}unknown key {key!r} in [tool.torchtrap]"
                + (f" (did you mean {hint!r}?)" if hint else "")
            )

    select = _codes(str_list("select")) if "select" in table else None
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw_pfi = table.get("per-file-ignores", {})
    if isinstance(raw_pfi, dict):
        for pattern, codes in raw_pfi.items():
            if isinstance(codes, str):
                codes = [codes]
            if isinstance(codes, list):
                per_file.append((pattern, _codes(codes)))
            else:
                warnings.append(f"{where}per-file-ignores[{pattern!r}] must be a list of codes")
    else:
        warnings.append(f"{where}[tool.torchtrap] per-file-ignores must be a table; ignored")

    severity: list[tuple[str, Severity]] = []
    raw_sev = table.get("severity", {})
    if isinstance(raw_sev, dict):
        for code, value in raw_sev.items():
            try:
                severity.append((code.upper(), Severity.parse(str(value))))
            except ValueError:
                warnings.append(
                    f"{where}severity for {code!r} must be error, warning, info or hint, "
                    f"not {value!r}"
                )
    else:
        warnings.append(f"{where}[tool.torchtrap] severity must be a table; ignored")

    torch_version = table.get("torch-version")
    if torch_version is not None and not isinstance(torch_version, str):
        warnings.append(f'{where}torch-version must be a string like "2.3"; ignored')
        torch_version = None

    unsafe_fixes = table.get("unsafe-fixes", False)
    if not isinstance(unsafe_fixes, bool):
        warnings.append(f"{where}unsafe-fixes must be true or false; ignored")
        unsafe_fixes = False

    show_hints = table.get("show-hints", False)
    if not isinstance(show_hints, bool):
        warnings.append(f"{where}show-hints must be true or false; ignored")
        show_hints = False

    numpy_version = table.get("numpy-version")
    if numpy_version is not None and not isinstance(numpy_version, str):
        warnings.append(f'{where}numpy-version must be a string like "1.26"; ignored')
        numpy_version = None

    return Config(
        select=select,
        ignore=_codes(str_list("ignore")),
        per_file_ignores=tuple(per_file),
        severity=tuple(severity),
        exclude=str_list("exclude") + str_list("extend-exclude"),
        torch_version=torch_version,
        unsafe_fixes=unsafe_fixes,
        numpy_version=numpy_version,
        show_hints=show_hints,
        src=str_list("src"),
        root=root,
        source=source,
        warnings=tuple(warnings),
    )


def _closest(key: str) -> str | None:
    import difflib

    match = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
    return match[0] if match else None


# Parsed pyproject.toml files by (path, mtime, size): every folder of a
# checkout looks up through the same few files (a lookup per folder parsed
# the root's pyproject.toml once per folder: 0.3 s of a 1,550-file check).
_TOML: dict[str, tuple[tuple[int, int], dict[str, Any] | Exception]] = {}


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, None when there is none; raises what reading or
    parsing it raised (the same error again while the file is unchanged)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    key = str(path)
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _TOML.get(key)
    if hit is None or hit[0] != stamp:
        data: dict[str, Any] | Exception
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            data = err
        if len(_TOML) > 256:
            _TOML.clear()
        hit = _TOML[key] = (stamp, data)
    if isinstance(hit[1], Exception):
        raise hit[1]
    return hit[1]


def find_pyproject(start: Path, known: dict[Path, Path | None] | None = None) -> Path | None:
    """The nearest pyproject.toml above ``start`` that has [tool.torchtrap].
    ``known``: the answers for resolved folders asked before, filled in as
    the folders are walked up (a walk of ``check`` asks for every folder,
    and each one's parents are the folder before's)."""
    if known is not None and start in known:
        return known[start]
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    walked: list[Path] = []
    found: Path | None = None
    for candidate in (folder, *folder.parents):
        if known is not None and candidate in known:
            found = known[candidate]
            break
        walked.append(candidate)
        path = candidate / "pyproject.toml"
        try:
            data = _read_toml(path)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if data is None:
            continue
        if isinstance(data.get("tool"), dict) and "torchtrap" in data["tool"]:
            found = path
            break
    if known is not None:
        for candidate in walked:
            known[candidate] = found
    return found


def load_config(start: str | Path, known: dict[Path, Path | None] | None = None) -> Config:
    """Config for a file or folder; a broken pyproject gives a warning.
    ``known``: see :func:`find_pyproject`."""
    path = find_pyproject(Path(start), known)
    if path is None:
        return Config()
    try:
        data = _read_toml(path) or {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return Config(warnings=(f"{path}: cannot read: {err}",))
    table = data.get("tool", {}).get("torchtrap", {})
    if not isinstance(table, dict):
        return Config(warnings=(f"{path}: [tool.torchtrap] must be a table",))
    return from_table(table, root=path.parent, source=path)


# -- the project's torch and numpy versions (TT102, TT209 depend on them) ----


def _pin_re(package: str) -> re.Pattern[str]:
    return re.compile(
        rf"""^\s*["']?{package}\s*(?:\[[^\]]*\])?\s*(==|~=|<=|<|>=)\s*v?([0-9]+(?:\.[0-9]+)*)""",
        re.MULTILINE,
    )


_PIN_RES = {package: _pin_re(package) for package in ("torch", "numpy")}


def parse_version(text: str) -> tuple[int, ...] | None:
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not match:
        return None
    return tuple(int(p) for p in match.group(1).split("."))


@functools.lru_cache(maxsize=4)
def installed_version(package: str) -> str | None:
    # Reads package metadata only: importing the package is never needed.
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def installed_torch_version() -> str | None:
    return installed_version("torch")


@functools.lru_cache(maxsize=256)
def pinned_version(folder: Path, package: str) -> str | None:
    return _find_pin(folder, package)


@functools.lru_cache(maxsize=256)
def pinned_torch_version(folder: Path) -> str | None:
    return _find_pin(folder, "torch")


def _find_pin(folder: Path, package: str) -> str | None:
    """An exact or upper-bound pin of ``package`` in requirements*.txt /
    pyproject.toml next to or above ``folder``; a lower bound says nothing
    about the upper."""
    pattern = _PIN_RES.get(package) or _pin_re(re.escape(package))
    for _path, text in _requirement_texts(folder, ("pyproject.toml",)):
        for op, version in pattern.findall(text):
            if op in ("==", "~=", "<=", "<"):
                return version
    return None


def _requirement_texts(folder: Path, others: tuple[str, ...]) -> Iterator[tuple[Path, str]]:
    """The text of each requirements*.txt and of the ``others`` next to or
    above ``folder``, nearest first, up to the repository root."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        names = sorted(candidate.glob("requirements*.txt")) + [candidate / n for n in others]
        for path in names:
            if not path.is_file():
                continue
            try:
                yield path, path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
        if (candidate / ".git").exists():
            break


def resolve_version(
    package: str, configured: str | None, config: Config, path: str | None
) -> tuple[int, ...] | None:
    """The configured version → installed metadata → a pin; None if unknown."""
    if configured:
        return parse_version(configured)
    installed = installed_version(package)
    if installed:
        return parse_version(installed)
    folder = Path(path).parent if path and not path.startswith("<") else config.root
    if folder is not None:
        pinned = (
            pinned_torch_version(folder) if package == "torch" else pinned_version(folder, package)
        )
        if pinned:
            return parse_version(pinned)
    return None


def resolve_torch_version(config: Config, path: str | None) -> tuple[int, ...] | None:
    """config ``torch-version`` → installed torch metadata → a pin; None if unknown."""
    return resolve_version("torch", config.torch_version, config, path)


def resolve_numpy_version(config: Config, path: str | None) -> tuple[int, ...] | None:
    """config ``numpy-version`` → installed numpy metadata → a pin; None if unknown."""
    return resolve_version("numpy", config.numpy_version, config, path)


@dataclass(frozen=True)
class Requirement:
    """A package requirement the project declares: ``torch>=1.10`` on line
    ``line`` of ``path``; ``specs`` are its (operator, version) pairs, empty
    for a bare name."""

    text: str
    path: Path
    line: int
    specs: tuple[tuple[str, str], ...]

    def admits_below(self, version: tuple[int, ...]) -> bool:
        """Does some release older than ``version`` satisfy every specifier?
        A bare name admits any; ``>=``/``~=``/``>``/``==`` raise the floor."""
        floor: tuple[int, ...] | None = None
        for op, text in self.specs:
            if op in (">=", "~=", ">", "==", "==="):
                found = parse_version(text)
                if found is not None and (floor is None or found > floor):
                    floor = found
        return floor is None or floor < version


# `torch>=1.10,<2` in a requirements line, a quoted dependency string, a setup.cfg line.
_REQUIREMENT_RE = re.compile(
    r"""(?:^|["'])[ \t]*torch[ \t]*(?:\[[^\]\n]*\])?[ \t]*"""
    r"""((?:(?:==|~=|>=|<=|!=|>|<|===)[ \t]*[0-9][0-9a-zA-Z.*+!-]*[ \t]*,?[ \t]*)*)"""
    r"""(?=$|["';#])""",
    re.MULTILINE,
)
_SPEC_RE = re.compile(r"(==|~=|>=|<=|!=|>|<|===)\s*([0-9][0-9a-zA-Z.*+!-]*)")
_REQUIREMENT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


@functools.lru_cache(maxsize=256)
def declared_requirement(folder: Path, package: str = "torch") -> Requirement | None:
    """The project's declared torch requirement: the first in
    requirements*.txt, pyproject.toml, setup.py or setup.cfg next to or above
    ``folder`` (up to the repository root), bare or with its range."""
    if package != "torch":
        return None
    for path, text in _requirement_texts(folder, _REQUIREMENT_FILES):
        for match in _REQUIREMENT_RE.finditer(text):
            start = match.start() + (1 if match.group(0)[:1] in "\"'" else 0)
            line_start = text.rfind("\n", 0, start) + 1
            if text[line_start:start].lstrip().startswith("#"):
                continue
            specs = tuple(_SPEC_RE.findall(match.group(1)))
            shown = "torch" + ",".join(f"{op}{v}" for op, v in specs)
            line = text.count("\n", 0, start) + 1
            return Requirement(shown, path, line, specs)
    return None
