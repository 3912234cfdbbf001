#!/usr/bin/env bash
# Create (or reuse) .venv and install TorchTrap into it.
#   scripts/setup.sh          runtime only (the linter, server, probe)
#   scripts/setup.sh --test   plus test tools and torch==2.13.0 (CPU wheel)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "TorchTrap needs Python >= 3.10; $PY is $("$PY" --version 2>&1)" >&2
    exit 2
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
extra=""
[ "${1:-}" = "--test" ] && extra="[test]"
# (sed drops a warning some pip configurations print for every package)
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extra}" 2>&1 |
    sed '/is ignored: it is neither a file nor a directory/d' 
