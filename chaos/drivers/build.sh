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
#   jedis/        Jedis 8.0.2 (Maven Central) + the Java kit + sources/jedis/src, compiled with javac
#   redisson/     Redisson 3.45.1 (Maven Central) + the Java kit + sources/redisson/src
#   redsync/      go-redsync v4.13.0 + go-redis v9 (Go module proxy) + the Go kit, `go build`
#   bsm-redislock/ github.com/bsm/redislock v0.9.4 + go-redis v9 (Go module proxy) + the Go kit
#   node-redlock/ redlock 5.0.0-beta.2 + ioredis 5.9.3 (npm) + the Node kit, `npm ci`
#   node-semaphore/ redis-semaphore 5.8.0 + ioredis 5.9.3 (npm) + the Node kit, `npm ci`
#   node-redis-lock/ redis-lock 1.0.0 + redis 4.7.1 (node-redis v4, npm) + the Node kit
#   sesame-redlock/ @sesamecare-oss/redlock 1.4.0 + ioredis 5.9.3 (npm) + the Node kit
#   rust-redlock/ the redlock crate 2.0.0 + redis-rs 0.23.5 (crates.io) on the Rust kit,
#                 `cargo build --release`
#
# What `lockchaos setup --drivers` runs (into the drivers/ of lockchaos's cache) and what a
# checkout's scripts/drivers-setup.sh runs (into .cache/drivers/). The downloads (Maven's
# repository, Go's module cache, npm's cache, cargo's home and target) are kept in OUT_DIR too.
# Nothing is written next to the sources (an installed package may be read-only).
#
# Each driver is rebuilt only when its sources changed (a stamp holds their checksum), so a
# second run with everything present takes well under a second. A missing toolchain (java,
# mvn, go, node/npm, cargo) skips that driver with one line saying what to install, and the
# others are still built. Progress goes to stdout as `[drivers] …` lines; exit status 1 (after
# every driver was tried) when one could not be built, its reason on stderr.
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

# Maven and javac run for seconds each: C1 alone and the serial collector halve their CPU time.
export MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
JAVAC=(javac -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC -Xlint:all -Werror --release 17 -encoding UTF-8)

