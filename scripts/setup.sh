#!/usr/bin/env bash
# Idempotent set-up for Debian/Ubuntu: everything lockchaos needs, installed once.
#
#   * apt: redis-server, redis-sentinel, redis-tools, libfaketime (+ dpkg-dev to unpack sources)
#     and chromium (headless, to render reports in the tests; skipped where not installable)
#   * Toxiproxy v2.12.0 server and CLI, built with `go install`, as .cache/bin/toxiproxy-{server,cli}
#   * Redis 7.0.x built from Debian's source package with MALLOC=libc into .cache/redis/
#     (Debian's binary links jemalloc, which libfaketime cannot wrap)
#   * .venv with `pip install -e .[dev]`
#
# Each step checks for its result first, so a second run with everything present takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
TOXIPROXY_VERSION="v2.12.0"
FAKETIME_LIB_GLOB="/usr/lib/*/faketime/libfaketime.so.1"
mkdir -p "$BIN"

say() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- apt packages -------------------------------------------------------------------------
apt_packages=(redis-server redis-sentinel redis-tools libfaketime dpkg-dev)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
# Debian's packaging starts the services where systemd runs; lockchaos starts its own.
ls $FAKETIME_LIB_GLOB >/dev/null 2>&1 || { echo "setup: libfaketime.so.1 not found after install" >&2; exit 1; }

# --- chromium: renders report.html headless in the test suite (skipped where it is missing) -
if ! command -v chromium >/dev/null; then
    say "apt-get install chromium"
    as_root apt-get update -qq || true
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium >/dev/null 2>&1 \
        || say "chromium is not installable here: the report rendering test will be skipped"
fi

# --- Toxiproxy ----------------------------------------------------------------------------
if [ ! -x "$BIN/toxiproxy-server" ] || [ ! -x "$BIN/toxiproxy-cli" ]; then
    if command -v toxiproxy-server >/dev/null && command -v toxiproxy-cli >/dev/null; then
        say "using toxiproxy from PATH"
        ln -sf "$(command -v toxiproxy-server)" "$BIN/toxiproxy-server"
        ln -sf "$(command -v toxiproxy-cli)" "$BIN/toxiproxy-cli"
    else
        command -v go >/dev/null || { echo "setup: Go is needed to build Toxiproxy (install golang)" >&2; exit 1; }
        say "go install toxiproxy $TOXIPROXY_VERSION"
        gobin="$(mktemp -d)"
        GOBIN="$gobin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
        GOBIN="$gobin" go install "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
        mv "$gobin/server" "$BIN/toxiproxy-server"
        mv "$gobin/cli" "$BIN/toxiproxy-cli"
        rm -rf "$gobin"
    fi
fi

# --- Redis built from Debian's source package, MALLOC=libc -------------------------------
REDIS_OUT="$CACHE/redis/bin"
if [ ! -x "$REDIS_OUT/redis-server" ] || [ ! -x "$REDIS_OUT/redis-sentinel" ]; then
    if ! apt-get source --print-uris redis 2>/dev/null | grep -q 'orig\.tar'; then
        # No deb-src entry: mirror the binary sources (deb822 or one-line) as source entries.
        say "adding deb-src entries"
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                | as_root tee /etc/apt/sources.list.d/lockchaos-deb-src.sources >/dev/null
        else
            grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | sed 's/^deb /deb-src /' \
                | as_root tee /etc/apt/sources.list.d/lockchaos-deb-src.list >/dev/null
        fi
        as_root apt-get update -qq
    fi
    src="$CACHE/redis-src"
    rm -rf "$src" && mkdir -p "$src"
    say "apt-get source redis"
    (cd "$src" && apt-get source --download-only redis >/dev/null 2>&1)
    dsc="$(ls "$src"/redis_*.dsc | head -n1)"
    (cd "$src" && dpkg-source -x "$dsc" tree >/dev/null)
    say "building redis with MALLOC=libc (about 30 s)"
    make -C "$src/tree" -j"$(nproc)" MALLOC=libc BUILD_TLS=no >"$src/build.log" 2>&1 \
        || { tail -n 30 "$src/build.log" >&2; echo "setup: redis build failed" >&2; exit 1; }
    mkdir -p "$REDIS_OUT"
    cp "$src/tree/src/redis-server" "$src/tree/src/redis-sentinel" "$src/tree/src/redis-cli" \
        "$src/tree/src/redis-benchmark" "$REDIS_OUT/"
    rm -rf "$src"
fi

# --- Python virtualenv --------------------------------------------------------------------
VENV="$ROOT/.venv"
STAMP="$VENV/.lockchaos-installed"
if [ ! -x "$VENV/bin/python" ]; then
    say "creating .venv"
    python3 -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
    say "pip install -e .[dev]"
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null
    "$VENV/bin/pip" install -q -e "$ROOT[dev]"
    touch "$STAMP"
fi
say "ready"
