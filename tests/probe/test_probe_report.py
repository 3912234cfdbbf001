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


def test_markdown_leads_with_one_sentence_per_rule(cpu_doc: dict[str, Any]) -> None:
    text = render_markdown(cpu_doc)
    lines = text.splitlines()
    assert lines[0] == "# TorchTrap probe"
    # One sentence per rule, then the machine, then a narrow table.
    assert lines[2].startswith("- **TT101**: confirmed here — ")
    assert "identical streams in 2 workers" in lines[2]
    assert lines[3].startswith("- **TT102**: not reproduced here — ")
    assert lines[4].startswith("- **TT103**: ")
    table = lines.index("| Experiment | Result |")
    assert lines.index("Machine: " + cpu_doc["experiments"][0]["summary"]) < table
    assert table < lines.index("## Details")
    rows = [line for line in lines[table + 2 :] if line.startswith("| `")]
    # The environment is the header, not a row with a verdict.
    ids = [e["id"] for e in cpu_doc["experiments"] if e["id"] != "environment"]
    assert [row.split("`")[1] for row in rows] == ids
    # One verdict per rule: TT102 is not "confirmed" with TT101.
    assert "| `worker-rng` | TT101 **confirmed**, TT102 not reproduced |" in text
    assert "| `shm-capacity` | fine |" in text
    assert max(len(row) for row in rows) <= 64  # fits a half-width panel
    assert "**confirmed** in " not in text.split("### `worker-rng`")[1].split("###")[0]
    assert text.count("```json") == len(cpu_doc["experiments"])
    # Verdict words that do not read like severities.
    head = "\n".join(lines[: lines.index("## Details")])
    assert "error" not in head and "not-reproduced" not in head


def test_markdown_says_what_failed_in_words(cpu_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(cpu_doc)
    doc["experiments"][0].update(verdict="error", summary="boom")
    doc["rules"]["TT101"].update(verdict="error", evidence="exit status 1")
    text = render_markdown(doc)
    assert "- **TT101**: could not run — exit status 1" in text
    assert "Note: the environment check could not run: boom" in text
    assert "Machine: Python " in text  # from the interpreter instead


def test_markdown_escapes_table_cells(cpu_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(cpu_doc)
    doc["experiments"][0]["summary"] = "a | b\nc"
    doc["experiments"][1]["rules"] = {"A|B": "confirmed"}
    text = render_markdown(doc)
    assert "| `worker-rng` | A\\|B **confirmed** |" in text  # a table cell
    assert "Machine: a | b c\n" in text  # one line


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_command_prints_the_markdown_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args("--only", "environment")) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# TorchTrap probe")
    assert "Machine: Python" in out and "### `environment`" in out and "worker-rng" not in out
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


def test_markdown_says_gpu_experiments_were_skipped_without_cuda(
    cpu_doc: dict[str, Any],
) -> None:
    assert cpu_doc["interpreter"]["cuda_available"] is False  # this machine
    text = render_markdown(cpu_doc)
    line = next(line for line in text.splitlines() if line.startswith("GPU experiments"))
    assert line.startswith("GPU experiments skipped: this interpreter has no CUDA (")
    assert "`cuda-ipc-share`, `fork-cuda`, `pin-memory`" in line
    # Near miss: the GPU experiments ran (or were cut short for another reason).
    doc = copy.deepcopy(cpu_doc)
    for exp in doc["experiments"]:
        if exp["id"] in ("cuda-ipc-share", "fork-cuda", "pin-memory"):
            exp.update(verdict="not-reproduced", summary="ran")
    assert "GPU experiments skipped" not in render_markdown(doc)
