"""Lock cycles per second with 10 clients and no faults, next to redis-benchmark SET NX.

A cycle is acquire → read → write → release through the client's own Toxiproxy link, with
zero work time. redis-benchmark runs ``SET key v NX PX 200`` with 10 connections directly on
the same node in the same run, so the ratio says how much of Redis's raw speed the harness
(per-process Python clients, proxies, one history line per event) leaves for finding races.

    python bench/throughput.py [--duration 5] [--lock lua]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from chaos import history as h
from chaos import topology
from chaos.topology import binaries
from chaos.workload import WorkloadConfig, run_workload

CLIENTS = 10


def redis_benchmark(port: int, requests: int) -> float:
    out = subprocess.run(
        [
            binaries.find("redis-benchmark"),
            "-h", "127.0.0.1", "-p", str(port),
            "-c", str(CLIENTS), "-n", str(requests), "--csv",
            "SET", "bench:lock", "v", "NX", "PX", "200",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    last = [line for line in out.splitlines() if line.strip()][-1]
    return float(last.split(",")[1].strip('"'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--lock", default="lua")
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    with topology.start("standalone", nodes=1) as topo, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        config = WorkloadConfig(lock=args.lock, ttl_ms=200, work_ms=0, duration_s=args.duration)
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
