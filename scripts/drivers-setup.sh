#!/usr/bin/env bash
# Build the bundled lock drivers (docs/driver-protocol.md) into .cache/drivers/, idempotently:
#
#   jedis/        Jedis 8.0.2 (Maven Central) + examples/drivers/jedis/src, compiled with javac
#   redisson/     Redisson 3.45.1 (Maven Central) + examples/drivers/redisson/src (+ the jedis
#                 driver's Json/Protocol classes)
#   redsync/      go-redsync v4.13.0 + go-redis v9 (Go module proxy), `go build`
#   node-redlock/ redlock 5.0.0-beta.2 + ioredis 5.9.3 (npm), `npm install`
#
# Each driver is rebuilt only when its sources changed (a stamp holds their checksum), so a
# second run with everything present takes well under a second. A missing toolchain (java,
# mvn, go, node/npm) skips that driver with one line and exit status 0: the rest of setup goes
# on, and `lockchaos run --lock <that driver>` then says it is not built. Under CI (CI set) a
# missing toolchain or a failed build is an error instead: the same line on stderr, and exit
# status 1 once every driver has been tried (scripts/unavailable.sh).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/examples/drivers"
OUT="${LOCKCHAOS_DRIVERS_DIR:-$ROOT/.cache/drivers}"
mkdir -p "$OUT"

# shellcheck source=unavailable.sh
source "$ROOT/scripts/unavailable.sh"
say() { printf '[drivers] %s\n' "$*"; }
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
    if ! (cd "$SRC/$name" && mvn -B -q -Dmaven.repo.local="$OUT/m2" \
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
if have java && have javac && have mvn; then
    JAVA_VERSION="$(javac -version 2>&1 | head -n1)"  # a rebuild when the JDK changes
    PROTO=("$SRC/jedis/src/lockchaos/Json.java" "$SRC/jedis/src/lockchaos/Protocol.java")
    build_java jedis "${PROTO[@]}" "$SRC/jedis/src/lockchaos/JedisDriver.java" || status=1
    build_java redisson "${PROTO[@]}" "$SRC/redisson/src/lockchaos/RedissonDriver.java" || status=1
else
    unavailable drivers "java, javac or mvn not found: no Jedis and Redisson drivers (install a JDK 17 and Maven)" \
        "their tests will skip" || status=1
fi

if have go; then
    dir="$OUT/redsync"
    stamp="$(sums "$SRC/redsync/go.mod" "$SRC/redsync/go.sum" "$SRC/redsync/main.go")-$(go version)"
    if ! fresh "$dir" "$stamp"; then
        say "building redsync (Go module proxy + go build)"
        mkdir -p "$dir"
        if (cd "$SRC/redsync" && GOMODCACHE="$OUT/go/mod" GOFLAGS=-modcacherw \
                go build -trimpath -o "$dir/redsync-driver" . >"$dir/build.log" 2>&1); then
            echo "$stamp" >"$dir/.stamp"
        else
            tail -n 20 "$dir/build.log" >&2; say "redsync: go build failed (see above)"; status=1
        fi
    fi
else
    unavailable drivers "go not found: no redsync driver (install Go)" "its tests will skip" || status=1
fi

if have node && have npm; then
    dir="$OUT/node-redlock"
    stamp="$(sums "$SRC/node-redlock/package.json" "$SRC/node-redlock/package-lock.json" "$SRC/node-redlock/driver.js")-$(node --version)"
    if ! fresh "$dir" "$stamp"; then
        say "building node-redlock (npm)"
        mkdir -p "$dir"
        cp "$SRC/node-redlock/package.json" "$SRC/node-redlock/driver.js" "$dir/"
        [ -f "$SRC/node-redlock/package-lock.json" ] && cp "$SRC/node-redlock/package-lock.json" "$dir/"
        if (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error --cache "$OUT/npm-cache" >"$dir/build.log" 2>&1 \
                || npm install --no-audit --no-fund --loglevel=error --cache "$OUT/npm-cache" >>"$dir/build.log" 2>&1); then
            echo "$stamp" >"$dir/.stamp"
        else
            tail -n 20 "$dir/build.log" >&2; say "node-redlock: npm failed (see above)"; status=1
        fi
    fi
else
    unavailable drivers "node or npm not found: no node-redlock driver (install Node.js 18+ and npm)" \
        "its tests will skip" || status=1
fi

# A failed build is reported above; outside CI setup goes on (the drivers are optional for
# lockchaos), under CI it fails.
if [ "$status" -eq 0 ]; then say "ready"; exit 0; fi
unavailable drivers "some drivers could not be set up (see above)" "their tests will skip"
