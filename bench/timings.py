"""How fast the things the tests check for correctness happen: the speed targets the tests
used to assert, measured here instead (a loaded machine must not fail a correct test).

Each row is one measurement repeated ``--repeat`` times on its own fresh local topology: the
median and the worst, next to the target the tests once asserted. Nothing here asserts.

* ``redlock no quorum``: an acquire with 3 of 5 links refused (1 s TTL) — target < 1 s;
* ``redlock slow nodes``: 3 of 5 nodes answering after 1 s — the per-node timeouts (0.1 s at
  1 s TTL) end it, target < 0.8 s;
* ``socket timeout``: ``with_socket_timeout(…, 0.03)`` against a 500 ms latency — < 0.3 s;
* ``php-lock gives up``: its retry window is expire / 2 (2 s TTL) — target ≤ 1.2 s;
* ``<loop> granted``: 000's and 002's acquire loops, granted once a holder releases 0.3 s
  later — target < 0.9 s; ``<loop> gives up``: behind a key that outlives the window,
  target ≤ the window (5/3 s, 3 s) + 0.5 s;
* ``pause resumes``: a client paused 300 ms before its release's DEL while another writes
  every 40 ms resumes by the clock — lateness target < 12 ms;
* ``explore wait ends``: a program's wait after a stale DEL ends once c2's lease ran out —
  target < 150 ms after the DEL returned;
* ``setup again``: ``lockchaos setup`` with everything present (builds nothing) — < 60 s.

    python bench/timings.py [--repeat 5] [--only redlock]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory

import redis

from chaos import history as h
from chaos import topology
from chaos.explore import Program, Step, replay
from chaos.explore.session import ENDED_EARLY
from chaos.locks import build_context
from chaos.locks.context import with_socket_timeout
from chaos.locks.contract import LockClient
from chaos.lockspec import resolve
from chaos.topology import LocalTopology
from chaos.topology.node import wait_until
from chaos.workload import PausePoint, WorkerPool, WorkloadConfig

KEY = "bench:lock"
RETRY_LOOPS = {"lua-retry-sleep": 5 / 3, "lua-retry-busy": 3.0}  # window / lock_timeout


Maker = Callable[[str, str, int], LockClient]


@contextmanager
def lock_clients(kind: str, nodes: int) -> Iterator[tuple[LocalTopology, Maker]]:
    """A fresh topology and a maker of lock clients on it (their connections closed after)."""
    contexts = []
    with topology.start(kind, nodes=nodes) as topo:

        def make(name: str, cid: str, ttl_ms: int) -> LockClient:
            ctx = build_context(topo.client_view(cid), lock_name=KEY, ttl_ms=ttl_ms)
            contexts.append(ctx)
            return resolve(name).create(ctx)

        try:
            yield topo, make
        finally:
            for ctx in contexts:
                ctx.close()


def timed(call: Callable[[], object]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def redlock_no_quorum() -> float:
    with lock_clients("standalone", 5) as (topo, make):
        lock = make("redlock", "c1", 1000)
        for link in topo.client_links("c1")[:3]:
            topo.toxiproxy.disable(link.name)
        return timed(lock.acquire)


def redlock_slow_nodes() -> float:
    with lock_clients("standalone", 5) as (topo, make):
        lock = make("redlock", "c1", 1000)
        for link in topo.client_links("c1")[:3]:
            topo.toxiproxy.add_toxic(link.name, "latency", latency=1000)
        return timed(lock.acquire)


def socket_timeout() -> float:
    with lock_clients("standalone", 1) as (topo, _):
        ctx = build_context(topo.client_view("c1"), lock_name=KEY, ttl_ms=300)
        fast = with_socket_timeout(ctx.nodes[0], 0.03)
        topo.toxiproxy.add_toxic(topo.client_links("c1")[0].name, "latency", latency=500)
        started = time.monotonic()
        with suppress(redis.TimeoutError):
            fast.ping()
        ctx.close()
        fast.connection_pool.disconnect()
        return time.monotonic() - started


def php_gives_up() -> float:
    with lock_clients("standalone", 1) as (_, make):
        holder, waiter = make("php-lock", "c1", 2000), make("php-lock", "c2", 2000)
        holder.acquire()
        return timed(waiter.acquire)


def loop_granted(name: str) -> Callable[[], float]:
    def measure() -> float:
        with lock_clients("standalone", 1) as (_, make):
            holder, waiter = make("lua", "c0", 1000), make(name, "c2", 1000)
            lease = holder.acquire()
            release = threading.Timer(0.3, holder.release, [lease])
            release.start()
            waited = timed(waiter.acquire)
            release.join()
            return waited

    return measure


def loop_gives_up(name: str) -> Callable[[], float]:
    def measure() -> float:
        with lock_clients("standalone", 1) as (topo, make):
            topo.nodes[0].client().set(KEY, "someone else", px=int(RETRY_LOOPS[name] * 1000) + 1000)
            return timed(make(name, "c1", 1000).acquire)

    return measure


def pause_lateness() -> float:
    """Seconds late (median of 3 pauses) that a 300 ms pause before a DEL ended."""
    config = WorkloadConfig(lock=resolve("get-then-del"), ttl_ms=200, work_ms=40, duration_s=6)
    with TemporaryDirectory() as tmp, topology.start("standalone", nodes=1) as topo:
        path = Path(tmp) / "history.jsonl"
        with h.HistoryWriter(path) as history:
            pool = WorkerPool(topo, config, history, clients=2, seed=1)
            pool.start()
            try:
                for count in range(1, 4):
                    pool.arm("c1", PausePoint("DEL", action="pause", duration_ms=300, op="release"))
                    wait_until(partial(_resumed, path, count), "a pause to end", timeout_s=5)
            finally:
                pool.stop()
        events = h.read_history(path)
    late = []
    for point in (e for e in events if e.f == h.PAUSE_POINT):
        after = next(e for e in events if e.process == "c1" and e.f == h.RELEASE and e.t > point.t)
        late.append((after.t - point.t) / 1e9 - 0.3)
    return statistics.median(late)


def _resumed(path: Path, count: int) -> bool:
    """``count`` pause points, and c1's release went on after the last one."""
    events = h.read_history(path)
    points = [e.t for e in events if e.f == h.PAUSE_POINT]
    releases = [e.t for e in events if e.process == "c1" and e.f == h.RELEASE]
    return len(points) == count and any(r > points[-1] for r in releases)


