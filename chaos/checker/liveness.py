"""Liveness: the lock stayed unavailable far longer than its TTL although nobody held it.

A lease lock's promise to the *other* clients is that a dead or stuck holder delays them by
at most the TTL. So we look at every gap between holds (a crashed holder's hold has already
ended: it is not live) and at the acquire attempts that failed inside it. From the first such
attempt to the last, the lock was observably unavailable; if that lasts longer than
``liveness_factor`` × TTL, something keeps a key alive that no live client owns: typically
a client that crashed between SETNX and EXPIRE and left a key that never expires.

An outage that lasts to the end of the run, far past the TTL, is a lock **wedged for good**
(``Wedged``): nobody acquired again, and nothing suggests anybody ever would. It stays a
liveness violation, but fails every gate (``chaos.checker.verdict.WEDGED``): the seed posts
call exactly this deadlock — a client that crashed between SETNX and EXPIRE — a bug, and a gate
that passed it would pass a lock that stops working in production.

Only definite failures count: an indeterminate (``info``) acquire may have taken the lock.
Clients are expected to retry continuously while they cannot acquire (the workload does).
Nor do failures while a key the lock kept on purpose still stood (a release that ``kept`` it
until a minimum hold ran out, a lease left ``invalidated`` until its deadline): the lock said
nobody could take it before then.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from chaos.checker.holds import NEVER, Hold, Span
from chaos.checker.timeline import Timeline, UnsureAcquire

# Wedged for good: an outage to the end of the run lasting, in time no fault was on, more than
# WEDGED_TTLS × TTL and WEDGED_FLOOR_NS. A key that honours its TTL frees the lock within one
# TTL of its holder's end (plus a client's back-off): bounded unavailability ends there, and
# the outage rule already names 5 TTLs of it. Twice that, lasting to the end, is no late
# expiry. Counting only time no fault was on leaves out what a fault does while it lasts (a
# partition, a paused server: every client refused or cut off). The floor is for short TTLs,
# where a machine's own delays do not shrink with the TTL: a loaded CI machine stopped a
# client process for 524 ms and a sound client's threads for 164 ms at a 50 ms TTL
# (chaos.checker.renewals), and a crashed JVM driver takes seconds to come back.
WEDGED_TTLS = 10
WEDGED_FLOOR_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class Outage:
    start: int  # the first failed attempt in the gap was invoked (not before the gap)
    end: int  # the last one failed
    failures: int
    gap: Span  # no hold at all: from the previous hold's end to the next one's start
    previous: Hold | None  # the hold whose end opened the gap (None: nobody had held yet)


def find_outages(timeline: Timeline, threshold_ns: float) -> list[Outage]:
    """Gaps in which failed acquires spanned more than ``threshold_ns``.

    An outage lies within a gap, so only gaps longer than the threshold are candidates; in
    most histories there are none and the failures (often millions) are never looked at.
    """
    gaps = long_gaps(timeline, threshold_ns)
    if not gaps:
        return []
    starts = [span[0] for span, _ in gaps]
    kept = _kept_until(timeline, starts)
    failures = [0] * len(gaps)
    first_invoked, last_failed = [NEVER] * len(gaps), [0] * len(gaps)
    for failed, invoked in zip(timeline.failed_at, timeline.failed_invoked, strict=True):
        i = bisect_right(starts, failed) - 1
        if i >= 0 and kept[i] <= failed < gaps[i][0][1]:
            failures[i] += 1
            first_invoked[i] = min(first_invoked[i], invoked)
            last_failed[i] = max(last_failed[i], failed)
    outages = []
    for i, (gap, previous) in enumerate(gaps):
        start = max(gap[0], first_invoked[i], kept[i])
        if failures[i] and last_failed[i] - start > threshold_ns:
            outages.append(Outage(start, last_failed[i], failures[i], gap, previous))
    return outages


@dataclass(frozen=True, slots=True)
class Wedged:
    """An outage that lasted to the end of the run, far past the TTL (the module docstring):
    the lock wedged for good."""

    outage: Outage
    # The acquire that may have left a key nobody owns: the first in the gap whose process
    # crashed before it completed, or whose outcome was indeterminate (None: none).
    culprit: UnsureAcquire | None

    @property
    def since(self) -> int:
        """Nobody held the lock from then to the end of the run: the gap's start."""
        return self.outage.gap[0]


