#!/usr/bin/env bash
# The external programs lockchaos runs, installed idempotently into one cache directory.
#
#   setup.sh CACHE_DIR
#
# What `lockchaos setup` runs (into ~/.cache/lockchaos) and what a checkout's scripts/setup.sh
# runs (into .cache/): the one place these steps are written down. Debian/Ubuntu only:
#
#   * apt: redis-server, redis-sentinel, redis-tools, libfaketime, gpgv, debian-archive-keyring
#     (+ build-essential when no C compiler or make is found)
#   * Toxiproxy v2.12.0 server and CLI (`go install`, or linked from PATH) as
#     CACHE_DIR/bin/toxiproxy-{server,cli}
#   * Redis 7.0.x built with MALLOC=libc into CACHE_DIR/redis/bin/ from the upstream tarball
#     bookworm's Sources index names, verified against the archive's signature (the one the
#     redis-7.0 image is built from: `python3 -m chaos.images.sources`, which keeps it in
#     CACHE_DIR/sources/). Debian's binary links jemalloc, which libfaketime cannot wrap: clock
#     faults need this one.
#
# LOCKCHAOS_SETUP_PYTHON (default python3) runs chaos.images.sources (standard library only)
# from the package this script belongs to; `lockchaos setup` passes its own interpreter.
#
# Each step checks for its result first, so a second run with everything present takes about a
# second. Progress goes to stdout as `[setup] …` lines; a failure ends with one `setup: …` line
# on stderr and exit status 1.
set -euo pipefail

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: setup.sh CACHE_DIR" >&2
    exit 2
fi
mkdir -p "$1"
CACHE="$(cd "$1" && pwd)"
BIN="$CACHE/bin"
TOXIPROXY_VERSION="v2.12.0"
FAKETIME_LIB_GLOB="/usr/lib/*/faketime/libfaketime.so.1"
PACKAGES="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"  # the directory holding chaos/
PYTHON="${LOCKCHAOS_SETUP_PYTHON:-python3}"
mkdir -p "$BIN"

say() { printf '[setup] %s\n' "$*"; }
fail() { printf 'setup: %s\n' "$*" >&2; exit 1; }
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else fail "root (or sudo) is needed to run: $*"
    fi
}

command -v apt-get >/dev/null && command -v dpkg-query >/dev/null \
    || fail "this set-up installs with apt (Debian/Ubuntu); elsewhere install Redis built with \
MALLOC=libc, libfaketime and Toxiproxy yourself and point LOCKCHAOS_REDIS_SERVER, \
LOCKCHAOS_REDIS_SENTINEL, LOCKCHAOS_TOXIPROXY_SERVER and LOCKCHAOS_LIBFAKETIME at them"

# One set-up at a time per cache directory (two test sessions, two terminals).
if command -v flock >/dev/null; then
    exec 9>"$CACHE/.setup.lock"
    flock 9
fi
say "cache: $CACHE"

# --- apt packages -------------------------------------------------------------------------
apt_packages=(redis-server redis-sentinel redis-tools libfaketime gpgv debian-archive-keyring)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v make >/dev/null || ! command -v cc >/dev/null; then
    missing+=(build-essential)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
else
    say "apt packages: present"
fi
# Debian's packaging starts the services where systemd runs; lockchaos starts its own.
# shellcheck disable=SC2086
ls $FAKETIME_LIB_GLOB >/dev/null 2>&1 || fail "libfaketime.so.1 not found after install"

# --- Toxiproxy ----------------------------------------------------------------------------
if [ ! -x "$BIN/toxiproxy-server" ] || [ ! -x "$BIN/toxiproxy-cli" ]; then
    if command -v toxiproxy-server >/dev/null && command -v toxiproxy-cli >/dev/null; then
        say "using toxiproxy from PATH"
        ln -sf "$(command -v toxiproxy-server)" "$BIN/toxiproxy-server"
        ln -sf "$(command -v toxiproxy-cli)" "$BIN/toxiproxy-cli"
    else
        command -v go >/dev/null || fail "Go is needed to build Toxiproxy (install golang)"
        say "go install toxiproxy $TOXIPROXY_VERSION (a minute or two the first time)"
        started=$SECONDS
        gobin="$(mktemp -d)"
        GOBIN="$gobin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
        GOBIN="$gobin" go install "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
        mv "$gobin/cli" "$BIN/toxiproxy-cli"
        mv "$gobin/server" "$BIN/toxiproxy-server"  # last: its presence means "done"
        rm -rf "$gobin"
        say "toxiproxy built in $((SECONDS - started)) s"
    fi
else
    say "toxiproxy: present"
fi

# --- Redis built from its verified upstream tarball, MALLOC=libc ---------------------------
REDIS_OUT="$CACHE/redis/bin"
if [ ! -x "$REDIS_OUT/redis-server" ] || [ ! -x "$REDIS_OUT/redis-sentinel" ]; then
    src="$CACHE/redis-src"
    rm -rf "$src" && mkdir -p "$src"
    # The same verified upstream tarball the redis-7.0 image is built from (chaos/images/sources.py)
    PYTHONPATH="$PACKAGES${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m chaos.images.sources \
        "$src/tree" "$CACHE/sources" || exit 1  # it said what failed, as `setup: …`
    say "building redis with MALLOC=libc (one to three minutes; log: $src/build.log)"
    started=$SECONDS
    make -C "$src/tree" -j"$(nproc)" MALLOC=libc BUILD_TLS=no >"$src/build.log" 2>&1 \
        || { tail -n 30 "$src/build.log" >&2; fail "redis build failed"; }
    # Staged, then moved into place: a half-copied directory never passes for a finished one.
    rm -rf "$REDIS_OUT.new" && mkdir -p "$REDIS_OUT.new"
    cp "$src/tree/src/redis-server" "$src/tree/src/redis-sentinel" "$src/tree/src/redis-cli" \
        "$src/tree/src/redis-benchmark" "$REDIS_OUT.new/"
    rm -rf "$REDIS_OUT" && mv "$REDIS_OUT.new" "$REDIS_OUT"
    rm -rf "$src"
    say "redis built in $((SECONDS - started)) s"
else
    say "redis (MALLOC=libc): present"
fi
say "done: $REDIS_OUT/redis-server, $BIN/toxiproxy-server"
