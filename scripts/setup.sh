#!/usr/bin/env bash
# Idempotent set-up of a lockchaos checkout (Debian/Ubuntu): everything it needs, installed once.
#
#   * chaos/commands/setup.sh .cache — the steps `lockchaos setup` runs for an installed
#     package, written down once: apt (redis-server, redis-sentinel, redis-tools, libfaketime,
#     dpkg-dev), Toxiproxy v2.12.0 as .cache/bin/toxiproxy-{server,cli}, and Redis 7.0.x built
#     from Debian's source package with MALLOC=libc into .cache/redis/ (Debian's binary links
#     jemalloc, which libfaketime cannot wrap)
#   * chromium (headless, to render reports in the tests; skipped where not installable)
#   * .venv with `pip install -e .[dev]`
#
# Each step checks for its result first, so a second run with everything present takes seconds.
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
say() { printf '[setup] %s\n' "$*"; }
status=0  # 1 once a step could not be set up under CI
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- apt packages, Toxiproxy, Redis (MALLOC=libc): the steps `lockchaos setup` runs --------
bash "$ROOT/chaos/commands/setup.sh" "$CACHE"

# --- chromium: renders report.html headless in the test suite (skipped where it is missing) -
if ! command -v chromium >/dev/null; then
    say "apt-get install chromium"
    as_root apt-get update -qq || true
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        chromium >/dev/null 2>&1 \
        || unavailable setup "chromium is not installable here" \
            "the report rendering test will skip" || status=1
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
bash "$ROOT/scripts/drivers-setup.sh" || status=1  # the Java, Go and Node lock drivers
bash "$ROOT/scripts/docker-setup.sh" || status=1  # the docker provider's engine, Compose v2, images
bash "$ROOT/scripts/ci-tools-setup.sh" || status=1  # actionlint + shellcheck (the CI examples)
if [ "$status" -ne 0 ]; then
    printf '[setup] failed: some prerequisites could not be set up (see above)\n' >&2
    exit 1
fi
say "ready"
