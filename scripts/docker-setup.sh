#!/usr/bin/env bash
# Idempotent set-up of what the docker provider needs (docs/images.md), run by `make docker`:
#
#   docker-setup.sh [engine|compose|images]     (no argument: all three: the engine first)
#
#   * engine: if no Docker engine answers `docker info` and we are root on Debian, apt's
#     docker.io, dockerd started in the background (log and pidfile in .cache/docker/); never
#     a second one
#   * compose: Compose v2: if `docker compose version` fails, `go install` into
#     .cache/bin/docker-compose, linked as the CLI plugin (~/.docker/cli-plugins, and
#     /usr/local/lib/docker/cli-plugins)
#   * images: lockchaos's own images (lockchaos/redis:7.0, :8.0, lockchaos/valkey:8.1, :9.1,
#     lockchaos/toxiproxy:2.12.0, for seed 001's Compose demo lockchaos/python:3.11 and
#     lockchaos-demo, and lockchaos/lockchaos and :full (with the built drivers) for CI and
#     Kubernetes), built offline with debootstrap (`python -m chaos.images`, chaos/images/)
#
# `make docker` runs it after `make setup` (the images need .venv, Toxiproxy and the drivers):
# the engine, then Compose and the images at once (neither needs the other). Each phase takes
# its own lock, so two set-ups at once never start two engines or build twice.
#
# Where a step cannot be done (not root, not Debian, no Go, a failed build) it prints one line
# saying what is missing and exits 0: setup goes on and the docker tests skip. Under CI (CI
# set) that line goes to stderr and it exits 1 (scripts/unavailable.sh): the run goes red.
# A failed image build is remembered with its recipe hash and not tried again with the same
# one (each try can cost minutes): LOCKCHAOS_RETRY=1 tries it again (docs/images.md).
# LOCKCHAOS_IMAGE_PREFIX=P builds the images under P+tag (`--prefix`: scratch/lockchaos/…), a
# set-up from nothing beside the images runs use (which name the plain tags).
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
# shellcheck source=apt.sh
source "$ROOT/scripts/apt.sh"
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
one_at_a_time() {  # a phase's lock: two set-ups at once never start two engines
    exec 9>"$STATE/$1.lock"
    flock -w 1800 9 || skip "another docker-setup.sh has held $STATE/$1.lock for 30 min"
}

# --- the engine ---------------------------------------------------------------------------
engine() {
    one_at_a_time engine
    engine_answers && return
    local running age why
    running="$(pgrep -x dockerd | head -n1 || true)"
    age="$( [ -n "$running" ] && ps -o etimes= -p "$running" | tr -d ' ' || echo 0)"
    if [ -n "$running" ] && [ "$running" = "$(cat "$STATE/dockerd.pid" 2>/dev/null)" ] \
        && [ "${age:-0}" -lt "$ENGINE_WAIT_S" ]; then
        say "dockerd (pid $running, started here) does not answer yet; waiting up to ${ENGINE_WAIT_S} s"
        wait_for_engine "$running" || skip "dockerd (pid $running) runs but \`docker info\` fails"
        return
    elif [ -n "$running" ]; then
        why="$(docker info 2>&1 >/dev/null | grep -m1 -iE 'error|denied|cannot' | cut -c1-160)"
        skip "dockerd (pid $running) runs but \`docker info\` fails here: ${why:-no answer}"
    fi
    is_root || skip "no Docker engine answers \`docker info\`, and installing one needs root"
    is_debian || skip "no Docker engine answers \`docker info\` (not Debian: install Docker)"
    if ! command -v dockerd >/dev/null; then
        say "apt-get install docker.io"
        apt_install "$STATE/apt.log" docker.io \
            || skip "apt-get install docker.io failed (log: $STATE/apt.log)"
    fi
    say "starting dockerd (log: $STATE/dockerd.log)"
    # 9>&-: the engine must not inherit (and so hold for ever) this script's lock
    setsid nohup dockerd >"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/dockerd.pid"
    wait_for_engine "$!" || skip "dockerd did not answer within ${ENGINE_WAIT_S} s: $(tail -n1 "$STATE/dockerd.log")"
}

