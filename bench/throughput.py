"""Lock cycles per second with 10 clients and no faults, next to redis-benchmark SET NX.

A cycle is acquire → read → write → release through the client's own Toxiproxy link, with
zero work time. redis-benchmark runs ``SET key v NX PX 200`` with 10 connections directly on
the same node in the same run, so the ratio says how much of Redis's raw speed the harness
(per-process Python clients, proxies, one history line per event) leaves for finding races.

    python bench/throughput.py [--duration 5] [--lock lua]

``--drivers`` compares, in one run on five standalone masters, the lock cycles per second of
every bundled driver (Jedis, Redisson, redsync, node-redlock; chaos/drivers/) and of the Python,
Go and Node driver kits' skeletons (``lockchaos driver new --lang L``) with the Python ``lua``
lock (and the Python ``redlock`` for the two Redlocks), counted from each run's first acquire (a
JVM's start-up is not a lock's speed); then the protocol's own cost per round trip: sequential
acquire+release pairs from one client against a driver that answers without touching Redis
(plain Python, on each of those kits, and the Java drivers' protocol code), and against each
real driver next to its Python twin doing the same commands.

    python bench/throughput.py --drivers [--duration 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chaos import history as h
from chaos import topology
from chaos.drivers.languages import LANGUAGES
from chaos.lockspec import resolve
from chaos.topology import binaries
from chaos.workload import WorkloadConfig, run_workload

CLIENTS = 10
DRIVER_CLIENTS = 5  # --drivers: as many clients as a run has (ten JVMs take ~10 s to start)


def redis_benchmark(port: int, requests: int) -> float:
    out = subprocess.run(
        [
            binaries.find("redis-benchmark"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-c",
            str(CLIENTS),
            "-n",
            str(requests),
            "--csv",
            "SET",
            "bench:lock",
            "v",
            "NX",
            "PX",
            "200",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    last = [line for line in out.splitlines() if line.strip()][-1]
    return float(last.split(",")[1].strip('"'))


# -- --drivers ---------------------------------------------------------------------------------

# driver → the Python lock doing the same commands (for the per-operation comparison)
TWINS = {
    "jedis-del-release": "del-release",
    "jedis-lua": "lua-setnx-expire",
    "redisson": "reentrant",
    "redsync": "redlock",
    "node-redlock": "redlock",
}
NULL_PYTHON = """
import json, sys
n = 0
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello":
        print(json.dumps({"type": "hello", "ok": True, "capabilities": []}), flush=True)
    elif m["type"] == "acquire":
        n += 1
        print(json.dumps({"type": "ok", "id": m["id"], "token": "c1:%d" % n}), flush=True)
    else:
        print(json.dumps({"type": "ok", "id": m["id"]}), flush=True)
"""


# The same, on the Python driver kit: what the kit's threads and checks cost per round trip.
NULL_KIT = """
import sys
sys.path.insert(0, {kit!r})
import lockchaos_driver as kit


class Null:
    def __init__(self, hello):
        pass

    def acquire(self, req):
        return kit.Granted()

    def release(self, req, lease):
        return kit.Granted()


kit.serve(kit.Driver(name="null", library="none"), Null)
"""


# The same on the Node kit (it needs no Redis client: its own sources do) and on the Go kit
# (built in a new Go driver's module, against the installed kit).
NULL_NODE = """
const kit = require({kit!r});
kit.serve({{ driver: "null", library: "none", unhooked: true }}, async () => ({{
  acquire: async () => kit.granted(undefined, 1000),
  release: async () => kit.released(),
}}));
"""

NULL_GO = """package main

import kit "lockchaos.dev/driverkit"

type null struct{}

func (null) Acquire(*kit.Request) kit.Outcome { return kit.Granted(nil, 1000) }
func (null) Release(*kit.Request) kit.Outcome { return kit.Released() }

func main() {
	kit.Serve(kit.Description{Driver: "null", Library: "none", Unhooked: true},
		func(*kit.Hello) (*null, error) { return &null{}, nil })
}
"""
KIT_LANGUAGES = ("python", "go", "node")  # the kits whose skeleton and null driver are measured


def kit_skeleton(lang: str, directory: Path) -> str | None:
    """``lockchaos driver new --lang LANG`` (its first client) into ``directory``: its
    ``exec:`` value; None when that language's toolchain or built kit is not here."""
    language = LANGUAGES[lang]
    if language.missing_tools() or language.built() is None:
        return None
    done = subprocess.run([sys.executable, "-m", "chaos.cli", "driver", "new", "--lang",
                           lang, str(directory)], capture_output=True, text=True,
                          check=True, timeout=600)
    return done.stdout.rstrip("\n").splitlines()[-1]


def kit_null(lang: str, directory: Path) -> str:
    """The null lock on the kit of ``lang`` (its skeleton already new'd in ``directory``):
    its ``exec:`` value."""
    if lang == "python":
        script = directory / "null_kit_driver.py"
        script.write_text(NULL_KIT.format(kit=str(LANGUAGES["python"].source)))
        return f"exec:{sys.executable} {script}"
    if lang == "node":
        script = directory / "null_kit_driver.js"
        script.write_text(NULL_NODE.format(kit=str(LANGUAGES["node"].source / "index.js")))
        return f"exec:node {script}"
    kit = LANGUAGES["go"].built()
    assert kit is not None
    (directory / "null").mkdir()
    (directory / "null" / "main.go").write_text(NULL_GO)
    env = {**os.environ, "GOMODCACHE": str(kit.parent.parent / "go" / "mod"),
           "GOFLAGS": "-modcacherw"}  # as the skeleton's build.sh
    subprocess.run(["go", "build", "-trimpath", "-o", "null-driver", "./null"], cwd=directory,
                   env=env, capture_output=True, check=True, timeout=600)
    return f"exec:{directory / 'null-driver'}"


