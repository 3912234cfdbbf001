#!/usr/bin/env bash
# Every test of the VS Code extension (client/), one entry point for scripts/test.sh and CI:
#   1. npm ci (skipped when node_modules matches package-lock.json)
#   2. typecheck (tsc --noEmit, strict)
#   3. unit tests (Node's test runner: `# pass N` / `# fail N`)
#   4. npm run package: the linux-x64 .vsix with the bundled server
#   5. end-to-end in real VS Code (code-server 4.139.1 + Playwright + Debian chromium), after
#      installing/caching Node 24, code-server, chromium, playwright-core and a torch venv under
#      ${TORCHTRAP_E2E_CACHE:-~/.cache/torchtrap-e2e}: prints `e2e: N passed, M failed`.
# Exits non-zero on any failure. TORCHTRAP_SKIP_E2E=1 stops after step 4 and says so.
# Failure artifacts (screenshots, TorchTrap/server log, code-server logs): ${E2E_ARTIFACTS:-.e2e-artifacts}
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stamp() { echo "[client-test $(( $(date +%s) - start ))s] $*"; }

command -v node >/dev/null || { echo "client-test: Node.js >= 20 is needed (node not found)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "client-test: Node.js >= 20 is needed, found $(node --version)" >&2; exit 1; }

lock_hash=$(sha256sum package-lock.json | cut -c1-16)
if [ "$(cat node_modules/.torchtrap-lock 2>/dev/null)" != "$lock_hash" ]; then
    stamp "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_hash" >node_modules/.torchtrap-lock
fi

stamp "typecheck"
npx --no-install tsc -p . --noEmit

stamp "unit tests"
rm -rf out
npx --no-install tsc -p .
node --test --test-reporter=tap out/client/test/unit/ >out/unit-tests.tap || { cat out/unit-tests.tap; echo "client-test: unit tests failed" >&2; exit 1; }
grep -E '^not ok|^# (tests|pass|fail|cancelled|skipped|todo)' out/unit-tests.tap
grep -q '^# fail 0$' out/unit-tests.tap && grep -q '^# skipped 0$' out/unit-tests.tap && grep -q '^# todo 0$' out/unit-tests.tap \
    || { echo "client-test: unit tests failed or were skipped" >&2; exit 1; }

stamp "package"
VSIX=torchtrap-linux-x64-$(node -p "require('./package.json').version").vsix
VSIX_OUT=$VSIX bash scripts/client-package.sh linux-x64 >out/package.log 2>&1 || { cat out/package.log; exit 1; }
tail -1 out/package.log

if [ -n "${TORCHTRAP_SKIP_E2E:-}" ]; then
    echo "e2e: SKIPPED because TORCHTRAP_SKIP_E2E is set (not a pass)"
    exit 0
fi

stamp "e2e setup (cached in ${TORCHTRAP_E2E_CACHE:-~/.cache/torchtrap-e2e})"
setup_env=$(bash scripts/client-e2e-setup.sh)
eval "$setup_env"

stamp "e2e"
# Last: its closing line `e2e: N passed, M failed` is this script's last line.
exec env E2E_VSIX="$VSIX" "$E2E_NODE_BIN/node" client/e2e/run.mjs
