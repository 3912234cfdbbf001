"""schema.json and a small validator for the subset of JSON Schema it uses,
so that checking a report (in tests, or a cached one in the language server)
needs no extra dependency."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("schema.json")

# Keywords the validator checks; annotations it may ignore. A schema keyword
# outside both is a validator gap (a test asserts there is none).
CHECKED = {
    "type", "enum", "const", "required", "properties", "additionalProperties",
    "patternProperties", "items", "minItems", "minimum", "minLength", "pattern", "$ref",
}  # fmt: skip
ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "format"}

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _is(value: Any, type_name: str) -> bool:
    if isinstance(value, bool) and type_name in ("integer", "number"):
        return False  # JSON Schema: true is not a number
    return isinstance(value, _TYPES[type_name])


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref is supported: {ref}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], at: str) -> list[str]:
    if "$ref" in schema:
        return _check(value, _resolve(schema["$ref"], root), root, at)
    errors: list[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return [f"{at}: expected {' or '.join(names)}, got {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{at}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{at}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{at}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{at}: {value!r} does not match {schema['pattern']}")
    if _is(value, "number") and "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{at}: {value} is below {schema['minimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{at}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += _check(item, schema["items"], root, f"{at}[{i}]")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{at}: missing {key!r}")
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{at}.{key}"
            matched = False
            if key in properties:
                matched = True
                errors += _check(item, properties[key], root, where)
            for pattern, sub in patterns.items():
                if re.search(pattern, key):
                    matched = True
                    errors += _check(item, sub, root, where)
            if not matched:
                if extra is False:
                    errors.append(f"{at}: unexpected key {key!r}")
                elif isinstance(extra, dict):
                    errors += _check(item, extra, root, where)
    return errors


def validate(document: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """Every way `document` breaks the schema, as 'path: problem' lines; [] if valid."""
    root = load_schema() if schema is None else schema
    return _check(document, root, root, "$")
