#!/usr/bin/env bash
# Bundle the TorchTrap server and its dependencies into bundled/libs for one VS Code
# target platform (ruff-vscode style per-platform packaging):
#   scripts/client-bundle-server.sh [TARGET]      TARGET defaults to $VSCE_TARGET or linux-x64
# The client prepends bundled/libs to PYTHONPATH, so the user's Python (>= 3.10) runs the
# server with no pip install. libcst (structural fixes) is native and built per CPython version
# (cp310..cp313, not abi3), so each version's wheels are installed and merged; their
# extension modules have version-tagged names (native.cpython-311-x86_64-linux-gnu.so)
# and sit side by side. Pure-Python files must be identical across versions (checked).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-${VSCE_TARGET:-linux-x64}}
PY=${PYTHON:-python3}
PY_VERSIONS=${BUNDLE_PYTHON_VERSIONS:-"3.10 3.11 3.12 3.13"}
# PLATFORMS: wheel tags; MARKERS: sys_platform platform_system platform_machine os_name
case "$TARGET" in
    linux-x64) PLATFORMS="manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64"; MARKERS="linux Linux x86_64 posix" ;;
    linux-arm64) PLATFORMS="manylinux_2_28_aarch64 manylinux_2_17_aarch64 manylinux2014_aarch64"; MARKERS="linux Linux aarch64 posix" ;;
    alpine-x64) PLATFORMS="musllinux_1_2_x86_64"; MARKERS="linux Linux x86_64 posix" ;;
    darwin-x64) PLATFORMS="macosx_11_0_x86_64"; MARKERS="darwin Darwin x86_64 posix" ;;
    darwin-arm64) PLATFORMS="macosx_11_0_arm64"; MARKERS="darwin Darwin arm64 posix" ;;
    win32-x64) PLATFORMS="win_amd64"; MARKERS="win32 Windows AMD64 nt" ;;
    *) echo "client-bundle-server: unknown target $TARGET" >&2; exit 2 ;;
esac
platform_args=()
for p in $PLATFORMS; do platform_args+=(--platform "$p"); done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipq() { PIP_ROOT_USER_ACTION=ignore "$PY" -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }

echo "[bundle] building the torchtrap wheel" >&2
# Build from a copy so the shared checkout gets no build/ or egg-info litter.
mkdir -p "$work/src"
cp pyproject.toml "$work/src/"
[ -f README.md ] && cp README.md "$work/src/"
[ -f LICENSE ] && cp LICENSE "$work/src/"
(cd server && tar --exclude=__pycache__ --exclude='*.egg-info' -cf - torchtrap) | (mkdir -p "$work/src/server" && tar -C "$work/src/server" -xf -)
pipq wheel --no-deps -w "$work/wheel" "$work/src"
wheel=$(ls "$work"/wheel/torchtrap-*.whl)

