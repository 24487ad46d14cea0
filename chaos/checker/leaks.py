"""Leaked permits: a semaphore that stays short of its capacity long after a holder is gone.

A semaphore's promise to the other clients is a mutex's, per permit: a holder that died or
stalled delays them by at most its TTL, after which its permits come back. So we follow the
permits the live holds took (a crashed holder's hold has already ended: it is not live) and,
in every stretch in which they left room, the acquires that failed although what they asked
fitted in that room. From the first such failure to the last, permits were observably
missing; if that lasts longer than ``liveness_factor`` × TTL, something keeps permits that no
live client holds: typically a crashed holder's entries that never expire.

A stretch of room ends when the live holds take every permit: that shows none is missing.
Failures while nobody held anything for longer than the threshold are an outage's
(``chaos.checker.liveness``), not a leak's, and such an outage splits a stretch of room. Only
definite failures count, as there. An exclusive hold leaves no room at all.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass

from chaos.checker.holds import NEVER, Hold
from chaos.checker.liveness import long_gaps
from chaos.checker.timeline import Timeline
from chaos.history import CRASH, EXCLUSIVE


@dataclass(frozen=True, slots=True)
class Leak:
    start: int  # the first failed acquire that fitted was invoked (not before its stretch)
    end: int  # the last one failed
    failures: int
    most: int  # the most permits the live holds took during it
    capacity: int
    lost: list[Hold]  # holds whose holder crashed before ``end``, with their permits unreturned


def find_leaks(timeline: Timeline, capacity: int, threshold_ns: float) -> list[Leak]:
    """Stretches short of capacity in which acquires that fitted the room the live holds left
    kept failing for more than ``threshold_ns``."""
    times, held = _permits_held(timeline.holds, capacity)
    if not times:
        return []
    asks = timeline.failed_permits
    if len(asks) != len(timeline.failed_at):  # not recorded (no start event first): 1 each
        asks = array("q", [1]) * len(timeline.failed_at)
    stretch_of = _stretches(held, capacity)
    outages = [span for span, _ in long_gaps(timeline, threshold_ns)]  # the outage rule's
    outage_starts = [span[0] for span in outages]
    # Per stretch of room (its first step, and the outages before it, which split it):
    # failures, first invoke, last failure.
    found: dict[tuple[int, int], list[int]] = {}
    for n, (failed, invoked) in enumerate(zip(timeline.failed_at, timeline.failed_invoked,
                                             strict=True)):
        i = bisect_right(times, failed) - 1
        if i < 0 or held[i] + asks[n] > capacity:
            continue
        gap = bisect_right(outage_starts, failed)
        if gap and failed < outages[gap - 1][1]:
            continue  # nobody held anything for long: an outage's failure
        stretch = (stretch_of[i], gap)
        entry = found.setdefault(stretch, [0, NEVER, 0])
        entry[0] += 1
        entry[1] = min(entry[1], max(invoked, times[stretch[0]],
                                     outages[gap - 1][1] if gap else 0))
        entry[2] = max(entry[2], failed)
    leaks = []
    for _, (failures, first, last) in sorted(found.items()):
        most = max(held[bisect_right(times, first) - 1:bisect_right(times, last)])
        if last - first > threshold_ns and most > 0:  # (nobody at all: an outage)
            lost = [hold for hold in timeline.holds
                    if hold.ended_by == CRASH and hold.end <= last]
            leaks.append(Leak(first, last, failures, most, capacity, lost))
    return leaks


def _permits_held(holds: list[Hold], capacity: int) -> tuple[list[int], list[int]]:
    """The permits the holds took, as a step function: from ``times[i]`` on, ``held[i]`` (an
    exclusive hold takes them all)."""
    edges: list[tuple[int, int]] = []
    for hold in holds:
        if hold.start < hold.end:
            taken = capacity if hold.mode == EXCLUSIVE else hold.permits
            edges.append((hold.start, taken))
            edges.append((hold.end, -taken))
    edges.sort()
    times: list[int] = []
    held: list[int] = []
    now = 0
    for t, change in edges:
        now += change
        if times and times[-1] == t:
            held[-1] = now
        else:
            times.append(t)
            held.append(now)
    return times, held


def _stretches(held: list[int], capacity: int) -> list[int]:
    """For each step, the first step of the stretch of room (held < capacity: only a full
    semaphore shows that every permit can be granted) it is in (itself, for a full step)."""
    first: list[int] = []
    for i, now in enumerate(held):
        inside = now < capacity and i > 0 and held[i - 1] < capacity
        first.append(first[-1] if inside else i)
    return first
