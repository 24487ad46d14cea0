"""``lockchaos audit`` over locks that must break and locks that must survive: how often the
audit finds each broken one, and how fast; how often each sound one passes with every fault
and capability it asked for exercised (no false hard).

By default, every bundled lock the truth table says breaks (a "hard" cell), audited with the
default faults plus, as ``--faults +name``, the cell's own faults that are not among them
(``failover``, ``crash-restart``… are assumed away by default: an algorithm claims to survive
them or not), in the cell's deployment where the audit takes it (``--clients``, ``--ttl-ms``,
``--capacity``…: ``deployment``). ``--broken`` audits instead locks that are not cells
(``module:attr``, e.g. ``broken_locks:extend_ignores_owner`` from tests/redis, which is put on
``sys.path``) with the default faults; ``--survive`` audits locks that must pass. Targets: a
broken lock detected 10/10, median time to the first hard violation ≤ 20 s, within a 60 s
budget, on 2 cores; a surviving one passes 10/10 (exit status 0: no violation at or above
``fail_on``, not inconclusive) with every tested fault effective and every capability it has
exercised.

    python bench/audit.py [--seeds 10] [--budget 60] [--cells redlock]
    python bench/audit.py --broken broken_locks:extend_ignores_owner,broken_locks:watchdog_dies
    python bench/audit.py --survive lua,lua-extend,watchdog,reentrant --seeds 3
    python bench/audit.py --drivers   # the bundled drivers' hard cells instead (DRIVER_CELLS)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from chaos.campaign import Campaign
from chaos.experiments.audit import (
    AUDIT_OPTIONS,
    DEPLOYMENT,
    MUST_SURVIVE,
    AuditPlan,
    AuditResult,
    run_audit,
)
from chaos.experiments.surface import point_name
from chaos.experiments.truth_table import CELLS, DRIVER_CELLS, Cell
from chaos.nemesis import parse_faults

# The locks of tests/redis/broken_locks.py load as ``broken_locks:name``.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "redis"))


def extra_faults(cell: Cell) -> str:
    """The cell's faults the audit does not inject by default, as ``+name:key=value``. A
    cell's parameters on a default fault (``client-pause-at:command=ZADD``) are not given:
    the audit aims that fault by itself, and the row says it ran the defaults."""
    extra = []
    for name, overrides in parse_faults(cell.faults):
        if name not in MUST_SURVIVE:
            params = "".join(f":{key}={value}" for key, value in overrides.items())
            extra.append(f"+{name}{params}")
    return ",".join(extra)


def deployment(cell: Cell) -> dict[str, Any]:
    """The cell's options that ``lockchaos audit`` takes too (``--clients``, ``--ttl-ms``,
    ``--capacity``…): the deployment its claim is about, which a user would give the audit.
    The others (``nest_depth``, ``extend_during_work``) are the audit's own choice."""
    return {name: value for name, value in cell.options if name in AUDIT_OPTIONS}


class Audited(NamedTuple):
    """One audit, with what reads its runs' histories (what it did not exercise, its verdict
    and exit status: ``inconclusive_reasons`` reads them) read before they are deleted."""

    result: AuditResult
    missing: list[str]
    verdict: str
    exit_status: int


KEPT = Path("reports") / "bench-kept"  # audits that went against their expectation


def audits(lock: str, selection: str, seeds: int, budget_s: float,
           options: dict[str, Any] | None = None, *,
           unexpected: Callable[[Audited], bool] = lambda audited: False) -> list[Audited]:
    """One audit of ``lock`` (with campaign ``options``, as given on the command line) per
    seed 1…``seeds``, one after the other. An ``unexpected`` one keeps its directory (every
    run's history and report) under ``KEPT``, and says where: a survivor's one hard in 50
    audits, deleted with its temporary directory, could not be read afterwards."""
    options = options or {}
    told = frozenset(name for name in options if name in DEPLOYMENT)
    results = []
    for seed in range(1, seeds + 1):
        with tempfile.TemporaryDirectory() as out:
            plan = AuditPlan(Campaign(lock, seed=seed, **options), budget_s, selection,
                             told=told)
            result = run_audit(plan, Path(out))
            missing = [what for what, _ in result.untested]
            audited = Audited(result, missing, result.verdict, result.exit_status)
            if unexpected(audited):
                kept = KEPT / f"{result.directory.name}-seed{seed}"
                shutil.copytree(result.directory, kept)
                print(f"kept {kept} ({audited.verdict}, exit {audited.exit_status})",
                      file=sys.stderr, flush=True)
            results.append(audited)
    return results


