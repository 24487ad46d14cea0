#!/usr/bin/env bash
# Builds this driver into target/release/driver: offline when cargo's registry already holds
# every crate it needs on this platform, else from crates.io.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
host="$(rustc -vV | sed -n 's/^host: //p')"
if cargo fetch --offline --quiet --target "$host" 2>/dev/null; then
    exec cargo build --release --offline
fi
exec cargo build --release
