"""``lockchaos demo``: every bundled lock against the faults that matter for it, on the local
provider (so not a lock that needs another server, ``delifeq``: its claims are
``SERVER_CELLS``, run on the docker provider by tests/docker/test_delifeq.py; nor the corpus of
third-party libraries, ``LockInfo.extra``: an optional install, judged by its own scoreboard).

A ``compare`` over the cells of the truth table (``chaos.experiments.truth_table``: what the
seed posts, Kleppmann and the Redis docs claim about each lock) plus one telling cell for each
bundled lock the table has no claim about. Cells that predict a violation stop at the first one;
the others run 3.5 s (as in the test suite: tests/cells.py). Under two
minutes on 2 cores; it ends by printing the path of its index.html, which lists
the claims one per row (what each claims, the lock × faults that test it, the verdict claimed
and measured), not the sparse matrix.
"""

from __future__ import annotations

from pathlib import Path

import typer

from chaos.commands.compare import SHARD, jobs_option, run_and_show
from chaos.drivers.catalog import INFOS
from chaos.experiments.compare import CellPlan
from chaos.experiments.truth_table import CELLS, DRIVER_CELLS

# Bundled locks the truth table makes no claim about, and the fault that shows their flaw
# (a driver's, with --drivers only).
UNCLAIMED = {
    "lua-setnx-expire": "client-pause:duration_ms=1500",  # outlasts even the 1 s rounded TTL
    "lua-extend": "client-pause",  # a pause between two extends lets the lease run out
    "reentrant": "slow-work",
    # held before its 4th SET past the TTL, its usize validity wraps: a lease of ~1.8e19 ms
    "rust-redlock": "client-pause-at:op=acquire:command=SET:nth=4",
}


def demo_plans(duration_s: float, quiet_s: float, *, drivers: bool = False) -> list[CellPlan]:
    """The truth table's cells (with ``drivers``, the drivers' too), then one for each
    unclaimed bundled lock (in that order)."""
    cells = [*CELLS, *(DRIVER_CELLS if drivers else ())]
    plans = [
        # Stopping as the tests do (tests/cells.py): a cell without ``stop_on`` runs its whole
        # time, as its claim may be about more than the first hard violation (fenced × evict:
        # the stale holder's write, refused, comes after it).
        CellPlan(cell.lock, cell.faults, duration_s if cell.stop_on else quiet_s,
                 cell.stop_on, options=cell.options)
        for cell in cells
    ]
    claimed = {cell.lock for cell in cells}
    plans += [CellPlan(lock, column, quiet_s)
              for lock, column in UNCLAIMED.items()
              if lock not in claimed and (drivers or lock not in INFOS)]
    return plans


def demo(
    duration: float = typer.Option(
        10.0, "--duration", help="seconds at most for cells that stop at their first violation"
    ),
    quiet_duration: float = typer.Option(
        3.5, "--quiet-duration", help="seconds for cells expected to show no hard violation"
    ),
    out: Path = typer.Option(Path("reports"), "--out", help="the demo's directory goes here"),
    drivers: bool = typer.Option(
        False, "--drivers",
        help="also the locks in Java, Go and Node (their JVMs add a minute or so)",
    ),
    shard: str | None = SHARD,
    jobs: int = jobs_option(2),
) -> None:
    """Run every bundled lock against the faults that break it; index.html lists the truth
    table's claims one per row, each with the verdict measured."""
    run_and_show(demo_plans(duration, quiet_duration, drivers=drivers), seeds=1,
                 out=out / "demo",
                 title="lockchaos demo: the bundled locks against the faults that matter",
                 shard=shard, page="claims", jobs=1 if shard else jobs)
