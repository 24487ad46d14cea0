#!/usr/bin/env bash
# Build the driver kits and the bundled lock drivers (docs/driver-protocol.md) from their
# sources, shipped with the package in kits/ and sources/ next to this script, into OUT_DIR,
# idempotently:
#
#   build.sh OUT_DIR
#
#   kits/<lang>/  each language's driver kit (kits/<lang>/ in the package), built and installed
#                 where that language's tools look for it by build_kit_<lang> (below): the
#                 bundled drivers are written on them, so the kits are built first — kits/go/
#                 the Go kit's module (lockchaos.dev/driverkit), for a user's go.mod to
#                 `replace lockchaos.dev/driverkit => OUT/kits/go`; kits/node/ the Node kit,
#                 `npm pack`ed into lockchaos-driver-kit.tgz, for a user's package.json to
#                 depend on ("file:OUT/kits/node/lockchaos-driver-kit.tgz")
#   jedis/        Jedis 8.0.2 (Maven Central) + sources/jedis/src, compiled with javac
#   redisson/     Redisson 3.45.1 (Maven Central) + sources/redisson/src (+ the jedis
#                 driver's Json/Protocol classes)
#   redsync/      go-redsync v4.13.0 + go-redis v9 (Go module proxy) + the Go kit, `go build`
#   node-redlock/ redlock 5.0.0-beta.2 + ioredis 5.9.3 (npm) + the Node kit, `npm ci`
#   node-semaphore/ redis-semaphore 5.8.0 + ioredis 5.9.3 (npm) + the Node kit, `npm ci`
#
# What `lockchaos setup --drivers` runs (into the drivers/ of lockchaos's cache) and what a
# checkout's scripts/drivers-setup.sh runs (into .cache/drivers/). The downloads (Maven's
# repository, Go's module cache, npm's cache) are kept in OUT_DIR too. Nothing is written next
# to the sources (an installed package may be read-only).
#
# Each driver is rebuilt only when its sources changed (a stamp holds their checksum), so a
# second run with everything present takes well under a second. A missing toolchain (java,
# mvn, go, node/npm) skips that driver with one line saying what to install, and the others are
# still built. Progress goes to stdout as `[drivers] …` lines; exit status 1 (after every driver
# was tried) when one could not be built, its reason on stderr.
set -uo pipefail

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: build.sh OUT_DIR" >&2
    exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/sources"
KITS="$HERE/kits"
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
for dir in "$SRC" "$KITS"; do
    [ -d "$dir" ] || { echo "[drivers] $dir is missing: reinstall lockchaos" >&2; exit 1; }
done

say() { printf '[drivers] %s\n' "$*"; }
missing() { printf '[drivers] %s\n' "$*" >&2; status=1; }
have() { command -v "$1" >/dev/null 2>&1; }

