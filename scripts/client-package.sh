#!/usr/bin/env bash
# Build the VS Code extension package for one target platform:
#   scripts/client-package.sh [TARGET]     (npm run package; TARGET defaults to linux-x64)
# -> torchtrap-TARGET-VERSION.vsix at the repo root, with the esbuild bundle of the client and
#    the Python server plus its dependencies (bundled/libs) for that platform. libcst's native
#    parser (structural fixes) is per platform and per CPython version, hence one vsix per target.
# Targets (scripts/client-package.sh --list): built and tested here: linux-x64; the others are
# built the same way from PyPI's wheels (pip download --platform), on CI or a release machine.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS="linux-x64 linux-arm64 alpine-x64 darwin-x64 darwin-arm64 win32-x64"
if [ "${1:-}" = "--list" ]; then
    echo "$TARGETS" | tr ' ' '\n'
    exit 0
fi
TARGET=${1:-${VSCE_TARGET:-linux-x64}}
case " $TARGETS " in
    *" $TARGET "*) ;;
    *) echo "client-package: unknown target $TARGET (known: $TARGETS)" >&2; exit 2 ;;
esac
VERSION=$(node -p "require('./package.json').version")
OUT=${VSIX_OUT:-torchtrap-$TARGET-$VERSION.vsix}
[ -d node_modules ] || npm ci --no-audit --no-fund
node client/esbuild.mjs --production
bash scripts/client-bundle-server.sh "$TARGET"
npx --no-install vsce package --target "$TARGET" --no-dependencies --no-rewrite-relative-links \
    --allow-missing-repository --out "$OUT"
echo "[package] $OUT: $(du -h "$OUT" | cut -f1)"
