#!/usr/bin/env bash
# GPU checks for `torchtrap probe`, on a CUDA machine, in well under 5 minutes:
#   1. pytest -m gpu tests/probe   (the GPU experiments for real, ~1 min)
#   2. the whole probe once, JSON + Markdown   (~1 min)
# Uses the machine's own torch (set PYTHON=... to pick the interpreter); it
# never downloads torch. torchtrap comes from this checkout via PYTHONPATH:
# the probe needs only the stdlib and torch, so nothing is installed and no
# network is needed (pytest is the one extra; without it step 1 is skipped).
# Outputs go to ${OUT:-/tmp/probe-out}: run.log, torch.txt, nvidia-smi.txt,
# pytest-gpu.txt/.xml, probe.md, probe.json, probe.stderr, summary.txt.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/probe-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
START=$(date +%s)
say() { echo "[run.sh +$(($(date +%s) - START))s] $*"; }

# 1. A Python that has torch.
PY=""
for candidate in "${PYTHON:-}" python3 python /usr/bin/python3 /opt/conda/bin/python; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c "import torch" >/dev/null 2>&1; then
        PY=$(command -v "$candidate")
        break
    fi
done
if [ -z "$PY" ]; then
    say "no Python with torch found (set PYTHON=/path/to/python); this script never downloads torch"
    exit 2
fi
say "python with torch: $PY"
"$PY" - <<'PYEOF' | tee "$OUT/torch.txt"
import sys
import torch
print("python", sys.version.split()[0], "| torch", torch.__version__,
      "| CUDA build", torch.version.cuda, "| cuda available", torch.cuda.is_available())
for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
    print("gpu", i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
PYEOF
CUDA_OK=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
[ "$CUDA_OK" = 1 ] || say "WARNING: torch sees no CUDA device: the GPU tests will skip"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1

export PYTHONPATH="$REPO/server${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$REPO"

# 2. pytest -m gpu. SIGINT on timeout, so the probe kills its experiments' process groups.
if ! "$PY" -c "import pytest" >/dev/null 2>&1; then
    say "pytest is missing; trying pip once (fails fast when offline)"
    timeout 60 "$PY" -m pip install --quiet --retries 0 --timeout 10 pytest || true
fi
PYTEST_RC=skipped
if "$PY" -c "import pytest" >/dev/null 2>&1; then
    say "pytest -m gpu tests/probe"
    # --confcutdir: only tests/probe's conftest, whatever the rest of tests/ needs.
    timeout -s INT 150 "$PY" -m pytest -m gpu tests/probe -v -rs -p no:cacheprovider \
        --confcutdir=tests/probe --junitxml="$OUT/pytest-gpu.xml" 2>&1 | tee "$OUT/pytest-gpu.txt"
    PYTEST_RC=${PIPESTATUS[0]}
    say "pytest exit code: $PYTEST_RC"
else
    say "pytest unavailable: GPU tests not run"
fi

# 3. The whole probe: `torchtrap probe` when the CLI can load here, else the same code via -m.
if "$PY" -m torchtrap probe --help >/dev/null 2>&1; then
    PROBE=("$PY" -m torchtrap probe)
else
    PROBE=("$PY" -m torchtrap.probe)
fi
say "${PROBE[*]} --python $PY --timeout 120"
timeout -s TERM 140 "${PROBE[@]}" --python "$PY" --timeout 120 -o "$OUT/probe.json" \
    >"$OUT/probe.md" 2>"$OUT/probe.stderr"
PROBE_RC=$?
say "probe exit code: $PROBE_RC"
cat "$OUT/probe.stderr"
sed -n '1,/^## Evidence/p' "$OUT/probe.md"

SCHEMA=missing
if [ -s "$OUT/probe.json" ]; then
    SCHEMA=$("$PY" -c "
import json, sys
from torchtrap.probe import validate
errors = validate(json.load(open(sys.argv[1])))
print('valid' if not errors else 'INVALID: ' + '; '.join(errors[:5]))
" "$OUT/probe.json" 2>&1)
fi
say "probe.json against schema.json: $SCHEMA"

{
    echo "python: $PY"
    cat "$OUT/torch.txt"
    echo "pytest -m gpu: $PYTEST_RC"
    echo "probe: exit $PROBE_RC, schema $SCHEMA"
    echo "total: $(($(date +%s) - START)) s"
} | tee "$OUT/summary.txt"

[ "$CUDA_OK" = 1 ] && [ "$PYTEST_RC" = 0 ] && [ "$PROBE_RC" = 0 ] && [ "$SCHEMA" = valid ]
