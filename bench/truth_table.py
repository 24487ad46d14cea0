"""Every truth-table cell over many seeds: detection rate, time to the first hard violation,
false hard verdicts.

Targets: every "hard" cell detected in 20/20 seeds with median time ≤ 5 s; no false hard
verdict in any cell that predicts none. Prints JSON (and a table on stderr).

    python bench/truth_table.py [--seeds 20] [--cells redlock] [--duration 10] [--shard K/N]
                                [--drivers]   # the Java, Go and Node drivers' cells instead
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from chaos.campaign import Campaign
from chaos.experiments.execute import run_campaign
from chaos.experiments.shard import parse_shard, take_shard
from chaos.experiments.truth_table import CELLS, DRIVER_CELLS, Cell


def run_cell(cell: Cell, seeds: int, duration_s: float, quiet_s: float) -> dict[str, object]:
    matched, firsts, false_hard, wall = 0, [], 0, []
    failures: list[str] = []
    for seed in range(1, seeds + 1):
        campaign = Campaign.from_options(
            cell.lock,
            cell.faults,
            duration_s=duration_s if cell.stop_on else quiet_s,
            seed=seed,
            stop_on_first=cell.stop_on is not None,
            fail_on=cell.stop_on or "hard",
            **cell.campaign_options,
        )
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            verdict = run_campaign(campaign, Path(out)).verdict
        wall.append(time.perf_counter() - started)
        problem = cell.check(verdict)
        matched += problem is None
        if problem:
            failures.append(f"seed {seed}: {problem}")
        if verdict.first_hard_violation_s is not None:
            firsts.append(verdict.first_hard_violation_s)
        if not cell.expected.startswith("hard") and verdict.hard_violations:
            false_hard += 1
    quantiles = statistics.quantiles(firsts, n=10) if len(firsts) >= 2 else firsts
    return {
        "cell": cell.name,
        "expected": cell.expected,
        "seeds": seeds,
        "matched": matched,
        "detection_rate": matched / seeds,
        "first_hard_s_median": statistics.median(firsts) if firsts else None,
        "first_hard_s_p90": quantiles[-1] if firsts else None,
        "false_hard_verdicts": false_hard,
        "wall_s_per_seed": statistics.mean(wall),
        "failures": failures[:5],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cells", default="", help="only cells whose name contains this")
    parser.add_argument("--shard", default=None, help="only shard K/N of the cells")
    parser.add_argument("--duration", type=float, default=10.0, help="cap for hard cells (s)")
    parser.add_argument("--quiet-duration", type=float, default=6.0, help="other cells (s)")
    parser.add_argument("--drivers", action="store_true",
                        help="the drivers' cells (make setup builds them) instead of Python's")
    args = parser.parse_args()
    results = []
    for cell in take_shard(DRIVER_CELLS if args.drivers else CELLS, parse_shard(args.shard)):
        if args.cells and args.cells not in cell.name:
            continue
        result = run_cell(cell, args.seeds, args.duration, args.quiet_duration)
        results.append(result)
        print(
            f"{cell.name:60} {result['matched']}/{args.seeds} "
            f"median {result['first_hard_s_median']} false-hard {result['false_hard_verdicts']}",
            file=sys.stderr,
            flush=True,
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
