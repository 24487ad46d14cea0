"""What containers cost: topology ready times per provider and server, and the same cells on
local processes and on the docker provider.

Two tables, as JSON (and lines on stderr):

* ``ready``: each shape (standalone × 5 masters, sentinel, cluster) started ``--repeat``
  times per provider and server (local: its Redis 7.0 build; docker: every ``--servers``
  image) for a campaign's default 5 clients, until ready by the topology's own checks plus
  one client's links (``client_view``), then torn down; median and max of each.
* ``price``: truth-table cells that stop at their first hard violation
  (``chaos.experiments.truth_table.CELLS``) on both providers, seed by seed, the providers
  interleaved so both see the same load: time from the run's start to the first hard
  violation (the checker's ``first_hard_violation_s``), and the whole run's wall time
  (start-up and teardown included); then ``lua`` with 10 clients, no faults and no work for
  ``--cycles-s`` seconds: lock cycles per second (every cycle is acquire → read → write →
  release through a client's own Toxiproxy link: to a container on docker).

    python bench/providers.py [--repeat 5] [--seeds 5] [--servers redis-7.0,redis-8.0,valkey-8.1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chaos.campaign import Campaign
from chaos.experiments.execute import run_campaign
from chaos.experiments.truth_table import CELLS, Cell
from chaos.topology import SHAPES, open_provider
from chaos.topology.images import DEFAULT_SERVER

PROVIDERS = ("local", "docker")
CLIENTS = 5  # a campaign's default: the docker provider publishes these clients' ports
PRICE_CELLS = (
    "del-release × slow-work",
    "get-then-del × client-pause-at",
    "lua × failover",
    "lua (topology=cluster) × failover",
)


def _summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "max": None}
    return {"median": statistics.median(values), "max": max(values)}


def ready(provider: str, server: str, shape: str, repeat: int) -> dict[str, Any]:
    startups, teardowns = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        topo = open_provider(provider, shape, server=server, clients=CLIENTS)
        try:
            topo.client_view("c1")
            up = time.perf_counter()
        finally:
            topo.close()
        startups.append(up - started)
        teardowns.append(time.perf_counter() - up)
    row = {"provider": provider, "server": server, "shape": shape, "runs": repeat,
           "ready_s": _summary(startups), "teardown_s": _summary(teardowns)}  # fmt: skip
    print(f"ready {provider} {server} {shape}: {row['ready_s']}", file=sys.stderr)
    return row


def _cell(name: str) -> Cell:
    return next(cell for cell in CELLS if cell.name == name)


def price(cell: Cell, seeds: int, duration_s: float) -> list[dict[str, Any]]:
    """The cell on both providers, seed by seed (interleaved)."""
    firsts: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    walls: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    matched = dict.fromkeys(PROVIDERS, 0)
    for seed in range(1, seeds + 1):
        for provider in PROVIDERS:
            campaign = Campaign.from_options(
                cell.lock, cell.faults, provider=provider, duration_s=duration_s, seed=seed,
                stop_on_first=True, fail_on="hard", **cell.campaign_options,
            )  # fmt: skip
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as out:
                verdict = run_campaign(campaign, Path(out)).verdict
            walls[provider].append(time.perf_counter() - started)
            matched[provider] += cell.check(verdict) is None
            if verdict.first_hard_violation_s is not None:
                firsts[provider].append(verdict.first_hard_violation_s)
    rows = []
    for provider in PROVIDERS:
        row = {"cell": cell.name, "provider": provider, "seeds": seeds,
               "matched": matched[provider], "first_hard_s": _summary(firsts[provider]),
               "wall_s": _summary(walls[provider])}  # fmt: skip
        print(f"price {cell.name} {provider}: {row}", file=sys.stderr)
        rows.append(row)
    return rows


def cycles(duration_s: float, rounds: int) -> list[dict[str, Any]]:
    """``lua``, 10 clients, no faults, no work: lock cycles per second, per provider."""
    rates: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    for seed in range(1, rounds + 1):
        for provider in PROVIDERS:
            campaign = Campaign.from_options(
                "lua", "", provider=provider, clients=10, work_ms=0, duration_s=duration_s,
                seed=seed,
            )  # fmt: skip
            with tempfile.TemporaryDirectory() as out:
                verdict = run_campaign(campaign, Path(out)).verdict
            rates[provider].append(verdict.counts["lock_cycles"] / verdict.duration_s)
    rows = [{"provider": p, "rounds": rounds, "lock_cycles_per_s": _summary(rates[p])}
            for p in PROVIDERS]  # fmt: skip
    print(f"cycles: {rows}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="start-ups per shape and server")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per cell and provider")
    parser.add_argument("--servers", default="redis-7.0,redis-8.0,valkey-8.1")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--cells", default=",".join(PRICE_CELLS), help="comma-separated names")
    parser.add_argument("--duration", type=float, default=20.0, help="cap per cell run (s)")
    parser.add_argument("--cycles-s", type=float, default=5.0)
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    results: dict[str, Any] = {"ready": [], "price": [], "cycles": []}
    for shape in shapes:
        results["ready"].append(ready("local", DEFAULT_SERVER, shape, args.repeat))
        for server in (s for s in args.servers.split(",") if s):
            results["ready"].append(ready("docker", server, shape, args.repeat))
    for name in (c for c in args.cells.split(",") if c):
        results["price"] += price(_cell(name), args.seeds, args.duration)
    results["cycles"] = cycles(args.cycles_s, args.seeds)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
