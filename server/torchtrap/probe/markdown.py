"""The probe's Markdown report: a verdict table first, then the evidence.

Rendered from the JSON document (not the dataclasses), so that a saved or
cached report renders the same as a fresh one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from torchtrap.probe.report import CONFIRMED, ProbeReport

_LEGEND = (
    "`confirmed`: the problem happens with this interpreter on this machine;"
    " `not-reproduced`: it does not; `skipped`, `error`, `timeout`: no answer (see below)."
)


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _verdict(verdict: str) -> str:
    return f"**{verdict}**" if verdict == CONFIRMED else verdict


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if isinstance(value, (int, float)) else "?"


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


def render_markdown(report: ProbeReport | Mapping[str, Any]) -> str:
    doc = report.to_json() if isinstance(report, ProbeReport) else report
    interp = doc.get("interpreter", {})
    cuda = "yes" if interp.get("cuda_available") else "no"
    lines = [
        "# TorchTrap probe",
        "",
        f"`{interp.get('path')}`: Python {interp.get('python_version')},"
        f" torch {interp.get('torch_version')}, CUDA {cuda} ({interp.get('cuda_note')})",
        "",
        f"Run {doc.get('started_at')}, took {_seconds(doc.get('duration_s'))}"
        f" (limit {doc.get('timeout_s'):g} s); torchtrap {doc.get('torchtrap_version')},"
        f" schema {doc.get('schema_version')}."
        + (" **Cancelled before the end.**" if doc.get("cancelled") else ""),
        "",
        "| Experiment | Verdict | Rules | Summary | Time |",
        "|---|---|---|---|---|",
    ]
    experiments = doc.get("experiments", [])
    for exp in experiments:
        rules = ", ".join(f"{code} {v}" for code, v in exp.get("rules", {}).items()) or "–"
        lines.append(
            f"| `{exp.get('id')}` | {_verdict(exp.get('verdict', ''))} | {_cell(rules)}"
            f" | {_cell(exp.get('summary', ''))} | {_seconds(exp.get('duration_s'))} |"
        )
    lines += ["", _LEGEND, ""]

    rules = doc.get("rules", {})
    if rules:
        lines += ["## Rules", "", "| Rule | Verdict | Evidence |", "|---|---|---|"]
        for code, entry in rules.items():
            verdict = _verdict(entry.get("verdict", ""))
            lines.append(f"| {code} | {verdict} | {_cell(entry.get('evidence'))} |")
        lines.append("")

    lines += ["## Evidence", ""]
    for exp in experiments:
        lines += [
            f"### `{exp.get('id')}`: {exp.get('title')}",
            "",
            f"{_verdict(exp.get('verdict', ''))} in {_seconds(exp.get('duration_s'))}:"
            f" {exp.get('summary')}",
            "",
        ]
        for code, note in exp.get("rule_evidence", {}).items():
            lines.append(f"- {code} {exp.get('rules', {}).get(code, '')}: {note}")
        if exp.get("rule_evidence"):
            lines.append("")
        lines += ["```json", _pretty(exp.get("evidence", {})), "```", ""]
    return "\n".join(lines)
