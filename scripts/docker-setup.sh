#!/usr/bin/env bash
# Idempotent set-up of what the docker provider needs (docs/images.md), run by setup.sh:
#
#   * a Docker engine: if none answers `docker info` and we are root on Debian, apt's docker.io,
#     dockerd started in the background (log and pidfile in .cache/docker/); never a second one
#   * Compose v2: if `docker compose version` fails, `go install` into .cache/bin/docker-compose,
#     linked as the CLI plugin (~/.docker/cli-plugins, and /usr/local/lib/docker/cli-plugins)
#   * lockchaos's own images (lockchaos/redis:7.0, :8.0, lockchaos/valkey:8.1, :9.1,
#     lockchaos/toxiproxy:2.12.0, for seed 001's Compose demo lockchaos/python:3.11 and
#     lockchaos-demo, and lockchaos/lockchaos and :full (with the built drivers) for CI and
#     Kubernetes), built offline with debootstrap (`python -m chaos.images`, chaos/images/)
#
# Where a step cannot be done (not root, not Debian, no Go, a failed build) it prints one line
# saying what is missing and exits 0: setup goes on and the docker tests skip. Under CI (CI
# set) that line goes to stderr and it exits 1 (scripts/unavailable.sh): the run goes red.
# A failed image build is remembered with its recipe hash and not tried again with the same
# one (each try can cost minutes): LOCKCHAOS_RETRY=1 tries it again (docs/images.md).
# With everything present a run takes about a second.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
STATE="$CACHE/docker"
COMPOSE_VERSION="v2.29.7"
ENGINE_WAIT_S=60
PY="$ROOT/.venv/bin/python"
mkdir -p "$BIN" "$STATE"

# shellcheck source=unavailable.sh
source "$ROOT/scripts/unavailable.sh"
say() { printf '[docker-setup] %s\n' "$*"; }
skip() { unavailable docker-setup "$*" "the docker tests will skip"; exit $?; }
engine_answers() { command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
is_debian() { [ -f /etc/debian_version ] && command -v apt-get >/dev/null; }
wait_for_engine() {  # bounded: ENGINE_WAIT_S seconds
    local i
    for ((i = 0; i < ENGINE_WAIT_S * 2; i++)); do
        engine_answers && return 0
        [ -n "${1:-}" ] && ! kill -0 "$1" 2>/dev/null && return 1
        sleep 0.5
    done
    return 1
}
apt_install() {
    # No service starts during the install (policy-rc.d): this script starts dockerd itself.
    local policy=/usr/sbin/policy-rc.d own_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
    fi
    apt-get update -qq >"$STATE/apt.log" 2>&1
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
        >>"$STATE/apt.log" 2>&1
    local status=$?
    [ -n "$own_policy" ] && rm -f "$policy"
    return $status
}

# One run at a time (two `make setup`s at once must not start two engines).
exec 9>"$STATE/setup.lock"
flock -w 1800 9 || skip "another docker-setup.sh has held $STATE/setup.lock for 30 min"

# --- the engine ---------------------------------------------------------------------------
if ! engine_answers; then
    running="$(pgrep -x dockerd | head -n1 || true)"
    age="$( [ -n "$running" ] && ps -o etimes= -p "$running" | tr -d ' ' || echo 0)"
    if [ -n "$running" ] && [ "$running" = "$(cat "$STATE/dockerd.pid" 2>/dev/null)" ] \
        && [ "${age:-0}" -lt "$ENGINE_WAIT_S" ]; then
        say "dockerd (pid $running, started here) does not answer yet; waiting up to ${ENGINE_WAIT_S} s"
        wait_for_engine "$running" || skip "dockerd (pid $running) runs but \`docker info\` fails"
    elif [ -n "$running" ]; then
        why="$(docker info 2>&1 >/dev/null | grep -m1 -iE 'error|denied|cannot' | cut -c1-160)"
        skip "dockerd (pid $running) runs but \`docker info\` fails here: ${why:-no answer}"
    else
        is_root || skip "no Docker engine answers \`docker info\`, and installing one needs root"
        is_debian || skip "no Docker engine answers \`docker info\` (not Debian: install Docker)"
        if ! command -v dockerd >/dev/null; then
            say "apt-get install docker.io"
            apt_install docker.io \
                || skip "apt-get install docker.io failed (log: $STATE/apt.log)"
        fi
        say "starting dockerd (log: $STATE/dockerd.log)"
        # 9>&-: the engine must not inherit (and so hold for ever) this script's lock
        setsid nohup dockerd >"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &
        echo $! >"$STATE/dockerd.pid"
        wait_for_engine "$!" || skip "dockerd did not answer within ${ENGINE_WAIT_S} s: $(tail -n1 "$STATE/dockerd.log")"
    fi
fi

# --- Compose v2 ---------------------------------------------------------------------------
if ! docker compose version >/dev/null 2>&1; then
    if [ ! -x "$BIN/docker-compose" ]; then
        GO="$(command -v go || echo /usr/local/go/bin/go)"
        [ -x "$GO" ] || skip "Compose v2 is missing and Go is needed to build it (apt-get install golang)"
        say "go install docker compose $COMPOSE_VERSION (about 3 min; log: $STATE/compose-build.log)"
        gobin="$(mktemp -d)"
        GOBIN="$gobin" "$GO" install \
            -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
            "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" >"$STATE/compose-build.log" 2>&1 \
            || { rm -rf "$gobin"; skip "building Compose v2 failed (log: $STATE/compose-build.log)"; }
        mv "$gobin/cmd" "$BIN/docker-compose"
        rm -rf "$gobin"
    fi
    # The plugin directories both the docker CLI in /usr/local/bin and Debian's look in.
    plugin_dirs=("$HOME/.docker/cli-plugins")
    is_root && plugin_dirs+=(/usr/local/lib/docker/cli-plugins)
    for dir in "${plugin_dirs[@]}"; do
        mkdir -p "$dir" && ln -sf "$BIN/docker-compose" "$dir/docker-compose"
    done
    docker compose version >/dev/null 2>&1 \
        || skip "\`docker compose version\` fails even with $BIN/docker-compose as the plugin"
fi

# --- lockchaos's images -------------------------------------------------------------------
[ -x "$PY" ] || skip ".venv is missing (run scripts/setup.sh first): cannot build the images"
absent="$("$PY" -m chaos.images missing 2>"$STATE/images.err")" \
    || skip "$(head -n1 "$STATE/images.err")"
if [ -n "$absent" ]; then
    tools=()
    command -v debootstrap >/dev/null || tools+=(debootstrap)
    command -v gpgv >/dev/null || tools+=(gpgv)
    { command -v make >/dev/null && command -v cc >/dev/null && command -v c++ >/dev/null; } \
        || tools+=(build-essential)
    if [ "${#tools[@]}" -gt 0 ]; then
        is_root && is_debian || skip "building the images needs ${tools[*]} (root on Debian)"
        say "apt-get install ${tools[*]}"
        apt_install "${tools[@]}" || skip "apt-get install ${tools[*]} failed (log: $STATE/apt.log)"
    fi
    retry=()
    [ -n "${LOCKCHAOS_RETRY:-}" ] && retry=(--retry)
    "$PY" -m chaos.images build "${retry[@]}" 2>"$STATE/images.err" \
        || skip "$(tail -n1 "$STATE/images.err")"
fi
say "ready: $(docker version --format 'engine {{.Server.Version}}' 2>/dev/null)," \
    "compose $(docker compose version --short 2>/dev/null), images present"
