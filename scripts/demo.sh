#!/usr/bin/env bash
# The main job on a fresh machine: install TorchTrap into .venv, lint the
# bundled examples/ and show each finding with its fixes, then the fixes as a
# diff (nothing is written).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 2
.venv/bin/torchtrap check examples/
status=$?
echo
echo "== The same fixes as a diff (torchtrap check examples/ --diff --unsafe-fixes; files untouched):"
.venv/bin/torchtrap check examples/ --diff --unsafe-fixes
# Findings are the point of the demo: exit 0 unless the linter itself failed.
[ "$status" -le 1 ]
