"""Config files a program reads by a literal path: YAML, JSON, TOML.

Reading, never executing: YAML goes through PyYAML's safe loader when it
is installed, else through a small reader of nested ``key: value``
mappings (enough for the numbers a training config holds); JSON and TOML
through the standard library. Each scalar comes back with the line it is
written on, so a finding can say where a worker count comes from.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

MAX_CONFIG_BYTES = 256_000  # a hand-written config; past this it is data
MAX_SCALARS = 2_000
UP = 3  # folders above the reading file where a relative path may start (the repo root)
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


@dataclass(frozen=True)
class Scalar:
    value: object
    line: int  # 1-based, 0 when not found
    file: str  # the file's name, for messages


# A parsed config: dicts and lists of Scalars.
Tree = dict[str, "object"]


def find(reader: str, relative: str, names: tuple[str, ...] = ("",)) -> str | None:
    """The file ``relative`` (plus each of ``names``) names, from the
    reading file's folder or a few folders above it."""
    if not relative or "\x00" in relative:
        return None
    folder = os.path.dirname(os.path.abspath(reader))
    for _ in range(UP + 1):
        for name in names:
            path = os.path.normpath(os.path.join(folder, relative, name))
            if os.path.isfile(path):
                return path
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def read(path: str) -> object | None:
    """The config at ``path`` as dicts, lists and :class:`Scalar` leaves,
    or None when it cannot be read or is not a config."""
    kind = SUFFIXES.get(os.path.splitext(path)[1].lower())
    if kind is None:
        return None
    try:
        if os.path.getsize(path) > MAX_CONFIG_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = _parse(kind, text)
    except Exception:  # noqa: BLE001 - a broken config is no evidence, whatever the parser raises
        return None
    return _with_lines(data, text.splitlines(), [0], [0], os.path.basename(path))


def _parse(kind: str, text: str) -> object:
    if kind == "json":
        return json.loads(text)
    if kind == "toml":
        import tomllib

        return tomllib.loads(text)
    try:
        import yaml
    except ImportError:
        return _mini_yaml(text)
    return yaml.safe_load(text)


def _with_lines(
    data: object, lines: list[str], start: list[int], budget: list[int], name: str
) -> object:
    """Wrap scalars with their line: each key is looked for after its
    parent's line (a config's keys come in the order they are written)."""
    if budget[0] > MAX_SCALARS:
        return None
    if isinstance(data, dict):
        out: dict[str, object] = {}
        base = start[0]
        for key, value in data.items():
            line = _line_of(lines, str(key), base)
            out[str(key)] = _with_lines(value, lines, [line], budget, name)
        return out
    if isinstance(data, list):
        return [_with_lines(item, lines, start, budget, name) for item in data[:MAX_SCALARS]]
    budget[0] += 1
    return Scalar(data, start[0], name)


def _line_of(lines: list[str], key: str, after: int) -> int:
    pattern = re.compile(rf"""^\s*(-\s*)?["']?{re.escape(key)}["']?\s*[:=]""")
    for number in range(max(after, 1), len(lines) + 1):
        if pattern.match(lines[number - 1]):
            return number
    return after


_ITEM = re.compile(r"^(\s*)([A-Za-z_][\w.-]*)\s*:\s*(.*?)\s*$")


def _mini_yaml(text: str) -> dict[str, object]:
    """Nested block mappings with scalar values; anything else is skipped."""
    root: dict[str, object] = {}
    stack: list[tuple[int, dict[str, object]]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith(("#", "-", "---")):
            continue
        match = _ITEM.match(line)
        if match is None:
            continue
        indent, key, value = len(match.group(1)), match.group(2), match.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            stack = [(-1, root)]
        holder = stack[-1][1]
        if value == "":
            child: dict[str, object] = {}
            holder[key] = child
            stack.append((indent, child))
        else:
            holder[key] = _mini_scalar(value)
    return root


def _mini_scalar(text: str) -> object:
    if text[:1] in "\"'" and text[-1:] == text[:1]:
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text