# --- Compose v2 ---------------------------------------------------------------------------
compose() {
    one_at_a_time compose
    docker compose version >/dev/null 2>&1 && return
    if [ ! -x "$BIN/docker-compose" ]; then
        local go gobin
        go="$(command -v go || echo /usr/local/go/bin/go)"
        [ -x "$go" ] || skip "Compose v2 is missing and Go is needed to build it (apt-get install golang)"
        say "go install docker compose $COMPOSE_VERSION (about 3 min; log: $STATE/compose-build.log)"
        gobin="$(mktemp -d)"
        GOBIN="$gobin" "$go" install \
            -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
            "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" >"$STATE/compose-build.log" 2>&1 \
            || { rm -rf "$gobin"; skip "building Compose v2 failed (log: $STATE/compose-build.log)"; }
        mv "$gobin/cmd" "$BIN/docker-compose"
        rm -rf "$gobin"
    fi
    # The plugin directories both the docker CLI in /usr/local/bin and Debian's look in.
    local plugin_dirs=("$HOME/.docker/cli-plugins") dir
    is_root && plugin_dirs+=(/usr/local/lib/docker/cli-plugins)
    for dir in "${plugin_dirs[@]}"; do
        mkdir -p "$dir" && ln -sf "$BIN/docker-compose" "$dir/docker-compose"
    done
    docker compose version >/dev/null 2>&1 \
        || skip "\`docker compose version\` fails even with $BIN/docker-compose as the plugin"
}

# --- lockchaos's images -------------------------------------------------------------------
images() {
    one_at_a_time images
    [ -x "$PY" ] || skip ".venv is missing (run make setup first): cannot build the images"
    local absent tools=() options=(--prefix "${LOCKCHAOS_IMAGE_PREFIX:-}")
    absent="$("$PY" -m chaos.images missing "${options[@]}" 2>"$STATE/images.err")" \
        || skip "$(head -n1 "$STATE/images.err")"
    [ -n "$absent" ] || return 0
    command -v debootstrap >/dev/null || tools+=(debootstrap)
    command -v gpgv >/dev/null || tools+=(gpgv)
    { command -v make >/dev/null && command -v cc >/dev/null && command -v c++ >/dev/null; } \
        || tools+=(build-essential)
    if [ "${#tools[@]}" -gt 0 ]; then
        is_root && is_debian || skip "building the images needs ${tools[*]} (root on Debian)"
        say "apt-get install ${tools[*]}"
        apt_install "$STATE/apt-tools.log" "${tools[@]}" \
            || skip "apt-get install ${tools[*]} failed (log: $STATE/apt-tools.log)"
    fi
    [ -n "${LOCKCHAOS_RETRY:-}" ] && options+=(--retry)
    "$PY" -m chaos.images build "${options[@]}" 2>"$STATE/images.err" \
        || skip "$(tail -n1 "$STATE/images.err")"
}

case "${1:-all}" in
    engine) engine; say "ready: $(docker version --format 'engine {{.Server.Version}}')" ;;
    compose) compose; say "ready: compose $(docker compose version --short 2>/dev/null)" ;;
    images) images; say "ready: images present" ;;
    all)
        engine
        # Compose and the images do not need each other, and each takes minutes the first
        # time (a Go build; debootstraps and server builds): at once.
        compose &
        compose_pid=$!
        images &
        images_pid=$!
        failed=0
        wait "$compose_pid" || failed=1
        wait "$images_pid" || failed=1
        [ "$failed" -eq 0 ] || exit 1  # the phase said what failed
        say "ready: $(docker version --format 'engine {{.Server.Version}}' 2>/dev/null)," \
            "compose $(docker compose version --short 2>/dev/null), images present"
        ;;
    *) echo "usage: docker-setup.sh [engine|compose|images]" >&2; exit 2 ;;
esac
