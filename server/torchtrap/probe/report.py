"""The probe's result: per-experiment verdicts, per-rule verdicts, and the
versioned JSON document (its schema is schema.json next to this file)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

SCHEMA_VERSION = 1

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not-reproduced"
SKIPPED = "skipped"
ERROR = "error"
TIMEOUT = "timeout"
BUDGET = "budget"  # evidence key: the overall time limit, not the experiment, stopped it
VERDICTS: tuple[str, ...] = (CONFIRMED, NOT_REPRODUCED, SKIPPED, ERROR, TIMEOUT)

# When experiments disagree on a rule, a confirmation wins (it happened here),
# then a clean negative, then the failures.
_RULE_PRECEDENCE = (CONFIRMED, NOT_REPRODUCED, ERROR, TIMEOUT, SKIPPED)


@dataclass
class ExperimentResult:
    id: str
    title: str
    verdict: str
    summary: str
    duration_s: float
    rules: dict[str, str] = field(default_factory=dict)  # rule code -> verdict
    rule_evidence: dict[str, str] = field(default_factory=dict)  # rule code -> one line
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "rules": dict(self.rules),
            "verdict": self.verdict,
            "summary": self.summary,
            "rule_evidence": dict(self.rule_evidence),
            "evidence": self.evidence,
            "duration_s": round(self.duration_s, 2),
        }


@dataclass
class Interpreter:
    path: str
    python_version: str
    torch_version: str
    cuda_build: str | None
    cuda_available: bool
    cuda_note: str  # why CUDA is (not) available, for skipped GPU experiments

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "python_version": self.python_version,
            "torch_version": self.torch_version,
            "cuda_build": self.cuda_build,
            "cuda_available": self.cuda_available,
            "cuda_note": self.cuda_note,
        }


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class ProbeReport:
    interpreter: Interpreter
    started_at: datetime
    finished_at: datetime
    timeout_s: float
    experiments: list[ExperimentResult]
    only: list[str] | None = None
    cancelled: bool = False

    def rule_verdicts(self) -> dict[str, dict[str, Any]]:
        """rule code -> {verdict, evidence, experiments}, over all experiments."""
        votes: dict[str, list[tuple[str, str, str]]] = {}
        for result in self.experiments:
            for code, verdict in result.rules.items():
                line = result.rule_evidence.get(code) or result.summary
                votes.setdefault(code, []).append((verdict, line, result.id))
        rules = {}
        for code in sorted(votes):
            verdict = min(
                (v for v, _, _ in votes[code]),
                key=lambda v: _RULE_PRECEDENCE.index(v) if v in _RULE_PRECEDENCE else 99,
            )
            chosen = [(line, exp) for v, line, exp in votes[code] if v == verdict]
            rules[code] = {
                "verdict": verdict,
                "evidence": "; ".join(dict.fromkeys(line for line, _ in chosen)),
                "experiments": [exp for _, exp in chosen],
            }
        return rules

    def unfinished(self) -> list[str]:
        """Experiments the overall limit left no time for, or cut short."""
        return [e.id for e in self.experiments if e.evidence.get(BUDGET) is True]

    def merged_into(self, earlier: ProbeReport) -> ProbeReport:
        """``earlier`` with its experiments that this report ran again (the
        rest, after the limit ran out) replaced by this report's results."""
        mine = {e.id: e for e in self.experiments}
        experiments = [mine.pop(e.id, e) for e in earlier.experiments] + list(mine.values())
        return ProbeReport(
            interpreter=self.interpreter,
            started_at=earlier.started_at,
            finished_at=self.finished_at,
            timeout_s=earlier.timeout_s + self.timeout_s,
            experiments=experiments,
            only=earlier.only,
            cancelled=self.cancelled,
        )

    def to_json(self) -> dict[str, Any]:
        from torchtrap import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "torchtrap_version": __version__,
            "interpreter": self.interpreter.to_json(),
            "started_at": _timestamp(self.started_at),
            "finished_at": _timestamp(self.finished_at),
            "duration_s": round((self.finished_at - self.started_at).total_seconds(), 2),
            "timeout_s": self.timeout_s,
            "only": self.only,
            "cancelled": self.cancelled,
            "experiments": [e.to_json() for e in self.experiments],
            "rules": self.rule_verdicts(),
        }


def unfinished_ids(report_json: Mapping[str, Any]) -> list[str]:
    """The experiments of a report (JSON) that the overall time limit left no
    time for, or cut short: what "run the rest" runs."""
    out = []
    for exp in report_json.get("experiments", ()) if isinstance(report_json, Mapping) else ():
        evidence = exp.get("evidence") if isinstance(exp, Mapping) else None
        if isinstance(evidence, Mapping) and evidence.get(BUDGET) is True:
            out.append(str(exp.get("id")))
    return out


def confirmed_rules(report_json: Mapping[str, Any]) -> dict[str, str]:
    """rule code -> one-line evidence, for every rule the probe confirmed.

    For diagnostics: "(confirmed here)", with the evidence as related information.
    A document of another schema version (an old cache) or a malformed one
    yields {} rather than an exception: the caller then just says less.
    """
    if not isinstance(report_json, Mapping) or report_json.get("schema_version") != SCHEMA_VERSION:
        return {}
    rules = report_json.get("rules")
    if not isinstance(rules, Mapping):
        return {}
    confirmed = {}
    for code, entry in rules.items():
        if isinstance(entry, Mapping) and entry.get("verdict") == CONFIRMED:
            confirmed[str(code)] = str(entry.get("evidence", ""))
    return confirmed
