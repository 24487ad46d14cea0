"""Start-up and teardown times of the local topologies, as JSON.

Start-up counts until the topology is ready by its own checks (PING everywhere, replicas
synced, Sentinels know their replicas and peers) plus, for standalone, one client's proxies
to all five nodes. Targets: standalone×5 with proxies ≤ 1 s; sentinel ≤ 3 s (2 cores).

    python bench/topology.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from chaos import topology


def measure(kind: str, repeat: int) -> dict[str, object]:
    startups, teardowns = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        topo = topology.start(kind, nodes=5)
        topo.client_view("c1")
        t1 = time.perf_counter()
        topo.close()
        t2 = time.perf_counter()
        startups.append(t1 - t0)
        teardowns.append(t2 - t1)
    return {
        "startup_s": {"median": statistics.median(startups), "max": max(startups)},
        "teardown_s": {"median": statistics.median(teardowns), "max": max(teardowns)},
        "runs": repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results = {kind: measure(kind, args.repeat) for kind in topology.SHAPES}
    results["targets_s"] = {"standalone": 1.0, "sentinel": 3.0}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