# checksum of the given files (sorted), for "has anything changed since the last build?"
sums() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
fresh() { [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; }

build_java() {  # name, then the source files to compile
    local name="$1"; shift
    local dir="$OUT/$name" pom="$SRC/$name/pom.xml"
    local stamp; stamp="$(sums "$pom" "$@")-$JAVA_VERSION"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building $name (Maven Central + javac)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/classes"
    if ! (mvn -B -q -f "$pom" -Dmaven.repo.local="$OUT/m2" \
            org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
            -DoutputDirectory="$dir.tmp/lib" >"$dir.tmp/build.log" 2>&1); then
        tail -n 20 "$dir.tmp/build.log" >&2; say "$name: Maven failed (see above)"; return 1
    fi
    if ! javac -nowarn -encoding UTF-8 -d "$dir.tmp/classes" -cp "$dir.tmp/lib/*" "$@" >>"$dir.tmp/build.log" 2>&1; then
        tail -n 20 "$dir.tmp/build.log" >&2; say "$name: javac failed (see above)"; return 1
    fi
    echo "$stamp" >"$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

status=0

# -- the driver kits ------------------------------------------------------------------------------
# build_kit_<lang> builds the kit in $KITS/<lang> (chaos/drivers/kits/<lang>/) into
# "$(kit_out <lang>)" = $OUT/kits/<lang>/ and installs it where <lang>'s tools look for it (a
# local Maven repository, a Go module path, an npm tarball, a cargo path: whatever that
# language's skeleton, kits/<lang>/skeleton/, and the bundled drivers on that kit refer to).
# Each is written by its kit's owner and follows the drivers' rules below: skip when fresh
# (`fresh DIR STAMP`, the stamp a checksum of its sources and the toolchain's version), a
# missing toolchain is `missing "…: install …"` and return 1, a failed build the tail of its
# log on stderr and return 1. It writes $(kit_out <lang>)/.stamp last: a kit counts as built
# (`lockchaos doctor`, `lockchaos driver new`) once that file exists. A kit folder with no
# build_kit_<lang> here is one line and a failed build.
kit_out() { printf '%s/kits/%s' "$OUT" "$1"; }

build_kit_python() {  # one file, nothing to compile: a copy a driver can put on PYTHONPATH
    local dir; dir="$(kit_out python)"
    local files=("$KITS/python/lockchaos_driver.py")
    local stamp; stamp="$(sums "${files[@]}")"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "installing the python kit"
    mkdir -p "$dir" && cp "${files[@]}" "$dir/" && echo "$stamp" >"$dir/.stamp"
}

# The Go kit's module, installed where a user's go.mod points; the bundled redsync driver
# builds the copy next to its sources (a relative replace), the same files.
GO_KIT=("$KITS/go/driverkit/go.mod" "$KITS/go/driverkit/go.sum" "$KITS"/go/driverkit/*.go)
build_kit_go() {
    have go || { missing "go not found: no Go driver kit (install Go)"; return 1; }
    local dir stamp; dir="$(kit_out go)"; stamp="$(sums "${GO_KIT[@]}")"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "installing the Go driver kit"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" && cp "${GO_KIT[@]}" "$dir.tmp/" \
        && echo "$stamp" >"$dir.tmp/.stamp" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

# The Node kit as an npm tarball under a fixed name, which the bundled Node drivers' and a
# user's package.json depend on ("file:…/kits/node/lockchaos-driver-kit.tgz").
NODE_KIT=("$KITS/node/package.json" "$KITS"/node/*.js)
build_kit_node() {
    { have node && have npm; } || { missing "node or npm not found: no Node driver kit (install Node.js 18+ and npm)"; return 1; }
    local dir stamp; dir="$(kit_out node)"; stamp="$(sums "${NODE_KIT[@]}")-$(node --version)"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "packing the Node driver kit (npm pack)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/kit" && cp "${NODE_KIT[@]}" "$dir.tmp/kit/"
    if ! (cd "$dir.tmp/kit" && npm pack --pack-destination .. --loglevel=error --no-update-notifier \
            --cache "$OUT/npm-cache" >../build.log 2>&1); then
        tail -n 20 "$dir.tmp/build.log" >&2; say "the Node kit: npm pack failed (see above)"; return 1
    fi
    mv "$dir.tmp"/lockchaos-driver-kit-*.tgz "$dir.tmp/lockchaos-driver-kit.tgz" && rm -rf "$dir.tmp/kit"
    echo "$stamp" >"$dir.tmp/.stamp" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

for kit in "$KITS"/*/; do
    lang="$(basename "$kit")"
    case "$lang" in _*|.*) continue ;; esac  # __pycache__ and the like: not a kit
    if declare -F "build_kit_$lang" >/dev/null; then
        "build_kit_$lang" || status=1
    else
        missing "kit $lang: chaos/drivers/build.sh has no build_kit_$lang"
    fi
done

# -- the bundled drivers ---------------------------------------------------------------------------
if have java && have javac && have mvn; then
    JAVA_VERSION="$(javac -version 2>&1 | head -n1)"  # a rebuild when the JDK changes
    PROTO=("$SRC/jedis/src/lockchaos/Json.java" "$SRC/jedis/src/lockchaos/Protocol.java")
    build_java jedis "${PROTO[@]}" "$SRC/jedis/src/lockchaos/JedisDriver.java" || status=1
    build_java redisson "${PROTO[@]}" "$SRC/redisson/src/lockchaos/RedissonDriver.java" || status=1
else
    missing "java, javac or mvn not found: no Jedis and Redisson drivers (install a JDK 17 and Maven)"
fi

build_go() {  # name: sources/NAME/{go.mod,go.sum,*.go} on the Go kit, one binary NAME-driver
    local name="$1" dir="$OUT/$1" src="$SRC/$1"
    local stamp; stamp="$(sums "$src/go.mod" "$src/go.sum" "$src"/*.go)-$(sums "${GO_KIT[@]}")-$(go version)"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building $name (Go module proxy + go build)"
    mkdir -p "$dir"
    if (cd "$src" && GOMODCACHE="$OUT/go/mod" GOFLAGS=-modcacherw \
            go build -trimpath -o "$dir/$name-driver" . >"$dir/build.log" 2>&1); then
        echo "$stamp" >"$dir/.stamp"
    else
        tail -n 20 "$dir/build.log" >&2; say "$name: go build failed (see above)"; return 1
    fi
}

if have go; then
    build_go redsync || status=1
else
    missing "go not found: no redsync driver (install Go)"
fi

build_node() {  # name: sources/NAME/{package.json,package-lock.json,driver.js} on the Node kit
    local name="$1" dir="$OUT/$1" src="$SRC/$1"
    local files=("$src/package.json" "$src/package-lock.json" "$src/driver.js")
    local stamp; stamp="$(sums "${files[@]}")-$(sums "$OUT/kits/node/lockchaos-driver-kit.tgz")-$(node --version)"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building $name (npm)"
    mkdir -p "$dir"
    cp "${files[@]}" "$dir/"
    if (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error --cache "$OUT/npm-cache" >"$dir/build.log" 2>&1 \
            || npm install --no-audit --no-fund --loglevel=error --cache "$OUT/npm-cache" >>"$dir/build.log" 2>&1); then
        echo "$stamp" >"$dir/.stamp"
    else
        tail -n 20 "$dir/build.log" >&2; say "$name: npm failed (see above)"; return 1
    fi
}

if have node && have npm; then
    build_node node-redlock || status=1
    build_node node-semaphore || status=1
else
    missing "node or npm not found: no node-redlock and node-semaphore drivers (install Node.js 18+ and npm)"
fi

if [ "$status" -eq 0 ]; then say "ready: $OUT"; exit 0; fi
echo "[drivers] some drivers could not be built (see above)" >&2
exit 1
