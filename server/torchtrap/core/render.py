"""The call graph as text, JSON, or PyCG's micro-benchmark format."""

from __future__ import annotations

import json

from torchtrap.core.analysis import Analysis


def pycg(analysis: Analysis) -> str:
    """PyCG's simple JSON: every module and function a key, callees sorted."""
    graph: dict[str, set[str]] = {}
    for name in analysis.solver.program.modules:
        graph.setdefault(name, set())
    for func in analysis.solver.functions:
        graph.setdefault(func.qname, set())
    for caller, callees in analysis.solver.calls.items():
        graph.setdefault(caller, set()).update(callees)
        for callee in callees:
            graph.setdefault(callee, set())
    return json.dumps({k: sorted(v) for k, v in sorted(graph.items())}, indent=1)


def as_json(analysis: Analysis) -> str:
    solver = analysis.solver
    return json.dumps(
        {
            "modules": sorted(solver.program.modules),
            "calls": {k: sorted(v) for k, v in sorted(solver.calls.items())},
            "skipped": [{"path": p, "reason": r} for p, r in solver.program.skipped],
            "complete": solver.complete,
        },
        indent=1,
    )


def text(analysis: Analysis) -> str:
    solver = analysis.solver
    lines = []
    for caller, callees in sorted(solver.calls.items()):
        lines.append(caller)
        lines.extend(f"  -> {callee}" for callee in sorted(callees))
    for path, reason in solver.program.skipped:
        lines.append(f"skipped {path}: {reason}")
    if not solver.complete:
        lines.append("note: the analysis stopped at its step budget; the graph is partial")
    return "\n".join(lines)
