"""How late a renewing lock's watchdog renews on this machine, read from kept histories.

For every hold of every history under DIR (an audit's or run's directory), the gaps between
consecutive renewal sends (a ``renew``'s ``value.invoked``) and from the acquire to the first,
leaving out any gap during which a fault touched the client or the servers, or the client
reached a pause point: what is left is the machine not running the watchdog's thread on time.
The checker tolerates one TTL past a lease's deadline, never less than 250 ms
(``chaos.checker.renewals``); this says how much of that a loaded machine uses.

    python bench/renewal_gaps.py DIR [DIR…] [--ttl-ms 200] [--late-ms 10]
"""

from __future__ import annotations

import argparse
import json
from itertools import pairwise
from pathlib import Path

from chaos.campaign import HISTORY
from chaos.checker import read_timeline
from chaos.checker.reader import HistoryReader
from chaos.checker.renewals import excused


def gaps(history: Path, ttl_ms: int) -> list[float]:
    """The untouched renewal gaps (ms) of one history whose TTL is ``ttl_ms``."""
    timeline = read_timeline(HistoryReader(history))
    if timeline.ttl_ns != ttl_ms * 1_000_000:
        return []
    found = []
    for hold in timeline.holds:
        sends = sorted(sent for sent in timeline.renewals_sent.get(hold.process, [])
                       if hold.start <= sent <= hold.end)
        points = [hold.start, *sends]
        for a, b in pairwise(points):
            if not excused(hold.process, a, b, timeline):  # what the checker forgives
                found.append((b - a) / 1e6)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--ttl-ms", type=int, default=200, help="only histories at this TTL")
    parser.add_argument("--late-ms", type=float, default=10.0,
                        help="a gap this much over TTL/3 counts as late")
    args = parser.parse_args()
    for directory in args.dirs:
        histories = sorted(directory.rglob(HISTORY))
        found = [gap for history in histories for gap in gaps(history, args.ttl_ms)]
        late = args.ttl_ms / 3 + args.late_ms
        print(json.dumps({
            "dir": str(directory), "histories": len(histories), "gaps": len(found),
            "longest_ms": round(max(found, default=0.0), 1),
            "late": sum(gap > late for gap in found), "late_over_ms": round(late, 1),
        }))


if __name__ == "__main__":
    main()