def detection(lock: str, selection: str, seeds: int, budget_s: float,
              options: dict[str, Any] | None = None) -> dict[str, object]:
    """How often the audits of a lock that must break found a hard violation, how fast."""
    audited = audits(lock, selection, seeds, budget_s, options,
                     unexpected=lambda a: a.result.first_hard_s is None)
    results = [a.result for a in audited]
    firsts = [r.first_hard_s for r in results if r.first_hard_s is not None]
    return {
        "lock": lock,
        "options": options or {},
        "faults": selection or "(defaults)",
        "seeds": seeds,
        "detected": len(firsts),
        "verdicts": [a.verdict for a in audited],
        "first_hard_s": [None if r.first_hard_s is None else round(r.first_hard_s, 1)
                         for r in results],
        "first_hard_s_median": round(statistics.median(firsts), 2) if firsts else None,
        "first_hard_s_max": round(max(firsts), 2) if firsts else None,
        "wall_s_median": round(statistics.median(r.wall_s for r in results), 2),
    }


def survival(lock: str, seeds: int, budget_s: float) -> dict[str, object]:
    """How often the audits of a lock that must survive passed, each with everything it
    asked for exercised."""
    audited = audits(lock, "", seeds, budget_s, unexpected=lambda a: a.exit_status != 0)
    results, missing = [a.result for a in audited], [a.missing for a in audited]
    return {
        "lock": lock,
        "seeds": seeds,
        "passed": sum(a.exit_status == 0 for a in audited),
        "verdicts": [a.verdict for a in audited],
        "all_exercised": sum(not m for m in missing),
        "unexercised": sorted({name for m in missing for name in m}),
        "has": sorted({cap for r in results if r.learned for cap, has in (
            ("extend", r.learned.declared.extend), ("renewals", r.learned.declared.renews),
            ("reentrancy", r.learned.declared.reentrant)) if has}),
        "hard": sum(r.first_hard_s is not None for r in results),
        # In how many warm-ups each command was seen only when its operation failed (the
        # audit then makes that operation fail to reach it).
        "only_on_failure": dict(sorted(Counter(
            point_name(op, command) for r in results if r.learned
            for op, commands in r.learned.on_failure.items() for command in commands).items())),
        "campaigns_median": statistics.median(len(r.trials) for r in results),
        "wall_s_median": round(statistics.median(r.wall_s for r in results), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--cells", default="", help="only cells whose name contains this")
    parser.add_argument("--broken", default="", help="locks (comma-separated) that must break")
    parser.add_argument("--survive", default="", help="locks (comma-separated) that must pass")
    parser.add_argument("--drivers", action="store_true",
                        help="the bundled drivers' hard cells, not the Python locks'")
    args = parser.parse_args()
    rows = []
    broken = [lock for lock in args.broken.split(",") if lock]
    survive = [lock for lock in args.survive.split(",") if lock]
    for lock in broken:
        rows.append(row := detection(lock, "", args.seeds, args.budget))
        print(f"{lock:55} detected {row['detected']}/{args.seeds}  median "
              f"{row['first_hard_s_median']} s  max {row['first_hard_s_max']} s",
              file=sys.stderr, flush=True)
    for lock in survive:
        rows.append(row := survival(lock, args.seeds, args.budget))
        print(f"{lock:55} passed {row['passed']}/{args.seeds}  all exercised "
              f"{row['all_exercised']}/{args.seeds}  verdicts {row['verdicts']}",
              file=sys.stderr, flush=True)
    for cell in (DRIVER_CELLS if args.drivers else CELLS) if not (broken or survive) else ():
        if cell.expected != "hard" or (args.cells and args.cells not in cell.name):
            continue
        row = {"cell": cell.name,
               **detection(cell.lock, extra_faults(cell), args.seeds, args.budget,
                           deployment(cell))}
        rows.append(row)
        print(f"{cell.name:55} detected {row['detected']}/{args.seeds}  median "
              f"{row['first_hard_s_median']} s  max {row['first_hard_s_max']} s  "
              f"audited with {row['faults']}", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
