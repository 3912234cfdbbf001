#!/usr/bin/env bash
# Build the VS Code extension package for one target platform:
#   scripts/client-package.sh [TARGET]     (npm run package; TARGET defaults to linux-x64)
# -> torchtrap-TARGET-VERSION.vsix at the repo root, with the esbuild bundle of the client and
#    the Python server plus its dependencies (bundled/libs) for that platform.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-${VSCE_TARGET:-linux-x64}}
VERSION=$(node -p "require('./package.json').version")
OUT=${VSIX_OUT:-torchtrap-$TARGET-$VERSION.vsix}
[ -d node_modules ] || npm ci --no-audit --no-fund
node client/esbuild.mjs --production
bash scripts/client-bundle-server.sh "$TARGET"
npx --no-install vsce package --target "$TARGET" --no-dependencies --no-rewrite-relative-links \
    --allow-missing-repository --skip-license --out "$OUT"
echo "[package] $OUT: $(du -h "$OUT" | cut -f1)"
