# Sourced by the set-up scripts: what happens when a prerequisite cannot be set up (issue 21).
#
#   unavailable TAG REASON CONSEQUENCE
#
# Outside CI: "[TAG] skipped: REASON (CONSEQUENCE)" on stdout and status 0: set-up goes on,
# and the tests that need it skip, naming what is missing (tests/prerequisites.py).
# Under CI (CI set, as CI services set it: CI=true): "[TAG] failed: REASON" on stderr and
# status 1, so the run goes red instead of going green having tested nothing; the tests fail
# rather than skip there too.
unavailable() {
    if [ -n "${CI:-}" ]; then
        printf '[%s] failed: %s (under CI a prerequisite that cannot be set up is an error)\n' \
            "$1" "$2" >&2
        return 1
    fi
    printf '[%s] skipped: %s (%s)\n' "$1" "$2" "$3"
}
