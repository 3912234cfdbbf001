"""The probe's Markdown report: one sentence per rule first, then a narrow
table of the experiments, then the evidence.

Rendered from the JSON document (not the dataclasses), so that a saved or
cached report renders the same as a fresh one. The JSON's verdict values
stay as they are (schema 1); only their wording here differs, so that no
verdict reads like a severity ("error") and the report fits a half-width
editor panel (short columns, times in the details)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from torchtrap.probe.report import (
    CONFIRMED,
    ERROR,
    NOT_REPRODUCED,
    SKIPPED,
    TIMEOUT,
    ProbeReport,
    unfinished_ids,
)

# The experiment that describes the machine: a header, not a verdict.
ENVIRONMENT = "environment"

# What a verdict means for a rule, in words.
RULE_WORDS = {
    CONFIRMED: "confirmed here",
    NOT_REPRODUCED: "not reproduced here",
    SKIPPED: "not tested",
    ERROR: "could not run",
    TIMEOUT: "timed out",
}
# An experiment's result; one without rules checks the machine, so a
# "confirmed" there means it found a problem.
EXPERIMENT_WORDS = {
    CONFIRMED: "confirmed",
    NOT_REPRODUCED: "not reproduced",
    SKIPPED: "skipped",
    ERROR: "could not run",
    TIMEOUT: "timed out",
}
CHECK_WORDS = {**EXPERIMENT_WORDS, CONFIRMED: "problem found", NOT_REPRODUCED: "fine"}

_LEGEND = (
    "*confirmed*: the problem happens with this interpreter on this machine;"
    " *not reproduced*: it did not happen here; *skipped*, *could not run*, *timed out*:"
    " no answer (see the details)."
)


def _line(text: Any) -> str:
    return " ".join(str(text).split())


def _cell(text: Any) -> str:
    return _line(text).replace("|", "\\|")


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, (int, float)) else "?"


def _words(verdict: str, table: Mapping[str, str]) -> str:
    text = table.get(verdict, verdict)
    return f"**{text}**" if verdict == CONFIRMED else text


def _experiment_words(exp: Mapping[str, Any]) -> str:
    table = EXPERIMENT_WORDS if exp.get("rules") else CHECK_WORDS
    return _words(str(exp.get("verdict", "")), table)


def _result_cell(exp: Mapping[str, Any]) -> str:
    """An experiment's result in the table: one verdict per rule it tests
    ("TT101 **confirmed**, TT102 not reproduced"), never one verdict for
    all of them; a check of the machine says "fine" or "problem found"."""
    rules = exp.get("rules") or {}
    verdict = str(exp.get("verdict", ""))
    if not rules or verdict not in (CONFIRMED, NOT_REPRODUCED):
        return _experiment_words(exp)
    return ", ".join(
        f"{_cell(code)} {_words(str(v), EXPERIMENT_WORDS)}" for code, v in rules.items()
    )


def _ran(exp: Mapping[str, Any]) -> str:
    """How an experiment went, above its per-rule lines: an experiment that
    tests rules has a verdict per rule, not one of its own."""
    if exp.get("rules") and exp.get("verdict") in (CONFIRMED, NOT_REPRODUCED):
        return "Ran"
    return _experiment_words(exp)


def _gpu_skipped(doc: Mapping[str, Any]) -> str | None:
    """One line when the GPU experiments were skipped for want of CUDA."""
    from torchtrap.probe.catalog import EXPERIMENTS

    gpu = {e.id for e in EXPERIMENTS if e.needs_cuda}
    skipped = [
        str(e.get("id"))
        for e in doc.get("experiments", [])
        if e.get("id") in gpu
        and e.get("verdict") == SKIPPED
        and str(e.get("summary", "")).startswith("needs CUDA")
    ]
    if not skipped:
        return None
    note = _line(doc.get("interpreter", {}).get("cuda_note") or "no CUDA device")
    names = ", ".join(f"`{name}`" for name in skipped)
    return f"GPU experiments skipped: this interpreter has no CUDA ({note}): {names}."


def _pretty(value: Any, depth: int = 0) -> str:
    """JSON with nested objects indented but lists of plain values on one line."""
    pad = "  " * depth
    if isinstance(value, Mapping) and value:
        items = [f"{pad}  {json.dumps(k)}: {_pretty(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value):
        items = [f"{pad}  {_pretty(v, depth + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value)


def rule_sentences(doc: Mapping[str, Any]) -> list[str]:
    """One line per rule the probe looked at: "TT101: confirmed here — ..."."""
    out = []
    for code, entry in doc.get("rules", {}).items():
        verdict = str(entry.get("verdict", ""))
        evidence = _line(entry.get("evidence", ""))
        sentence = f"**{code}**: {RULE_WORDS.get(verdict, verdict)}"
        out.append(f"{sentence} — {evidence}" if evidence else sentence)
    return out


def _machine(doc: Mapping[str, Any], environment: Mapping[str, Any] | None) -> list[str]:
    """What the probe ran on: the environment experiment's summary, its
    hazards as notes; the interpreter's own line when it did not run."""
    interp = doc.get("interpreter", {})
    lines = [f"Interpreter: `{interp.get('path')}`"]
    verdict = environment.get("verdict") if environment else None
    if environment is not None and verdict in (CONFIRMED, NOT_REPRODUCED):
        lines.append(f"Machine: {_line(environment.get('summary'))}")
        hazards = environment.get("evidence", {}).get("hazards") or []
        lines += [f"Note: {_line(hazard)}" for hazard in hazards if isinstance(hazard, str)]
    else:
        cuda = "CUDA" if interp.get("cuda_available") else "no CUDA"
        lines.append(
            f"Machine: Python {interp.get('python_version')}, torch"
            f" {interp.get('torch_version')}, {cuda} ({interp.get('cuda_note')})"
        )
        if environment is not None:
            what = RULE_WORDS.get(str(verdict), str(verdict))
            lines.append(f"Note: the environment check {what}: {_line(environment.get('summary'))}")
    return [line + "  " for line in lines[:-1]] + lines[-1:]  # Markdown line breaks


