"""Generate the rule docs from the rule files: docs/rules/TTNNN.md, the
table in README.md between the ``rules-table`` markers, and the rule codes
the VS Code settings `torchtrap.select` / `torchtrap.ignore` /
`torchtrap.severity` offer (package.json), so a new rule appears there by
itself.

    python scripts/gen_docs.py          write them
    python scripts/gen_docs.py --check  exit 1 if they are out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from torchtrap.rules import ALL_RULES  # noqa: E402

BEGIN, END = "<!-- rules-table:begin -->", "<!-- rules-table:end -->"


def table() -> str:
    rows = ["| Code | Name | Default | Fix | What it finds |", "|---|---|---|---|---|"]
    for rule in ALL_RULES:
        rows.append(
            f"| [{rule.code}](docs/rules/{rule.code}.md) | `{rule.name}` | "
            f"{rule.default_severity.value} | {fix_kinds(rule)} | {rule.summary} |"
        )
    return "\n".join(rows)


def fix_kinds(rule: type) -> str:
    """Which fix applicabilities the rule's own invalid examples produce."""
    import textwrap

    from torchtrap.config import from_table
    from torchtrap.engine import lint

    kinds: set[str] = set()
    for example in rule.invalid:  # type: ignore[attr-defined]
        config = from_table(dict(example.config))
        for finding in lint(textwrap.dedent(example.code), "example.py", config, rules=[rule]):
            kinds.update(f.applicability.value for f in finding.fixes)
    return ", ".join(sorted(kinds, key=["safe", "unsafe"].index)) or "—"


def code_items() -> dict[str, Any]:
    """The JSON schema of one `select`/`ignore` entry: every code and every
    group prefix (TT1, TT2, ...), each described."""
    groups: dict[str, list[str]] = {}
    for rule in ALL_RULES:
        groups.setdefault(rule.code[:3], []).append(rule.code)
    values, descriptions = [], []
    for prefix, codes in sorted(groups.items()):
        values.append(prefix)
        descriptions.append(f"All {prefix}xx rules: {', '.join(codes)}.")
        for rule in sorted((r for r in ALL_RULES if r.code in codes), key=lambda r: r.code):
            values.append(rule.code)
            descriptions.append(f"`{rule.name}`: {rule.summary}.")
    return {
        "type": "string",
        "enum": values,
        # The Settings UI's dropdown shows plain enumDescriptions only.
        "enumDescriptions": [d.replace("`", "") for d in descriptions],
        "markdownEnumDescriptions": descriptions,
    }


SEVERITY_NAMES = ["error", "warning", "info", "hint"]


def severity_properties(value: dict[str, Any]) -> dict[str, Any]:
    """One key per code and prefix of `torchtrap.severity`, each described
    and with the four severities to choose from: the Settings UI then edits
    the object (key and value dropdowns) instead of sending the user to
    settings.json."""
    items = code_items()
    described = zip(items["enum"], items["enumDescriptions"], strict=True)
    return {
        code: {
            "type": "string",
            "enum": SEVERITY_NAMES,
            "enumDescriptions": value["enumDescriptions"],
            "description": description,
        }
        for code, description in described
    }


def package_json() -> str:
    path = ROOT / "package.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    properties = manifest["contributes"]["configuration"]["properties"]
    for key in ("torchtrap.select", "torchtrap.ignore"):
        properties[key]["items"] = code_items()
    severity = properties["torchtrap.severity"]
    current = severity["additionalProperties"]["anyOf"][0]
    severity["properties"] = severity_properties(current)
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def expected() -> dict[Path, str]:
    files = {ROOT / "docs" / "rules" / f"{r.code}.md": r.markdown() for r in ALL_RULES}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    files[ROOT / "README.md"] = readme[:start] + "\n" + table() + "\n" + readme[end:]
    files[ROOT / "package.json"] = package_json()
    return files


def main() -> int:
    check = "--check" in sys.argv
    stale = []
    for path, text in expected().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if check and stale:
        print("out of date (run python scripts/gen_docs.py):", *stale, sep="\n  ")
        return 1
    if not check:
        print(f"wrote {len(stale)} file(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