def wedged(out: Outage, timeline: Timeline, ttl_ns: int) -> Wedged | None:
    """``out`` as a lock wedged for good, if it is one: nobody acquired from its gap's start
    to the end of the run, and its failed attempts spanned more than ``WEDGED_TTLS`` × TTL
    and ``WEDGED_FLOOR_NS`` of time no fault was on."""
    if out.gap[1] < NEVER:
        return None  # somebody acquired again
    if _fault_free(timeline, out.start, out.end) <= max(WEDGED_TTLS * ttl_ns, WEDGED_FLOOR_NS):
        return None
    unsure = timeline.unsure_between(out.gap[0], out.end)
    return Wedged(out, unsure[0] if unsure else None)


def _fault_free(timeline: Timeline, lo: int, hi: int) -> int:
    """How much of [lo, hi] no fault was on for."""
    free, at = 0, lo
    for fault in timeline.faults_during(lo, hi):  # in order of their start
        if fault.start > at:
            free += min(fault.start, hi) - at
        at = max(at, fault.stop)
        if at >= hi:
            return free
    return free + max(0, hi - at)


def _kept_until(timeline: Timeline, starts: list[int]) -> list[int]:
    """For each gap (by its start), the last instant up to which a hold that ended by then
    had its key kept on purpose (``Hold.key_kept_until``; 0: none). Kept keys are rare: only
    the holds that have one are looked at."""
    kept = [(hold.end, until) for hold in timeline.holds
            if hold.kept_until is not None and (until := hold.key_kept_until()) is not None]
    return [max((until for end, until in kept if end <= start), default=0) for start in starts]


def long_gaps(timeline: Timeline, longer_than: float) -> list[tuple[Span, Hold | None]]:
    """The stretches with no hold longer than ``longer_than`` (an outage lies within one),
    each with the hold whose end began it."""
    gaps: list[tuple[Span, Hold | None]] = []
    covered_until, previous = timeline.start, None
    for hold in timeline.holds:
        if hold.start - covered_until > longer_than:
            gaps.append(((covered_until, hold.start), previous))
        if hold.end > covered_until:
            covered_until, previous = hold.end, hold
    if timeline.end - covered_until > longer_than:  # nobody held it again until the end
        gaps.append(((covered_until, NEVER), previous))
    return gaps


@dataclass(frozen=True, slots=True)
class GaveUp:
    """Acquires that waited out their lock's own acquire timeout while no client held the
    lock (the first of them, and how many): availability lost to a key nobody alive owned."""

    process: str
    invoked: int
    failed: int
    count: int
    previous: Hold | None  # the last hold that ended before the first one was invoked


def gave_up_unheld(timeline: Timeline) -> GaveUp | None:
    """Seed 002's rule, "acquire_timeout 必須大於 lock_timeout": a waiter whose timeout is shorter
    than the TTL gives up while a crashed holder's key still lives. Only give-ups during which
    nobody held the lock at all count; giving up behind a live holder is plain contention."""
    if not timeline.gave_up:
        return None
    holds = timeline.holds  # sorted by start (sealed)
    starts = [hold.start for hold in holds]
    reach: list[int] = []  # reach[i]: the latest end among holds[:i + 1]
    for hold in holds:
        reach.append(max(hold.end, reach[-1]) if reach else hold.end)
    unheld = []
    for process, invoked, failed in timeline.gave_up:
        i = bisect_right(starts, failed) - 1
        if i < 0 or reach[i] <= invoked:
            unheld.append((process, invoked, failed))
    if not unheld:
        return None
    process, invoked, failed = min(unheld, key=lambda g: g[2])
    before = [hold for hold in holds if hold.end <= invoked]
    previous = max(before, key=lambda hold: hold.end) if before else None
    return GaveUp(process, invoked, failed, len(unheld), previous)
