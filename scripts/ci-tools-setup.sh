#!/usr/bin/env bash
# The linters the suite runs over the CI examples (examples/github-actions*.yml): actionlint
# v1.7.12 (`go install`) as .cache/bin/actionlint, and Debian's shellcheck, which actionlint
# runs over every `run:` script. Idempotent: a second run with both present takes no time.
#
# One that cannot be set up is one line and set-up goes on (the test that needs it skips,
# naming it); under CI (CI set) that is an error instead (scripts/unavailable.sh).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.cache/bin"
ACTIONLINT_VERSION="v1.7.12"
# shellcheck source=unavailable.sh
source "$ROOT/scripts/unavailable.sh"
# shellcheck source=apt.sh
source "$ROOT/scripts/apt.sh"  # setup.sh's other steps may be installing meanwhile
say() { printf '[ci-tools] %s\n' "$*"; }
status=0

if [ ! -x "$BIN/actionlint" ]; then
    say "go install actionlint $ACTIONLINT_VERSION"
    mkdir -p "$BIN"
    GOBIN="$BIN" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" \
        >/dev/null 2>&1 \
        || unavailable ci-tools "go install actionlint failed" \
            "the CI example's lint test will skip" || status=1
fi
if ! command -v shellcheck >/dev/null; then
    say "apt-get install shellcheck"
    apt_install "$ROOT/.cache/ci-tools-apt.log" shellcheck \
        || unavailable ci-tools "shellcheck is not installable here" \
            "the CI example's lint test will skip" || status=1
fi
exit "$status"
