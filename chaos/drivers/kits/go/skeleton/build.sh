#!/bin/sh
# Build the driver into ./driver. The Go kit is go.mod's `replace`, where `lockchaos setup
# --drivers` installed it; go.sum starts as the kit's (the modules the two share), and the
# modules come from the module cache setup filled next to the kit, built with its flags
# (-trimpath), so nothing is downloaded or compiled twice. Drop GOMODCACHE to use your own.
set -eu
cd "$(dirname "$0")"
[ -f go.sum ] || cp "@KIT@/go.sum" go.sum
GOMODCACHE="@KIT@/../../go/mod" GOFLAGS="${GOFLAGS:-} -modcacherw" go build -trimpath -o driver .
