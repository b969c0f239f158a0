#!/usr/bin/env bash
# Build and install the BytePS 0.2.5 server (byteps.server) without CUDA,
# MXNet, TensorFlow or PyTorch, into the environment of $PYTHON.
#
#   PYTHON=.venv/bin/python scripts/install-byteps-server.sh
#
# Environment:
#   PYTHON         interpreter of the target environment (default: .venv/bin/python
#                  of this repository)
#   BYTEPS_SDIST   optional path to a downloaded byteps-0.2.5.post15.tar.gz;
#                  otherwise pip downloads it from PyPI (the build itself needs
#                  no network either way)
#   FORCE=1        rebuild even when the server is already installed
#
# The sdist is kept, checked against the sha256 PyPI publishes for it, in
# .deps/byteps-0.2.5.post15.tar.gz of this checkout (gitignored), and the
# server is built from that file. It is fetched even when the server is
# already installed: the plugin's tests read the BytePS source they cite out
# of it (tests/helpers/byteps_source.py).
#
# Why it looks like this:
# - The check never imports byteps.server: importing it STARTS a ps-lite node
#   that blocks forever. It looks for the package and its compiled library.
# - setuptools < 70.1 has no bdist_wheel of its own; wheel 0.45.1 is the last
#   release that provides it without needing a newer `packaging`.
# - ps-lite's Makefile downloads zeromq with $(WGET) $(ZMQ_URL). The sdist
#   ships that tarball at its root, and make runs in 3rdparty/ps-lite, so
#   WGET='cp -t .' ZMQ_URL=../../zeromq-4.1.4.tar.gz builds it offline.
# - pip downloads the sdist with --require-hashes, so byteps's setup.py (run
#   for its metadata) never runs from a file other than the one pinned here;
#   the digest is PyPI's (https://pypi.org/simple/byteps/, #sha256=...).
# - The extension is compiled with -march=native: build it on the machine
#   (CPU type) that runs it, and bypass pip's wheel cache (--no-cache-dir) so
#   a wheel built elsewhere is never reused.
set -euo pipefail

BYTEPS_VERSION="0.2.5.post15"
BYTEPS_SHA256="9d6a3c5be4c4b5a172739744bb32725c433f9a9f63794e1885e7376ff4eea99f"
WHEEL_VERSION="0.45.1"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$repo_root/.venv/bin/python}"
sdist="$repo_root/.deps/byteps-$BYTEPS_VERSION.tar.gz"

if [[ ! -x "$PYTHON" ]] && ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "install-byteps-server: no Python interpreter at PYTHON=$PYTHON" >&2
    exit 2
fi

# Exit 0 when byteps is importable as a package and its server library exists
# (without executing byteps.server).
server_installed() {
    "$PYTHON" - <<'EOF'
import glob, importlib.util, os, sys
spec = importlib.util.find_spec("byteps")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
libs = [p for d in spec.submodule_search_locations
        for p in glob.glob(os.path.join(d, "server", "c_lib*.so"))]
sys.exit(0 if libs else 1)
EOF
}

sha256_of() {
    "$PYTHON" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

# The sdist in .deps/, verified: copied from BYTEPS_SDIST or downloaded, then
# moved into place only once its digest matches.
fetch_sdist() {
    if [[ -f "$sdist" && "$(sha256_of "$sdist")" == "$BYTEPS_SHA256" ]]; then
        return 0
    fi
    mkdir -p "$(dirname "$sdist")"
    local tmp got
    tmp="$(mktemp -d "$(dirname "$sdist")/fetch.XXXXXX")"
    # shellcheck disable=SC2064  # expand now: $tmp is local
    trap "rm -rf '$tmp'" EXIT
    if [[ -n "${BYTEPS_SDIST:-}" ]]; then
        cp "$BYTEPS_SDIST" "$tmp/byteps-$BYTEPS_VERSION.tar.gz"
    else
        echo "byteps==$BYTEPS_VERSION --hash=sha256:$BYTEPS_SHA256" > "$tmp/requirements.txt"
        env BYTEPS_WITHOUT_MXNET=1 BYTEPS_WITHOUT_TENSORFLOW=1 BYTEPS_WITHOUT_PYTORCH=1 \
            "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
            --no-build-isolation --require-hashes -r "$tmp/requirements.txt" -d "$tmp"
    fi
    got="$(sha256_of "$tmp/byteps-$BYTEPS_VERSION.tar.gz")"
    if [[ "$got" != "$BYTEPS_SHA256" ]]; then
        echo "install-byteps-server: ${BYTEPS_SDIST:-the downloaded sdist} has sha256 $got," \
            "not PyPI's $BYTEPS_SHA256 for byteps-$BYTEPS_VERSION.tar.gz" >&2
        exit 1
    fi
    mv "$tmp/byteps-$BYTEPS_VERSION.tar.gz" "$sdist"
    rm -rf "$tmp"
    trap - EXIT
    echo "install-byteps-server: kept the sdist (sha256 checked) in ${sdist#"$repo_root"/}"
}

fetch_sdist

if [[ "${FORCE:-0}" != "1" ]] && server_installed; then
    echo "install-byteps-server: byteps.server is already installed for $PYTHON"
    exit 0
fi

echo "install-byteps-server: building byteps==$BYTEPS_VERSION (server only) for $PYTHON"
"$PYTHON" -m pip install --disable-pip-version-check "wheel==$WHEEL_VERSION"

start=$(date +%s)
env \
    BYTEPS_WITHOUT_MXNET=1 \
    BYTEPS_WITHOUT_TENSORFLOW=1 \
    BYTEPS_WITHOUT_PYTORCH=1 \
    WGET='cp -t .' \
    ZMQ_URL=../../zeromq-4.1.4.tar.gz \
    "$PYTHON" -m pip install --disable-pip-version-check --no-cache-dir \
        --no-build-isolation --no-deps --no-binary byteps --force-reinstall \
        "$sdist"
echo "install-byteps-server: build and install took $(( $(date +%s) - start ))s"

if ! server_installed; then
    echo "install-byteps-server: pip finished but byteps/server/c_lib*.so is missing" >&2
    exit 1
fi
echo "install-byteps-server: byteps.server installed for $PYTHON"
