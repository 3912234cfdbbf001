#!/usr/bin/env bash
# Install Microsoft's SARIF Multitool (npm @microsoft/sarif-multitool) into a
# cache folder outside the repository, and print the path of its binary.
# The SARIF test (tests/core/test_sarif_multitool.py) calls this; so does
# scripts/test.sh, so that CI has it. Exit 3: npm is not installed.
#   TORCHTRAP_SARIF_CACHE   the folder (default: ~/.cache/torchtrap-sarif)
set -euo pipefail
VERSION=5.7.0
cache=${TORCHTRAP_SARIF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/torchtrap-sarif}
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "npm/node not found: cannot install @microsoft/sarif-multitool" >&2
    exit 3
fi
mkdir -p "$cache"
if [ ! -e "$cache/node_modules/@microsoft/sarif-multitool/package.json" ] ||
    ! grep -q "\"version\": \"$VERSION\"" "$cache/node_modules/@microsoft/sarif-multitool/package.json"; then
    npm install --prefix "$cache" --no-audit --no-fund --silent "@microsoft/sarif-multitool@$VERSION" >&2
fi
# The npm wrapper passes arguments through a shell (";" in --level would
# split the command): print the platform binary it wraps instead.
cd "$cache"
node -e 'console.log(require("@microsoft/sarif-multitool"))'
