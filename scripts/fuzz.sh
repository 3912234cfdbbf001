#!/usr/bin/env bash
# The long fuzz profile: thousands of grammar-generated and mutated programs
# (the repo's examples and every rule's own examples, cut, spliced, re-encoded)
# through every rule in ALL_RULES, checking the properties in
# tests/fuzz/properties.py. The normal suite runs the same tests with the
# bounded `ci` profile.
#   scripts/fuzz.sh                     all fuzz tests, profile `long` (~6 min on 2 cores)
#   scripts/fuzz.sh -k mutated_sources  one of them
#   TORCHTRAP_FUZZ_PROFILE=ci scripts/fuzz.sh
# A failure prints the falsifying input and a @reproduce_failure line; turn
# the input into a test in tests/fuzz/test_regressions.py, then fix the bug.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
export TORCHTRAP_FUZZ_PROFILE=${TORCHTRAP_FUZZ_PROFILE:-long}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m pytest tests/fuzz -q -p no:cacheprovider --hypothesis-show-statistics "$@"
