"""The JSON document (schema.json), the Markdown report, confirmed_rules,
and the command's options."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from torchtrap.probe import SCHEMA_VERSION, confirmed_rules, render_markdown, validate
from torchtrap.probe.command import add_arguments, run
from torchtrap.probe.schema import ANNOTATIONS, CHECKED, load_schema


def _keywords(node: Any, found: set[str]) -> set[str]:
    """Every keyword used anywhere in a schema (property names excluded)."""
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in ("properties", "patternProperties", "$defs"):
                for sub in value.values():
                    _keywords(sub, found)
            elif isinstance(value, (dict, list)):
                _keywords(value, found)
    elif isinstance(node, list):
        for item in node:
            _keywords(item, found)
    return found


def test_validator_understands_every_keyword_the_schema_uses() -> None:
    used = _keywords(load_schema(), set())
    assert used <= CHECKED | ANNOTATIONS | {"enum", "const"}, used - CHECKED - ANNOTATIONS


def test_schema_version_is_pinned() -> None:
    assert load_schema()["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        (lambda d: d.pop("interpreter"), "$: missing 'interpreter'"),
        (lambda d: d.update(schema_version=2), "$.schema_version: expected 1"),
        (lambda d: d["experiments"][0].update(verdict="maybe"), "is not one of"),
        (lambda d: d["experiments"][0].update(duration_s="1"), "expected number"),
        (lambda d: d["rules"].update(XX1={}), "unexpected key 'XX1'"),
        (lambda d: d.update(started_at="yesterday"), "does not match"),
        (lambda d: d["experiments"][1]["rules"].update(TT101="yes"), "is not one of"),
        (lambda d: d.update(extra=1), "unexpected key 'extra'"),
    ],
)
def test_validator_catches_broken_documents(
    cpu_doc: dict[str, Any], break_it: Any, expected: str
) -> None:
    doc = copy.deepcopy(cpu_doc)
    break_it(doc)
    errors = validate(doc)
    assert any(expected in e for e in errors), errors


def test_jsonschema_agrees_when_installed(cpu_doc: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(load_schema())
    jsonschema.validate(cpu_doc, load_schema(), cls=jsonschema.Draft202012Validator)


def test_confirmed_rules_tolerates_other_documents(cpu_doc: dict[str, Any]) -> None:
    assert confirmed_rules({}) == {}
    assert confirmed_rules({**cpu_doc, "schema_version": 99}) == {}
    assert confirmed_rules({**cpu_doc, "rules": []}) == {}
    assert confirmed_rules(json.loads(json.dumps(cpu_doc))) == confirmed_rules(cpu_doc)


def test_markdown_puts_the_verdict_table_first(cpu_doc: dict[str, Any]) -> None:
    text = render_markdown(cpu_doc)
    lines = text.splitlines()
    assert lines[0] == "# TorchTrap probe"
    table = lines.index("| Experiment | Verdict | Rules | Summary | Time |")
    assert table < lines.index("## Rules") < lines.index("## Evidence")
    rows = [line for line in lines[table + 2 :] if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [e["id"] for e in cpu_doc["experiments"]]
    assert "| `worker-rng` | **confirmed** | TT101 confirmed, TT102 not-reproduced |" in text
    assert text.count("```json") == len(cpu_doc["experiments"])


def test_markdown_escapes_table_cells(cpu_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(cpu_doc)
    doc["experiments"][0]["summary"] = "a | b\nc"
    assert "a \\| b c" in render_markdown(doc)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_command_prints_the_markdown_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args("--only", "environment")) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# TorchTrap probe")
    assert "| `environment` |" in out and "worker-rng" not in out
    assert "[1/1] environment" in err


def test_command_json_and_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "probe.json"
    assert run(_args("--json", "--only", "environment", "-o", str(target))) == 0
    printed = json.loads(capsys.readouterr().out)
    assert validate(printed) == []
    assert printed["only"] == ["environment"]
    assert json.loads(target.read_text()) == printed


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--only", "nope"], "unknown experiment 'nope'; known: environment, worker-rng"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--python", "/no/such/python"], "no Python interpreter at /no/such/python"),
    ],
)
def test_command_errors_exit_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(_args(*argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and expected in err and "Traceback" not in err


def test_command_cannot_write_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing_dir = tmp_path / "missing" / "probe.json"
    assert run(_args("--only", "environment", "-o", str(missing_dir))) == 2
    assert "cannot write" in capsys.readouterr().err


def test_only_accepts_commas() -> None:
    from torchtrap.probe.catalog import select

    assert [e.id for e in select(["shm-capacity,environment"])] == ["environment", "shm-capacity"]
