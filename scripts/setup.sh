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
#   * chromium (headless, to render reports in the tests; skipped where not installable)
#   * actionlint and shellcheck, which lint the CI examples (scripts/ci-tools-setup.sh)
#
# That is what `make test` and `make demo` need. The docker provider's engine, Compose v2 and
# images (scripts/docker-setup.sh: minutes of debootstrap and server builds the first time)
# are `make docker`'s, which `make test-long` runs — as `lockchaos setup` leaves them to
# `--docker` for an installed package.
#
# Steps that do not need each other run at once, each mostly waiting on a registry, a mirror
# or a compiler (two rounds: the local provider's programs, .venv and the drivers; then
# chromium and the CI linters); every line they print names its step. apt-get runs one step
# at a time (scripts/apt.sh). Each step checks for its result first, so a second run with
# everything present takes seconds.
# Where a prerequisite of the driver or browser tests cannot be set up, one line says what and
# setup goes on (those tests skip, naming it). Under CI (CI set, e.g. CI=true) that line goes
# to stderr and setup exits 1 once every step has run (scripts/unavailable.sh).
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
        if [ "${round_hard[$i]}" = HARD ]; then
            failed=1
        else
            status=1
        fi
    done
    round_pids=()
    round_hard=()
    [ "$failed" -eq 0 ] || exit 1  # the step said what failed
}

install_chromium() {  # renders report.html in the tests (skipped where not installable)
    command -v chromium >/dev/null && return 0
    say "apt-get install chromium"
    apt_install "$CACHE/chromium-apt.log" chromium \
        || unavailable setup "chromium is not installable here" "the report rendering test will skip"
}

# --- round 1 ------------------------------------------------------------------------------
start HARD bash "$ROOT/chaos/commands/setup.sh" "$CACHE"  # apt, Toxiproxy, Redis (MALLOC=libc)
start HARD bash "$ROOT/scripts/venv.sh"
start SOFT bash "$ROOT/scripts/drivers-setup.sh"
end_round

# --- round 2 (after the first's apt-get, which takes no turn in scripts/apt.sh) -------------
start SOFT install_chromium
start SOFT bash "$ROOT/scripts/ci-tools-setup.sh"  # actionlint + shellcheck (the CI examples)
end_round

if [ "$status" -ne 0 ]; then
    printf '[setup] failed: some prerequisites could not be set up (see above)\n' >&2
    exit 1
fi
say "ready"
