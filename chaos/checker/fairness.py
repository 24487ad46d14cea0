"""Fairness: a lock that claims to grant waiters in the order they asked (the start event's
``fair``) granted one that began waiting after another was already waiting.

A client *waits* from its first failed acquire after its last grant (or its start) until its
next grant; a crash ends its wait. Waiter A is *overtaken* by waiter B when it is certain that
A was already waiting when B began and that B was granted while A still waited:

* A's first attempt had already failed when B's first attempt was invoked (A had asked by
  then, whatever the lock's queue saw first), and
* B's grant returned before A even invoked the attempt that was granted (or, never granted,
  before A's last failed attempt).

So a race between two requests sent at the same moment is never called unfair. Only locks
that declare ``fair`` are judged; clients are expected to retry continuously while they wait
(the workload does). A sweep over the waits sorted by when they began: time proportional to
the waits times their log.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from chaos.checker.timeline import Timeline


@dataclass(frozen=True, slots=True)
class Wait:
    process: str
    first_invoked: int  # its first failed attempt's invoke
    asked: int  # when that attempt failed: it had certainly asked by then
    until: int  # when it certainly still waited: the granted attempt's invoke, or its last failure
    granted: int | None  # the grant's ok (None: never granted)


@dataclass(frozen=True, slots=True)
class Overtaken:
    waiter: Wait  # the earlier waiter (the first found)
    by: Wait  # granted ahead of it
    count: int  # grants that overtook an earlier waiter, in all


def find_overtaken(timeline: Timeline) -> Overtaken | None:
    """The first grant (by time) that overtook an earlier waiter, and how many did."""
    waits = sorted(_waits(timeline), key=lambda wait: wait.asked)
    asked = [wait.asked for wait in waits]
    reach: list[int] = []  # reach[i]: the latest ``until`` among waits[:i + 1]
    for wait in waits:
        reach.append(max(wait.until, reach[-1]) if reach else wait.until)
    overtakes: list[tuple[Wait, int]] = []
    for wait in waits:
        if wait.granted is None:
            continue
        i = bisect_left(asked, wait.first_invoked) - 1  # the waits that asked before it began
        if i >= 0 and reach[i] > wait.granted:
            overtakes.append((wait, i))
    if not overtakes:
        return None
    by, i = min(overtakes, key=lambda found: found[0].granted or 0)
    waiter = next(w for w in waits[: i + 1] if w.until > (by.granted or 0)
                  and w.process != by.process)
    return Overtaken(waiter, by, len(overtakes))


def _waits(timeline: Timeline) -> list[Wait]:
    """Every client's waits, from its failed acquires, its grants and its crashes."""
    steps: dict[str, list[tuple[int, int, int]]] = {}  # process → (time, kind, invoked)
    for failed, invoked, process in zip(timeline.failed_at, timeline.failed_invoked,
                                        timeline.failed_by, strict=True):
        steps.setdefault(process, []).append((failed, _FAILED, invoked))
    for hold in timeline.holds:
        if hold.process in steps:
            steps[hold.process].append((hold.start, _GRANTED, hold.invoked))
    for process, t in timeline.crashes:
        if process in steps:
            steps[process].append((t, _CRASHED, t))
    waits = []
    for process, events in steps.items():
        events.sort()
        begun: tuple[int, int] | None = None  # (first invoke, first failure)
        last_failed = 0
        for t, kind, invoked in events:
            if kind == _FAILED:
                begun = begun or (invoked, t)
                last_failed = t
            elif begun is not None:
                granted = t if kind == _GRANTED else None
                until = invoked if granted is not None else last_failed
                waits.append(Wait(process, begun[0], begun[1], until, granted))
                begun = None
        if begun is not None:
            waits.append(Wait(process, begun[0], begun[1], last_failed, None))
    return waits


_FAILED, _GRANTED, _CRASHED = 0, 1, 2
