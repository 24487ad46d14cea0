"""What the audit's warm-up learns of each lock: one warm-up per lock, as ``lockchaos audit``
runs it first, and what ``learn`` reads from its history — the commands each operation
sends, those sent only when the operation failed, those sharing one write, and so how many
points the audit aims at. A change to how commands are announced or read shows here on every
bundled lock at once, before any audit runs (a first version of the failing-way reading took
three locks' release ``EVAL`` for a clean-up).

    python bench/surfaces.py [LOCK …] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from chaos import lockspec
from chaos.campaign import Campaign
from chaos.experiments.audit import AuditPlan, warm_up


def surface(lock: str, seed: int) -> dict[str, object]:
    """The warm-up of ``lock`` and what it taught (or why it could not start here: ``delifeq``
    needs Valkey 9)."""
    with tempfile.TemporaryDirectory() as out:
        warm, learned = warm_up(AuditPlan(Campaign(lock, seed=seed)), Path(out))
        verdict = warm.outcome.verdict
        if verdict.inconclusive and not verdict.counts.get("holds"):
            return {"lock": lock, "error": verdict.inconclusive_reasons[0]}
    sent = sum(len(commands) for op, commands in learned.surface.items() if op != "background")
    return {"lock": lock, "surface": learned.surface, "on_failure": learned.on_failure,
            "together": learned.together, "points": len(learned.points()), "commands": sent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("locks", nargs="*", help="bundled lock names (default: every one)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for lock in args.locks or [info.name for info in lockspec.catalog()]:
        rows.append(row := surface(lock, args.seed))
        said = row.get("error") or (f"{row['points']} points of {row['commands']} commands; "
                                    f"only when it failed {row['on_failure'] or '-'}")
        print(f"{lock:38} {said}", flush=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