def explore_wait_end() -> float:
    """Seconds from c1's stale DEL returning to the next acquire (c2's lease: 100 ms)."""
    # c1's key expires while it waits, c2 takes the lock, c1's stale DEL removes c2's key;
    # then the wait whose end is measured, and c2 asks again
    wait = Step("sleep", ttls=1.5)
    steps = (Step("acquire", "c1"), wait, Step("acquire", "c2"), Step("release", "c1"), wait)
    program = Program("del-release", ttl_ms=100, clients=2, topology="standalone", nodes=1,
                      steps=(*steps, Step("acquire", "c2")))
    with TemporaryDirectory() as tmp:
        history = Path(tmp) / "h.jsonl"
        _, outcomes = replay(program, history_path=history)
        events = h.read_history(history)
    assert outcomes[4] == ENDED_EARLY, outcomes
    released = next(
        e.t for e in events if e.process == "c1" and e.f == h.RELEASE and e.type == h.OK
    )
    last_ask = [e.t for e in events if e.f == h.ACQUIRE and e.type == h.INVOKE][-1]
    return (last_ask - released) / 1e9


def setup_again() -> float:
    return timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "chaos.cli", "setup"],
            capture_output=True,
            check=True,
            timeout=600,
        )
    )


MEASURES: dict[str, tuple[Callable[[], float], float]] = {
    "redlock no quorum": (redlock_no_quorum, 1.0),
    "redlock slow nodes": (redlock_slow_nodes, 0.8),
    "socket timeout": (socket_timeout, 0.3),
    "php-lock gives up": (php_gives_up, 1.2),
    **{f"{name} granted": (loop_granted(name), 0.9) for name in RETRY_LOOPS},
    **{
        f"{name} gives up": (loop_gives_up(name), ratio + 0.5)
        for name, ratio in RETRY_LOOPS.items()
    },
    "pause resumes (late)": (pause_lateness, 0.012),
    "explore wait ends": (explore_wait_end, 0.15),
    "setup again": (setup_again, 60.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only rows whose name contains this")
    args = parser.parse_args()
    print(f"{'measure':24} {'median s':>9} {'worst s':>9} {'target s':>9}  within")
    for name, (measure, target) in MEASURES.items():
        if args.only not in name:
            continue
        seconds = [measure() for _ in range(args.repeat)]
        median, worst = statistics.median(seconds), max(seconds)
        within = sum(1 for s in seconds if s < target)
        print(
            f"{name:24} {median:9.3f} {worst:9.3f} {target:9.3f}  {within}/{args.repeat}",
            flush=True,
        )


if __name__ == "__main__":
    main()