def flush(topo: topology.Topology) -> None:
    """Every lock starts on empty nodes (locks leave keys of other types, or with no TTL)."""
    for node in topo.nodes:
        with node.client() as conn:
            conn.flushall()


def cycles(topo: topology.Topology, lock: str, duration_s: float) -> dict[str, float]:
    """Lock cycles per second once every client is running: counted from the moment the last
    client made its first acquire (a JVM's start-up is not its lock's speed) to the end."""
    flush(topo)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        config = WorkloadConfig(lock=resolve(lock), ttl_ms=200, work_ms=0, duration_s=duration_s)
        run_workload(topo, config, path, clients=DRIVER_CLIENTS)
        events = h.read_history(path)
    first: dict[str, int] = {}
    for e in events:
        if e.f == h.ACQUIRE and e.type == h.INVOKE:
            first.setdefault(e.process, e.t)
    if len(first) < DRIVER_CLIENTS:
        return {"lock_cycles_per_s": float("nan"), "all_started_after_s": float("nan")}
    since = max(first.values())
    done = sum(1 for e in events if e.f == h.RELEASE and e.type != h.INVOKE and e.t >= since)
    span_s = (events[-1].t - since) / 1e9
    return {
        "lock_cycles_per_s": round(done / span_s, 1),
        "all_started_after_s": round((since - events[0].t) / 1e9, 2),
        "measured_s": round(span_s, 2),
    }


def round_trip_ms(topo: topology.Topology, lock: str, pairs: int) -> float:
    """Median ms of one acquire+release pair, sequential, one client, nobody else."""
    from chaos.locks.context import build_context

    flush(topo)
    ctx = build_context(topo.client_view("bench"), lock_name="bench:rt", ttl_ms=10_000)
    client = resolve(lock).factory(ctx)
    times = []
    try:
        for _ in range(pairs):
            started = time.perf_counter()
            lease = client.acquire()
            assert lease, f"{lock}: acquire refused with nobody else around"
            client.release(lease)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()
        ctx.close()
    times = sorted(times[pairs // 5 :])  # the first fifth warms caches and JITs up
    return times[len(times) // 2]


def drivers_main(duration_s: float, pairs: int) -> None:
    from chaos.drivers import catalog

    out: dict[str, object] = {"clients": DRIVER_CLIENTS, "nodes": 5, "duration_s": duration_s}
    with topology.start("standalone", nodes=5) as topo, tempfile.TemporaryDirectory() as tmp:
        null_py = Path(tmp) / "null_driver.py"
        null_py.write_text(NULL_PYTHON)
        skeletons = {lang: kit_skeleton(lang, Path(tmp) / lang) for lang in KIT_LANGUAGES}
        kits = {f"{lang} kit skeleton": (lang, lock) for lang, lock in skeletons.items() if lock}
        java_null = [*catalog.BUNDLED_DRIVERS["jedis-lua"].argv()[:-1], "null"]
        nulls = {
            "python null driver": f"exec:{sys.executable} {null_py}",
            "java null driver": "exec:" + shlex.join(java_null),
            **{f"{lang} kit null driver": kit_null(lang, Path(tmp) / lang)
               for lang, _ in kits.values()},
        }
        runs: dict[str, dict[str, float]] = {}
        for lock in ["lua", "redlock", *catalog.BUNDLED_DRIVERS]:
            runs[lock] = cycles(topo, lock, duration_s)
        for name, (_, lock) in kits.items():
            runs[name] = cycles(topo, lock, duration_s)
        out["cycles"] = runs
        per_pair = {name: round_trip_ms(topo, lock, pairs) for name, lock in nulls.items()}
        for name, twin in [*TWINS.items(), *((name, "lua") for name in kits)]:
            lock = kits[name][1] if name in kits else name
            per_pair[name] = round_trip_ms(topo, lock, pairs)
            per_pair[f"{twin} (python twin of {name})"] = round_trip_ms(topo, twin, pairs)
        out["acquire_release_pair_ms_median"] = {k: round(v, 3) for k, v in per_pair.items()}
        # Two round trips of the protocol per pair.
        out["protocol_overhead_per_round_trip_ms"] = {
            name: round(per_pair[name] / 2, 3) for name in nulls}
    print(json.dumps(out, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--lock", default="lua")
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--drivers", action="store_true", help="every bundled driver vs Python")
    parser.add_argument("--pairs", type=int, default=500, help="--drivers: pairs per latency")
    args = parser.parse_args()
    if args.drivers:
        drivers_main(args.duration, args.pairs)
        return
    with topology.start("standalone", nodes=1) as topo, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        config = WorkloadConfig(lock=resolve(args.lock), ttl_ms=200, work_ms=0,
                                duration_s=args.duration)
        result = run_workload(topo, config, path, clients=CLIENTS)
        events = h.read_history(path)
        attempts = sum(1 for e in events if e.f == h.ACQUIRE and e.type == h.INVOKE)
        span_s = (events[-1].t - events[0].t) / 1e9
        setnx_per_s = redis_benchmark(topo.nodes[0].port, args.requests)
    cycles_per_s = result.completed_ops / span_s
    print(
        json.dumps(
            {
                "lock": args.lock,
                "clients": CLIENTS,
                "duration_s": round(span_s, 3),
                "lock_cycles_per_s": round(cycles_per_s, 1),
                "acquire_attempts_per_s": round(attempts / span_s, 1),
                "history_events": len(events),
                "redis_benchmark_setnx_per_s": setnx_per_s,
                "ratio_cycles_to_setnx": round(cycles_per_s / setnx_per_s, 5),
                "ratio_attempts_to_setnx": round(attempts / span_s / setnx_per_s, 5),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