build_java() {  # where under OUT_DIR, its pom (dependencies), then the sources (on the Java kit, built first)
    local name="$1" pom="$2"; shift 2
    local dir="$OUT/$name"
    local stamp; stamp="$(sums "$pom" "$@" "$(kit_out java)/.stamp")-$JAVA_VERSION"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building $name (Maven Central + javac)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/classes"
    if ! (mvn -B -q -f "$pom" -Dmaven.repo.local="$OUT/m2" \
            org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
            -DoutputDirectory="$dir.tmp/lib" >"$dir.tmp/build.log" 2>&1); then
        tail -n 20 "$dir.tmp/build.log" >&2; say "$name: Maven failed (see above)"; return 1
    fi
    if ! "${JAVAC[@]}" -d "$dir.tmp/classes" -cp "$dir.tmp/lib/*" "$@" >>"$dir.tmp/build.log" 2>&1; then
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

# Rust: one cargo home and one target directory under OUT_DIR for every Rust build, so the
# crates the kit's conformance driver and the bundled rust-redlock share (redis-rs 0.23.5, serde)
# are downloaded and compiled once. Each crate's Cargo.lock pins every version (`--locked`);
# `cargo fetch` reads crates.io only for what the cargo home lacks (this platform's crates
# only), and the build itself runs offline.
build_cargo() {  # name, crate directory, binary, a crate to install beside it (or -), then
                 # every source file of the build
    local name="$1" crate="$2/Cargo.toml" bin="$3" install="$4" dir="$OUT/$1"; shift 4
    local stamp; stamp="$(sums "$@")-$(rustc --version)"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building $name (crates.io + cargo build --release)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    local cargo=(env CARGO_HOME="$OUT/cargo/home" CARGO_TARGET_DIR="$OUT/cargo/target" cargo)
    local host; host="$(rustc -vV | sed -n 's/^host: //p')"
    if ! { "${cargo[@]}" fetch --locked --target "$host" --manifest-path "$crate" \
            && "${cargo[@]}" build --release --locked --offline --manifest-path "$crate" \
            && cp "$OUT/cargo/target/release/$bin" "$dir.tmp/"; } >"$dir.tmp/build.log" 2>&1; then
        tail -n 20 "$dir.tmp/build.log" >&2; say "$name: cargo failed (see above)"; return 1
    fi
    [ "$install" = - ] || cp -r "$install"/{Cargo.toml,Cargo.lock,src} "$dir.tmp/"
    echo "$stamp" >"$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

# -- the Java kit: io.lockchaos:lockchaos-driver-kit (chaos/drivers/kits/java) --------------------
# Maven resolves what it compiles against (Gson; the Jedis, Lettuce and Redisson it hooks, all
# "provided"), javac compiles it — no Maven lifecycle plugins to download, as for the drivers —
# and its jar and pom are installed into OUT_DIR/m2 as `mvn install` lays them out: the local
# Maven repository the bundled Java drivers build against, and the one a driver made by
# `lockchaos driver new --lang java` builds against (its build.sh passes -Dmaven.repo.local).
# OUT_DIR/kits/java/ keeps the jar, its pom and `m2`, a link to that repository.
build_kit_java() {
    if ! { have java && have javac && have jar && have mvn; }; then
        missing "java, javac, jar or mvn not found: no Java kit (install a JDK 17 and Maven)"; return 1
    fi
    local src="$KITS/java" dir sources version
    dir="$(kit_out java)"
    mapfile -t sources < <(find "$src/src/main/java" -name '*.java' | sort)
    version="$(sed -n 's:^  <version>\(.*\)</version>:\1:p' "$src/pom.xml" | head -n1)"
    local stamp; stamp="$(sums "$src/pom.xml" "${sources[@]}")-$(javac -version 2>&1 | head -n1)"
    if fresh "$dir" "$stamp"; then return 0; fi
    say "building the Java kit (Maven Central + javac)"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/classes"
    local log="$dir.tmp/build.log" jarname="lockchaos-driver-kit-$version"
    if ! mvn -B -q -f "$src/pom.xml" -Dmaven.repo.local="$OUT/m2" \
            org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
            -DoutputDirectory="$dir.tmp/deps" >"$log" 2>&1; then
        tail -n 20 "$log" >&2; say "the Java kit: Maven failed (see above)"; return 1
    fi
    if ! { "${JAVAC[@]}" -d "$dir.tmp/classes" -cp "$dir.tmp/deps/*" \
               "${sources[@]}" && jar --create --file "$dir.tmp/$jarname.jar" -C "$dir.tmp/classes" .; } >>"$log" 2>&1; then
        tail -n 20 "$log" >&2; say "the Java kit: javac failed (see above)"; return 1
    fi
    local repo="$OUT/m2/io/lockchaos/lockchaos-driver-kit/$version"
    mkdir -p "$repo" && cp "$dir.tmp/$jarname.jar" "$repo/" && cp "$src/pom.xml" "$repo/$jarname.pom"
    cp "$src/pom.xml" "$dir.tmp/$jarname.pom" && ln -s ../../m2 "$dir.tmp/m2"
    rm -rf "$dir.tmp/deps" "$dir.tmp/classes"
    echo "$stamp" >"$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

build_kit_rust() {  # the crate a driver names by path (@KIT@ in the skeleton's Cargo.toml), a
                    # copy in kits/rust/, and the kit's conformance driver built beside it
    local src="$KITS/rust"
    if ! have cargo || ! have rustc; then
        missing "cargo not found: no Rust kit (install Rust: https://rustup.rs)"; return 1
    fi
    build_cargo kits/rust "$src/conformance" lockchaos-conformance-driver "$src" \
        "$src"/{Cargo.toml,Cargo.lock} "$src"/src/*.rs \
        "$src"/conformance/{Cargo.toml,Cargo.lock,src/main.rs} "$src/skeleton/src/lock.rs"
}

build_rust_redlock() {  # the redlock crate 2.0.0 on the kit
    build_cargo rust-redlock "$SRC/rust-redlock" rust-redlock-driver - \
        "$KITS/rust/Cargo.toml" "$KITS/rust"/src/*.rs \
        "$SRC"/rust-redlock/{Cargo.toml,Cargo.lock,src/main.rs}
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
if have java && have javac && have mvn && [ -f "$(kit_out java)/.stamp" ]; then
    JAVA_VERSION="$(javac -version 2>&1 | head -n1)"  # a rebuild when the JDK changes
    # Each resolves what the Java kit's build has just downloaded (and its slf4j binding): the
    # Jedis and Redisson drivers build at once. The kit's conformance driver (the Jedis
    # skeleton's lock, kits/java/conformance) has the Jedis driver's dependencies: after it.
    { build_java jedis "$SRC/jedis/pom.xml" "$SRC/jedis/src/lockchaos/JedisDriver.java" &&
      build_java kits/java/conformance "$KITS/java/skeleton/jedis/pom.xml" \
          "$KITS/java/skeleton/jedis/src/main/java/driver/LockDriver.java" \
          "$KITS/java/conformance/src/conformance/ConformanceDriver.java"; } & jedis=$!
    build_java redisson "$SRC/redisson/pom.xml" "$SRC/redisson/src/lockchaos/RedissonDriver.java" & redisson=$!
    wait "$jedis" || status=1
    wait "$redisson" || status=1
else
    missing "java, javac or mvn not found, or the Java kit not built: no Jedis and Redisson drivers (install a JDK 17 and Maven)"
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

# A kit's conformance driver, built where its launcher runs it (it builds on first use
# otherwise: a test's first hello) from the caches its drivers filled: `run --build`.
build_conformance() {  # language
    [ -d "$(kit_out "$1")" ] || return 0  # no kit: said where it was not built
    if ! LOCKCHAOS_KIT="$(kit_out "$1")" "$KITS/$1/conformance/run" --build \
            >"$OUT/$1-conformance.log" 2>&1; then
        tail -n 20 "$OUT/$1-conformance.log" >&2; say "the $1 kit's conformance driver failed to build (see above)"
        return 1
    fi
}

# The Go builds compile (one after the other: they share the module cache) while npm installs
# the Node drivers (CPU beside downloads): waited for below.
go_build=""
if have go; then
    ( rc=0; build_go redsync || rc=1; build_go bsm-redislock || rc=1
      build_conformance go || rc=1; exit "$rc" ) & go_build=$!
else
    missing "go not found: no redsync and bsm-redislock drivers (install Go)"
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
    for name in node-redlock node-semaphore node-redis-lock sesame-redlock; do
        build_node "$name" || status=1
    done
    build_conformance node || status=1
else
    missing "node or npm not found: no node-redlock, node-semaphore, node-redis-lock and sesame-redlock drivers (install Node.js 18+ and npm)"
fi
if [ -n "$go_build" ]; then wait "$go_build" || status=1; fi

if have cargo && have rustc; then
    build_rust_redlock || status=1
else
    missing "cargo not found: no rust-redlock driver (install Rust: https://rustup.rs)"
fi

if [ "$status" -eq 0 ]; then say "ready: $OUT"; exit 0; fi
echo "[drivers] some drivers could not be built (see above)" >&2
exit 1
