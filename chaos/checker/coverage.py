"""Fault coverage: for each fault of the run, how often it fired, how often it hit a holder,
how long it was on — so a fault that was asked for but never met the lock is visible, not
silently counted as survived.

A firing *hit a holder* when, while it was on, its target client held the lock or reached a
pause point. A firing that is over as soon as it starts (within ``ARMED_NS``: it *arms* the
client's next operation — a slow critical section, a crash between two round trips) hits
when its target held the lock then or acquires it later in the run. A fault aimed at no
client (a server fault) hits when any client held the lock while it was on (within one TTL of
an instant one). Everything comes from the history: start/stop events, holds, pause points.
No fault is known by name.
"""

from __future__ import annotations

from bisect import bisect_right

import msgspec

from chaos.checker.holds import NEVER, Hold
from chaos.checker.timeline import FaultSpan, Timeline

ARMED_NS = 1_000_000  # a firing over within a millisecond armed its target's next operation


class FaultCoverage(msgspec.Struct, kw_only=True):
    """One fault name's firings in a run."""

    fired: int  # start events
    hit_holder: int  # firings that met a holder (see the module docstring)
    active_s: float  # seconds on, summed over firings (open ones count to the history's end)


def coverage(timeline: Timeline) -> dict[str, FaultCoverage]:
    """Per fault name, in the order the faults first fired (call after ``seal``)."""
    ttl = timeline.ttl_ns or 0
    by_process: dict[str, list[Hold]] = {}
    for hold in timeline.holds:  # sorted by start
        by_process.setdefault(hold.process, []).append(hold)
    result: dict[str, FaultCoverage] = {}
    for fault in timeline.faults:
        entry = result.setdefault(fault.name, FaultCoverage(fired=0, hit_holder=0, active_s=0.0))
        stop = timeline.end if fault.stop >= NEVER else fault.stop
        entry.fired += 1
        entry.active_s = round(entry.active_s + max(stop - fault.start, 0) / 1e9, 6)
        armed = stop - fault.start < ARMED_NS and fault.aims_at_clients
        until = timeline.end if armed else max(stop, fault.start + ttl)
        entry.hit_holder += _hit(fault, until, timeline, by_process)
    return result


def _hit(fault: FaultSpan, until: int, timeline: Timeline,
         by_process: dict[str, list[Hold]]) -> bool:
    if not fault.aims_at_clients:
        return any(_held_during(holds, fault.start, until) for holds in by_process.values())
    return any(
        _held_during(by_process.get(client, []), fault.start, until)
        or bool(timeline.pauses_of(client, fault.start, until))
        for client in {*by_process, *timeline.pause_points}
        if fault.hits(client)
    )


def _held_during(holds: list[Hold], lo: int, hi: int) -> bool:
    """Whether one of ``holds`` (sorted by start) was held at some instant of [lo, hi]."""
    last = bisect_right(holds, hi, key=lambda hold: hold.start)
    return any(hold.end >= lo for hold in holds[:last])