# pip evaluates environment markers (`tomli; python_version < "3.11"`) against the Python
# running pip, not --python-version. So after each install, re-read every Requires-Dist with
# the target's markers and add what is missing, until nothing is.
missing_requirements() {  # DIR PYVERSION -> requirement lines
    "$PY" - "$1" "$2" $MARKERS <<'PYEOF'
import os, sys
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
from email.parser import Parser
target, v, sys_platform, system, machine, os_name = sys.argv[1:]
env = {"python_version": v, "python_full_version": v + ".0", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "sys_platform": sys_platform,
       "platform_system": system, "platform_machine": machine, "os_name": os_name, "extra": ""}
metas = [os.path.join(target, d, "METADATA") for d in os.listdir(target) if d.endswith(".dist-info")]
have = {}
reqs = []
for m in metas:
    msg = Parser().parse(open(m, encoding="utf-8"))
    have[canonicalize_name(msg["Name"])] = msg["Version"]
    reqs += msg.get_all("Requires-Dist") or []
for text in sorted(set(reqs)):
    r = Requirement(text)
    if r.marker is not None and not r.marker.evaluate(env):
        continue
    if canonicalize_name(r.name) not in have:
        print(str(r).split(";")[0].strip())
PYEOF
}
for v in $PY_VERSIONS; do
    echo "[bundle] $TARGET cp${v/./}: torchtrap + dependencies" >&2
    pip_target=(--no-compile --only-binary=:all: --implementation cp --python-version "$v" "${platform_args[@]}" --target "$work/py$v")
    pipq install "${pip_target[@]}" "$wheel"
    for _round in 1 2 3 4 5; do
        mapfile -t extra < <(missing_requirements "$work/py$v" "$v")
        [ ${#extra[@]} -eq 0 ] && break
        echo "[bundle]   + ${extra[*]} (markers for Python $v)" >&2
        pipq install --no-deps --ignore-requires-python "${pip_target[@]}" "${extra[@]}"
    done
    [ ${#extra[@]} -eq 0 ] || { echo "[bundle] unresolved for $v: ${extra[*]}" >&2; exit 1; }
done

rm -rf bundled/libs
mkdir -p bundled/libs
"$PY" - "$work" bundled/libs "$TARGET" $PY_VERSIONS <<'PYEOF'
import filecmp, json, os, shutil, sys
work, dest, target, *versions = sys.argv[1:]
conflicts, dists = [], {}
for v in versions:
    src = os.path.join(work, f"py{v}")
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "bin")]
        rel = os.path.relpath(root, src)
        parts = rel.split(os.sep)
        if parts[0] == "libcst" and "tests" in parts:
            continue  # libcst's own test suite: 1/3 of its files, never imported
        if rel == "." :
            for d in dirs:
                if d.endswith(".dist-info"):
                    name, _, ver = d[: -len(".dist-info")].rpartition("-")
                    dists.setdefault(name.lower(), {}).setdefault(ver, []).append(v)
        for f in files:
            s = os.path.join(root, f)
            d = os.path.normpath(os.path.join(dest, rel, f))
            if os.path.exists(d):
                if not filecmp.cmp(s, d, shallow=False) and ".dist-info" not in rel:
                    conflicts.append(os.path.join(rel, f))
                continue
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copy2(s, d)
mixed = {n: vs for n, vs in dists.items() if len(vs) > 1}
if mixed or conflicts:
    print("[bundle] the per-version installs disagree; pin the dependency:", file=sys.stderr)
    for n, vs in mixed.items():
        print(f"  {n}: {vs}", file=sys.stderr)
    for c in conflicts[:20]:
        print(f"  differs: {c}", file=sys.stderr)
    sys.exit(1)
natives = sorted(
    os.path.relpath(os.path.join(r, f), dest)
    for r, _, fs in os.walk(dest) for f in fs if f.endswith((".so", ".pyd", ".dylib"))
)
# Structural fixes import libcst's native parser: one module per CPython version
# (native.cpython-311-x86_64-linux-gnu.so, native.cp311-win_amd64.pyd), or one abi3 module.
libcst_native = [n for n in natives if n.replace(os.sep, "/").startswith("libcst/native.")]
if "libcst" in dists:
    tags = {v: [n for n in libcst_native if f"{v.replace('.', '')}" in n or "abi3" in n] for v in versions}
    missing = [v for v, found in tags.items() if not found]
    if missing:
        print(f"[bundle] libcst has no native module for Python {', '.join(missing)}", file=sys.stderr)
        sys.exit(1)
info = {
    "target": target,
    "pythons": versions,
    "packages": {n: sorted(vs)[0] for n, vs in sorted(dists.items())},
    "native": natives,
    "libcst_native": libcst_native,
}
with open(os.path.join(dest, "torchtrap-bundle.json"), "w") as fh:
    json.dump(info, fh, indent=2)
print(json.dumps(info["packages"]), file=sys.stderr)
PYEOF
echo "[bundle] bundled/libs: $(du -sh bundled/libs | cut -f1), $(find bundled/libs -type f | wc -l) files" >&2
