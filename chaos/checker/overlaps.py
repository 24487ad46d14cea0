"""Mutual exclusion: every pair of holds by different processes that share an instant, at
least one of them exclusive (a mutex's holds all are; shared holds may coexist, and only
their permits count: ``chaos.checker.permits``).

Holds are half-open ``[start, end)``, so a release invoked at the very instant another
client's acquire returned is not an overlap. Each overlapping pair is reported once, by the
hold that started later meeting the holds still open at its start (a sweep over holds sorted
by start, which costs time proportional to the holds plus the overlaps found).

A pair is *hard* when some instant of the overlap lies within both leases as the lock itself
claimed them: the lock broke its own promise. Otherwise it is *soft*: at every shared instant
at least one lease had already run out, which a lease-based lock without fencing cannot
prevent (a paused client wakes up still believing it holds).
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checker.holds import Hold, Span, first_common
from chaos.history import EXCLUSIVE


@dataclass(frozen=True, slots=True)
class Overlap:
    first: Hold  # the hold that was already there
    second: Hold  # the hold that started while ``first`` was held
    start: int
    end: int  # NEVER when both were still held at the end of the history
    both_valid: Span | None  # the first stretch where both leases were valid, if any

    @property
    def hard(self) -> bool:
        return self.both_valid is not None


def find_overlaps(holds: list[Hold]) -> list[Overlap]:
    """All overlapping pairs of ``holds`` (sorted by start) that exclude each other (one is
    exclusive), in order of overlap start."""
    overlaps: list[Overlap] = []
    open_holds: list[Hold] = []
    open_until = 0  # the latest end among open_holds
    for hold in holds:
        if open_until <= hold.start:  # everyone before has let go: the usual case
            open_holds = [hold]
            open_until = hold.end
            continue
        open_holds = [other for other in open_holds if other.end > hold.start]
        for other in open_holds:
            span = (hold.start, min(hold.end, other.end))
            if (other.process != hold.process and span[0] < span[1]
                    and (hold.mode == EXCLUSIVE or other.mode == EXCLUSIVE)):
                both = first_common(other.valid_spans(), hold.valid_spans(), span)
                overlaps.append(Overlap(other, hold, span[0], span[1], both))
        open_holds.append(hold)
        open_until = max(open_until, hold.end)
    return overlaps
