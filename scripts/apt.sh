# shellcheck shell=bash
# Sourced by the set-up scripts: `apt_install LOG PACKAGE...`, Debian packages installed one
# set-up step at a time (setup.sh runs its steps at once, and apt-get holds its own locks
# without waiting for them: "Could not get lock /var/lib/apt/lists/lock"), with no service
# started during the install (a policy-rc.d that says no, while it runs, as root; the set-up
# starts what it needs itself) and apt's output in LOG. Status: apt-get's.
#
# APT_LOCK (default .cache/apt.lock of the checkout) is the lock the steps share.
APT_LOCK="${APT_LOCK:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/apt.lock}"
APT_LOCK_WAIT_S=1800

apt_install() {
    local log="$1"
    shift
    mkdir -p "$(dirname "$APT_LOCK")" "$(dirname "$log")"
    (
        flock -w "$APT_LOCK_WAIT_S" 8 || { echo "apt: $APT_LOCK held for 30 min" >"$log"; exit 1; }
        sudo_if() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
        policy=/usr/sbin/policy-rc.d own_policy=""
        if [ "$(id -u)" -eq 0 ] && [ ! -e "$policy" ]; then
            printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
        fi
        sudo_if apt-get update -qq >"$log" 2>&1
        sudo_if env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "$@" >>"$log" 2>&1
        status=$?
        [ -n "$own_policy" ] && rm -f "$policy"
        exit $status
    ) 8>"$APT_LOCK"
}
