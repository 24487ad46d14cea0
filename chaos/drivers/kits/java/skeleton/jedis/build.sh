#!/usr/bin/env bash
# Builds this driver against lockchaos's Java kit, into target/: Maven copies its dependencies
# (the kit, the Redis client, an slf4j binding: pom.xml) from the local Maven repository
# lockchaos's set-up filled, where the kit is installed, javac compiles src/main/java, and
# target/java.args holds what `java @target/java.args` runs it with (the JVM flags for a cold
# start, the class path).
# `lockchaos driver new` ran it once; run it again after each edit. LOCKCHAOS_KIT: another
# built Java kit (the directory `lockchaos setup --drivers` built it in, kits/java).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
kit="${LOCKCHAOS_KIT:-@KIT@}"
if [ -z "$kit" ] || [ ! -d "$kit/m2" ]; then
    echo "build.sh: lockchaos's Java kit is not built ('$kit'): run \`lockchaos setup --drivers\`" >&2
    exit 2
fi
rm -rf target
if ! out="$(mvn -B -q -f pom.xml -Dmaven.repo.local="$kit/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies -DoutputDirectory=target/dependency 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
javac -Xlint:all --release 17 -encoding UTF-8 -d target/classes -cp "target/dependency/*" \
    $(find src/main/java -name '*.java')
cat >target/java.args <<ARGS
-XX:+UseSerialGC
-XX:TieredStopAtLevel=1
-Xss512k
-Xmx128m
-XX:-UsePerfData
-cp
"$PWD/target/classes:$PWD/target/dependency/*"
driver.LockDriver
ARGS
