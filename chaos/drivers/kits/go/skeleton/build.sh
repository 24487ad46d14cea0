#!/bin/sh
# Build the driver into ./driver. The Go kit is go.mod's `replace`, where `lockchaos setup
# --drivers` installed it; go.sum starts as the kit's (the modules the two share).
set -eu
cd "$(dirname "$0")"
[ -f go.sum ] || cp "@KIT@/go.sum" go.sum
go build -o driver .
