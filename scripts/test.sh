#!/usr/bin/env bash
# Every test: set up .venv with the test tools and torch==2.13.0 (CPU), lint
# and type-check, check the generated docs, install the SARIF Multitool, run
# pytest (with the bounded fuzz profile, the LSP abuse tests, pre-commit on a
# temporary repository), then the VS Code extension's unit and end-to-end
# tests. Any failure, or pytest collecting no test (exit 5), fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
echo "== ruff"; .venv/bin/ruff check server tests bench scripts
echo "== mypy"; .venv/bin/mypy
echo "== docs"; .venv/bin/python scripts/gen_docs.py --check
# The SARIF test validates with Microsoft's SARIF Multitool (npm); exit 3: no npm,
# and that test skips saying so.
echo "== SARIF Multitool"; bash scripts/sarif-multitool.sh >/dev/null || [ $? -eq 3 ]
echo "== pytest"; .venv/bin/python -m pytest "$@"
if [ -z "${TORCHTRAP_SKIP_CLIENT:-}" ]; then
    echo "== VS Code extension"; bash scripts/client-test.sh
fi