def render_markdown(report: ProbeReport | Mapping[str, Any]) -> str:
    doc = report.to_json() if isinstance(report, ProbeReport) else report
    experiments = doc.get("experiments", [])
    environment = next((e for e in experiments if e.get("id") == ENVIRONMENT), None)
    checks = [e for e in experiments if e is not environment]
    lines = ["# TorchTrap probe", ""]
    if doc.get("cancelled"):
        lines += ["**Cancelled before the end**: the results below are partial.", ""]
    rest = unfinished_ids(doc)
    if rest and not doc.get("cancelled"):
        names = ", ".join(f"`{r}`" for r in rest)
        lines += [
            f"**{len(rest)} of the experiments did not finish within the probe's"
            f" {doc.get('timeout_s'):g} s limit** ({names}): run the rest with"
            f" `torchtrap probe --only {' '.join(rest)}` (a longer `--timeout` on a busy"
            " machine), or *Run the Rest* in VS Code.",
            "",
        ]
    sentences = rule_sentences(doc)
    if sentences:
        lines += [f"- {sentence}" for sentence in sentences] + [""]
    lines += [*_machine(doc, environment), ""]
    if (gpu := _gpu_skipped(doc)) is not None:
        lines += [gpu, ""]
    if checks:
        lines += ["| Experiment | Result |", "|---|---|"]
        for exp in checks:
            lines.append(f"| `{exp.get('id')}` | {_result_cell(exp)} |")
        lines += ["", _LEGEND, ""]

    lines += ["## Details", ""]
    for exp in checks + ([environment] if environment is not None else []):
        lines += [
            f"### `{exp.get('id')}`",
            "",
            f"{exp.get('title')}.  ",
            f"{_ran(exp)} in {_seconds(exp.get('duration_s'))}: {_line(exp.get('summary'))}",
            "",
        ]
        for code, note in exp.get("rule_evidence", {}).items():
            verdict = str(exp.get("rules", {}).get(code, ""))
            lines.append(f"- {code} {RULE_WORDS.get(verdict, verdict)}: {note}")
        if exp.get("rule_evidence"):
            lines.append("")
        lines += ["```json", _pretty(exp.get("evidence", {})), "```", ""]
    lines += [
        f"Run {doc.get('started_at')}, {_seconds(doc.get('duration_s'))}"
        f" (limit {doc.get('timeout_s'):g} s); torchtrap {doc.get('torchtrap_version')},"
        f" report schema {doc.get('schema_version')}.",
        "",
    ]
    return "\n".join(lines)
