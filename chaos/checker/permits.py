"""Capacity: the instants at which shared holds took more permits than the lock has.

A semaphore of capacity N promises that at no instant do its holders hold more than N
permits. Shared holds may coexist (``chaos.checker.overlaps`` leaves them alone); here their
permits are summed over time. An *excess* is a maximal stretch in which the holds (each from
its acquire ``ok`` to its release invoke, as for a mutex: ``chaos.checker.holds``) took more
than N permits at once.

It is *hard* when at some instant of it the holds within their claimed leases alone took
more than N: the lock broke its own promise. Otherwise *soft*: every time the count went
over, some of those permits belonged to a lease that had already run out (a holder stalled
past its lease, which a lease cannot prevent).

Exclusive holds are not counted here: one that overlaps any other hold is already a
violation of its own (``chaos.checker.overlaps``).

A sweep over the holds' starts and ends, sorted: time proportional to the holds (times their
log), plus, for each excess found, the elementary stretches of its participants' leases.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checker.holds import Hold, Span
from chaos.history import SHARED


@dataclass(frozen=True, slots=True)
class Excess:
    holds: list[Hold]  # every hold that took part, by start
    start: int
    end: int  # NEVER when the holds were still held at the end of the history
    most: int  # the most permits held at once
    capacity: int
    valid: Span | None  # the first stretch in which valid leases alone held more than capacity
    valid_holds: list[Hold]  # the holds within their leases over ``valid`` (hard only)

    @property
    def hard(self) -> bool:
        return self.valid is not None


def find_excesses(holds: list[Hold], capacity: int) -> list[Excess]:
    """Every stretch in which the shared ``holds`` took more than ``capacity`` permits."""
    edges: list[tuple[int, int, int]] = []  # (time, 0 for an end / 1 for a start, index)
    shared = [hold for hold in holds if hold.mode == SHARED]
    for index, hold in enumerate(shared):
        if hold.start < hold.end:
            edges.append((hold.start, 1, index))
            edges.append((hold.end, 0, index))
    edges.sort()  # at one instant, ends before starts: holds are half-open
    excesses: list[Excess] = []
    held = 0
    open_now: set[int] = set()
    taking: list[int] | None = None  # the excess under way: who took part
    since = most = 0
    for t, starts, index in edges:
        hold = shared[index]
        if starts:
            held += hold.permits
            open_now.add(index)
        else:
            held -= hold.permits
            open_now.discard(index)
        if taking is None and held > capacity:
            taking, since, most = sorted(open_now), t, held
        elif taking is not None:
            if held > capacity:
                most = max(most, held)
                if starts:
                    taking.append(index)
            else:
                excesses.append(_excess([shared[i] for i in taking], since, t, most, capacity))
                taking = None
    if taking is not None:  # still over at the end of the history
        end = max(shared[i].end for i in taking)
        excesses.append(_excess([shared[i] for i in taking], since, end, most, capacity))
    return excesses


def _excess(holds: list[Hold], start: int, end: int, most: int, capacity: int) -> Excess:
    """The excess over [start, end) of ``holds``, with its first stretch of valid leases
    alone over capacity, if any."""
    holds.sort(key=lambda hold: hold.start)
    valid = _valid_over(holds, (start, end), capacity)
    valid_holds = [] if valid is None else [
        hold for hold in holds if _valid_at(hold, valid[0])
    ]
    return Excess(holds, start, end, most, capacity, valid, valid_holds)


def _valid_at(hold: Hold, t: int) -> bool:
    return hold.start <= t < hold.end and any(lo <= t < hi for lo, hi in hold.valid_spans())


def _valid_over(holds: list[Hold], within: Span, capacity: int) -> Span | None:
    """The first stretch of ``within`` in which the holds within their leases took more than
    ``capacity`` permits."""
    lo, hi = within
    edges: list[tuple[int, int]] = []  # (time, +permits at a span's start / -permits at its end)
    for hold in holds:
        for start, end in hold.valid_spans():
            start, end = max(start, lo), min(end, hi)
            if start < end:
                edges.append((start, hold.permits))
                edges.append((end, -hold.permits))
    edges.sort()  # at one instant, ends (negative) before starts
    valid = 0
    over_since: int | None = None
    for t, change in edges:
        valid += change
        if over_since is None and valid > capacity:
            over_since = t
        elif over_since is not None and valid <= capacity:
            if over_since < t:
                return over_since, t
            over_since = None
    return None
