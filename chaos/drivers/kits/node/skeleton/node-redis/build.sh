#!/bin/sh
# Install the driver's packages: its client and the Node kit, the tarball `lockchaos setup
# --drivers` packed (package.json depends on it by its path).
set -eu
cd "$(dirname "$0")"
npm install --no-audit --no-fund --loglevel=error
