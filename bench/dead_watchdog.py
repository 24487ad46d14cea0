"""Whether the checker's renewal rules (``not-renewed``, ``dead-watchdog``) flag a sound
watchdog on a loaded machine, and still find the dead ones: issue 35's measurement.

Runs a comparison of renewing locks (at a 1 s TTL: python-redis-lock's whole seconds) against
the network faults that cut a renewal in flight (reset, reply-lost, partition, latency past
the client's timeout), each run its whole duration, with ``--busy`` CPU
loops spinning beside it the whole time (2 cores: three loops leave the watchdogs' threads
waiting for a core), and counts, per lock × fault, the runs whose verdict blames a renewal.
A sound watchdog (the bundled ``watchdog`` and ``reentrant-watchdog``, Redisson's, which
retries after an error since #3195) must have none; ``python-redis-lock`` (its renewal thread
ends at its first error, ionelmc/python-redis-lock#85) must be found.

    python bench/dead_watchdog.py [--seeds 5] [--busy 3] [--duration 8] [--locks a,b]
        [--faults f,g] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chaos.experiments.compare import CellPlan, run_matrix

SOUND = ["watchdog", "reentrant-watchdog", "redisson"]
BROKEN = ["python-redis-lock"]
FAULTS = "reset,reply-lost,partition,latency:latency_ms=800"
TTL_MS = 1000
RENEWAL_CAUSES = {"not-renewed", "dead-watchdog"}
BUSY_LOOP = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def busy(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """``count`` processes spinning on a core for ``seconds`` at most (bounded: they end even
    if this script is killed)."""
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP.format(s=seconds)])
            for _ in range(count)]


def flagged(compare_dir: Path) -> dict[tuple[str, str], tuple[int, int, list[str]]]:
    """Per (lock, fault column): runs, runs with a renewal violation, their first sentences."""
    matrix = json.loads((compare_dir / "matrix.json").read_text())
    found: dict[tuple[str, str], tuple[int, int, list[str]]] = {}
    for cell in matrix["cells"]:
        runs, hits, why = 0, 0, []
        for entry in cell["runs"]:
            runs += 1
            verdict = json.loads((compare_dir / entry["run_dir"] / "verdict.json").read_text())
            blamed = [v for v in verdict["violations"] if v.get("cause") in RENEWAL_CAUSES]
            if blamed:
                hits += 1
                why.append(blamed[0]["explanation"].split(". ")[0])
        found[(cell["lock"], cell["label"])] = (runs, hits, why)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--busy", type=int, default=3, help="CPU loops beside the runs")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--locks", default=",".join(SOUND + BROKEN))
    parser.add_argument("--faults", default=FAULTS)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="dead-watchdog-"))
    plans = [CellPlan(lock, fault, args.duration, None, options=(("ttl_ms", TTL_MS),))
             for lock in args.locks.split(",") for fault in args.faults.split(",")]
    loops = busy(args.busy, 3600)
    started = time.monotonic()
    try:
        compare_dir, _ = run_matrix(plans, seeds=args.seeds, out=out,
                                    title="renewal rules under load")
    finally:
        for loop in loops:
            loop.kill()
    wall = time.monotonic() - started
    print(f"`{' '.join(['python bench/dead_watchdog.py', *sys.argv[1:]])}`: {args.busy} busy "
          f"loops, {wall:.0f} s\n")
    print("| lock | fault | runs | flagged (not-renewed / dead-watchdog) | expected |")
    print("|---|---|---|---|---|")
    wrong = 0
    for (row, column), (runs, hits, why) in flagged(compare_dir).items():
        lock = row.split(" (")[0]  # the row names its options: "watchdog (ttl_ms=1000)"
        expected = "found" if lock in BROKEN else "0"
        wrong += (hits > 0) if lock not in BROKEN else 0
        note = f" — {why[0]}" if why else ""
        print(f"| {row} | {column} | {runs} | {hits}{note} | {expected} |")
    print(f"\nsound locks flagged: {wrong} cell(s); runs in {compare_dir}")


if __name__ == "__main__":
    main()
