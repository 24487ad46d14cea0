#!/usr/bin/env bash
# Builds this driver into target/release/my-lock-driver: offline when cargo's registry already
# holds every crate it needs, else from crates.io.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if cargo fetch --offline --quiet 2>/dev/null; then
    exec cargo build --release --offline
fi
exec cargo build --release
