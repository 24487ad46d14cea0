"""``lockchaos audit`` over every bundled lock the truth table says breaks (a "hard" cell):
how often the audit finds it, and how fast.

Each hard cell's lock is audited with the default faults plus, as ``--faults +name``, the
cell's own faults that are not among them (``failover``, ``crash-restart``… are assumed away
by default: an algorithm claims to survive them or not). Targets: detected 10/10 for each,
median time to the first hard violation ≤ 20 s, within a 60 s budget, on 2 cores.

    python bench/audit.py [--seeds 10] [--budget 60] [--cells redlock]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from chaos.campaign import Campaign
from chaos.experiments.audit import MUST_SURVIVE, AuditPlan, run_audit
from chaos.experiments.truth_table import CELLS, Cell
from chaos.nemesis import parse_faults


def extra_faults(cell: Cell) -> str:
    """The cell's faults the audit does not inject by default, as ``+name:key=value``."""
    extra = []
    for name, overrides in parse_faults(cell.faults):
        if name not in MUST_SURVIVE:
            params = "".join(f":{key}={value}" for key, value in overrides.items())
            extra.append(f"+{name}{params}")
    return ",".join(extra)


def audit_cell(cell: Cell, seeds: int, budget_s: float) -> dict[str, object]:
    faults = extra_faults(cell)
    found, firsts, walls = 0, [], []
    for seed in range(1, seeds + 1):
        with tempfile.TemporaryDirectory() as out:
            plan = AuditPlan(Campaign(cell.lock, seed=seed), budget_s, faults)
            result = run_audit(plan, Path(out))
        walls.append(result.wall_s)
        if result.first_hard_s is not None:
            found += 1
            firsts.append(result.first_hard_s)
    return {
        "lock": cell.lock,
        "cell": cell.name,
        "faults": faults or "(defaults)",
        "seeds": seeds,
        "detected": found,
        "first_hard_s_median": round(statistics.median(firsts), 2) if firsts else None,
        "first_hard_s_max": round(max(firsts), 2) if firsts else None,
        "wall_s_median": round(statistics.median(walls), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--cells", default="", help="only cells whose name contains this")
    args = parser.parse_args()
    rows = []
    for cell in CELLS:
        if cell.expected != "hard" or (args.cells and args.cells not in cell.name):
            continue
        row = audit_cell(cell, args.seeds, args.budget)
        rows.append(row)
        print(f"{cell.name:55} detected {row['detected']}/{args.seeds}  median "
              f"{row['first_hard_s_median']} s  max {row['first_hard_s_max']} s",
              file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
