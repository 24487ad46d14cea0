#!/usr/bin/env bash
# Idempotent set-up of a lockchaos checkout (Debian/Ubuntu): everything it needs, installed once.
#
#   * chaos/commands/setup.sh .cache — the steps `lockchaos setup` runs for an installed
#     package, written down once: apt (redis-server, redis-sentinel, redis-tools, libfaketime,
#     dpkg-dev), Toxiproxy v2.12.0 as .cache/bin/toxiproxy-{server,cli}, and Redis 7.0.x built
#     from Debian's source package with MALLOC=libc into .cache/redis/ (Debian's binary links
#     jemalloc, which libfaketime cannot wrap)
#   * .venv with `pip install -e .[dev]` (scripts/venv.sh)
#   * the bundled Java, Go and Node lock drivers (scripts/drivers-setup.sh)
#   * the docker provider's engine, Compose v2 and lockchaos's images (scripts/docker-setup.sh)
#   * chromium (headless, to render reports in the tests; skipped where not installable)
#   * actionlint and shellcheck, which lint the CI examples (scripts/ci-tools-setup.sh)
#
# Steps that do not need each other run at once, each mostly waiting on a registry, a mirror or
# a compiler (two rounds: the local provider's programs then the engine, .venv and the
# drivers; then Compose, the images, which need .venv, Toxiproxy and the drivers, chromium
# and the CI linters); every line they print names its step. apt-get runs one step at a time
# (scripts/apt.sh). Each step checks for its result first, so a second run with everything
# present takes seconds.
# Where a prerequisite of the docker, driver or browser tests cannot be set up, one line says
# what and setup goes on (those tests skip, naming it). Under CI (CI set, e.g. CI=true) that
# line goes to stderr and setup exits 1 once every step has run (scripts/unavailable.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
mkdir -p "$BIN"

# shellcheck source=unavailable.sh
source "$ROOT/scripts/unavailable.sh"
# shellcheck source=apt.sh
source "$ROOT/scripts/apt.sh"
say() { printf '[setup] %s\n' "$*"; }
status=0  # 1 once a step could not be set up under CI

# The steps of a round, started at once: each one's pid, and what its failure means.
round_pids=()
round_hard=()
UNAVAILABLE=3  # a HARD step's status when only a part of it that may fail did (under CI)
start() {  # start HARD|SOFT COMMAND...: a HARD step's failure stops setup after the round
    local hard="$1"
    shift
    "$@" &
    round_pids+=("$!")
    round_hard+=("$hard")
}
end_round() {  # wait for every step of the round; exit 1 after it if a HARD one failed
    local i code failed=0
    for i in "${!round_pids[@]}"; do
        code=0
        wait "${round_pids[$i]}" || code=$?
        if [ "$code" -eq 0 ]; then continue; fi
        if [ "${round_hard[$i]}" = HARD ] && [ "$code" -ne "$UNAVAILABLE" ]; then
            failed=1
        else
            status=1
        fi
    done
    round_pids=()
    round_hard=()
    [ "$failed" -eq 0 ] || exit 1  # the step said what failed
}

programs_then_engine() {
    # apt packages, Toxiproxy, Redis (MALLOC=libc): the steps `lockchaos setup` runs
    bash "$ROOT/chaos/commands/setup.sh" "$CACHE" || return 1
    bash "$ROOT/scripts/docker-setup.sh" engine || return "$UNAVAILABLE"  # its apt-get after theirs
}

install_chromium() {  # renders report.html in the tests (skipped where not installable)
    command -v chromium >/dev/null && return 0
    say "apt-get install chromium"
    apt_install "$CACHE/chromium-apt.log" chromium \
        || unavailable setup "chromium is not installable here" "the report rendering test will skip"
}

# --- round 1 ------------------------------------------------------------------------------
start HARD programs_then_engine
start HARD bash "$ROOT/scripts/venv.sh"
start SOFT bash "$ROOT/scripts/drivers-setup.sh"
end_round

# --- round 2 ------------------------------------------------------------------------------
if timeout 20 docker info >/dev/null 2>&1; then  # else the engine step said why
    start SOFT bash "$ROOT/scripts/docker-setup.sh" compose
    start SOFT bash "$ROOT/scripts/docker-setup.sh" images
fi
start SOFT install_chromium
start SOFT bash "$ROOT/scripts/ci-tools-setup.sh"  # actionlint + shellcheck (the CI examples)
end_round

if [ "$status" -ne 0 ]; then
    printf '[setup] failed: some prerequisites could not be set up (see above)\n' >&2
    exit 1
fi
say "ready"
