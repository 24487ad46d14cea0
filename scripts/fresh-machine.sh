#!/usr/bin/env bash
# Prove the set-up from nothing (issue 21): on this machine kind, remove everything lockchaos
# made — its Docker images, its caches (the clone's .cache, the per-user cache, the Compose v2
# plugin it built), the engine it started — then, in a fresh clone of this checkout, run the
# README's commands and time them: `make setup` (Redis, Toxiproxy, .venv, the drivers,
# Chromium, the CI linters), `make docker` (engine, Compose, every image), then one docker
# campaign per server, one campaign per bundled driver, the browser check, and the whole suite
# as CI runs it. What the machine kind keeps between clones stays (apt packages, the Go, Maven
# and npm download caches): DEVELOPERS.md's "a fresh clone".
#
#   bash scripts/fresh-machine.sh [WORKDIR]     (default: a new directory under /tmp)
#
# It destroys what other lockchaos checkouts on this machine use (their images, the engine):
# run it on a machine where nothing else is running lockchaos. Bash reads a script as it runs
# it: run a copy (a clone of its own) if you may edit this one meanwhile. Every step is bounded in time;
# the first that fails ends the script with its status. The table at the end is what
# docs/results.md quotes.
set -euo pipefail

SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-$(mktemp -d /tmp/lockchaos-fresh.XXXXXX)}"
CLONE="$WORK/lockchaos"
LOG="$WORK/log"
mkdir -p "$LOG"
TIMES=()

say() { printf '[fresh] %s\n' "$*"; }
table() { printf '| step | time | result |\n|---|---|---|\n'; printf '%s\n' "${TIMES[@]}"; }
timed() {  # timed NAME LIMIT_S COMMAND...: run it bounded, log it, remember its time
    local name="$1" limit="$2" start status
    shift 2
    start=$(date +%s)
    say "$name"
    set +e
    timeout "$limit" "$@" >"$LOG/$name.log" 2>&1
    status=$?
    set -e
    TIMES+=("$(printf '| %s | %s s | %s |' "$name" "$(($(date +%s) - start))" \
        "$([ "$status" -eq 0 ] && echo ok || echo "exit $status")")")
    if [ "$status" -ne 0 ]; then
        tail -20 "$LOG/$name.log"
        say "$name failed (exit $status): $LOG/$name.log"
        table
        exit "$status"
    fi
}

say "removing lockchaos's images, caches and engine (work dir: $WORK)"
if docker info >/dev/null 2>&1; then
    images=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^lockchaos[/-]' || true)
    [ -n "$images" ] && docker rmi -f $images >/dev/null
    docker image prune -f >/dev/null
fi
# The engine: a fresh machine of this kind has docker.io installed and no dockerd running
# (scripts/docker-setup.sh starts one). Nothing but lockchaos uses it here.
if pid=$(pidof dockerd); then
    kill $pid
    for _ in $(seq 120); do pidof dockerd >/dev/null || break; sleep 0.5; done
fi
rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/lockchaos"
for plugin in "$HOME/.docker/cli-plugins/docker-compose" \
    /usr/local/lib/docker/cli-plugins/docker-compose; do
    [ -L "$plugin" ] && rm -f "$plugin"  # links to a lockchaos cache's build
done

git clone -q "$SOURCE" "$CLONE"
cd "$CLONE"
timed setup 3600 make setup
timed docker 3600 make docker
timed lint 900 make lint
PY="$CLONE/.venv/bin/python"
LC="$CLONE/.venv/bin/lockchaos"
for server in $("$PY" -c 'from chaos.topology.images import SERVERS; print(*SERVERS)'); do
    timed "docker-$server" 600 "$LC" run --provider docker --server "$server" --lock lua \
        --faults client-pause --duration 5 --out "$WORK/reports"
done
for driver in $("$PY" -c 'from chaos.drivers.catalog import BUNDLED_DRIVERS; print(*BUNDLED_DRIVERS)'); do
    timed "driver-$driver" 600 "$LC" run --lock "$driver" --duration 8 --ttl-ms 1000 \
        --clients 3 --out "$WORK/reports"
done
# Each pytest step's temporary directories under $WORK/pytest (pytest keeps a user's last three
# runs only: a failed test's run directory was gone by the time it was read).
mkdir -p "$WORK/pytest"  # pytest makes --basetemp, not its parent
timed browser 600 env CI=true "$PY" -m pytest -q -p no:cacheprovider \
    --basetemp "$WORK/pytest/browser" tests/browser
timed test 3600 env CI=true make test PYTEST_ARGS="--basetemp $WORK/pytest/test"  # as CI: the Python side, then the rest
timed test-long 1800 env CI=true make test-long PYTEST_ARGS="--basetemp $WORK/pytest/test-long"

say "every step passed"
table
