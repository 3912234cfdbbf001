"""`torchtrap run`: the user's own training script, run in the interpreter
that holds their torch with observation hooks (server/torchtrap/runtime_hooks),
and what the hooks saw turned into findings on the user's lines.

Public API (the CLI and the language server):
- `run_checked(...) -> RunReport`; raises `ProbeError` (`TorchMissing`)
  with a message meant for the user when the interpreter cannot run it.
- `RunReport.to_json()` / `RunReport.findings`.
- `load_report(path) -> RunReport` for a JSON report written by `--output`.
"""

from __future__ import annotations

from torchtrap.run.launcher import run_checked
from torchtrap.run.report import RUN_SOURCE, RunReport, load_report
from torchtrap.run.target import Target

__all__ = ["RUN_SOURCE", "RunReport", "Target", "load_report", "run_checked"]
