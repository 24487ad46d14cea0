"""A hold: one client's stretch of believing it owns the lock, and the lease it was promised.

A hold runs from the acquire ``ok`` to the same process's next release ``invoke`` (or its
crash, or the end of the history). Those are the only instants at which the client itself
certainly believed it held the lock, so an overlap of two holds is never a timing artefact.

A reentrant mutex lets its holder acquire again while it holds (an acquire the client marks
nested, ``value: {"depth": d}``). That grant opens a ``Level`` inside the hold, and the
releases unwind the levels innermost first: an inner release ends only its level, the client
still holds the lock until its outermost release. So when an inner release frees the lock
(a release that deletes the key whatever the count, python-zk/kazoo#291), the client that
takes it next overlaps the outer hold. (A lock with shared holds may grant its holder a
second permit of its own instead: there a nested grant ends the hold, ``REACQUIRE``.)

A hold also ends when the lock says its lease is beyond the client's reach: an extend that
``revoked`` it (the library gave it up: no validity from that extend's invocation on) or left
it ``invalidated`` (nothing more can be sent for it: its key stays until its deadline).

Separately, the lock *claimed* the hold was valid until a deadline, which an ``extend`` or a
watchdog ``renew`` can move. Whether two overlapping holds were both inside their claimed
validity at a common instant is what separates a hard violation (the lock broke its own
promise) from a soft one (a lease without fencing ran out: inherent to leases).

All times are monotonic nanoseconds; ``NEVER`` stands for "after every event", so intervals
stay plain integers and ``min``/``max`` work without special cases.
"""

from __future__ import annotations

from bisect import bisect_right

import msgspec

from chaos.history import EXCLUSIVE, FAIL

NEVER = 1 << 63  # later than any monotonic timestamp
UNTIL_DEADLINE = -1  # ``Hold.kept_until``: its key stayed until the deadline then in effect
# A hold's end: its client was granted the lock again while holding it, by an acquire it did
# not mark nested, or of a lock with shared holds (a mutex's nested grant opens a ``Level``).
REACQUIRE = "reacquire"

Span = tuple[int, int]  # half-open [start, end)


class Level(msgspec.Struct, gc=False):
    """A nested grant inside a hold: from its acquire ``ok`` to its (inner) release invoke.

    It ``reentered`` when it came back while the hold's lease was still valid: the lock let
    its holder in again, and its lease is the hold's (a reentrant lock's one key, re-armed).
    One that came back later may have found the holder's key expired and made a new one (a
    lock that is not reentrant grants its waiting holder only then): its lease is its own
    level's, and its release puts the hold back on the deadline it had before
    (``outer_deadline``, already past). Read as a re-entry, its lease outlived that release,
    and the next client's grant was judged hard (``lua-retry-busy``'s audit warm-up)."""

    token: str | None
    start: int
    end: int = NEVER
    released: str | None = None  # its release's outcome: "ok", "fail", "info"
    release_acked: int | None = None  # when its release returned true
    reentered: bool = True
    outer_deadline: int = NEVER  # the hold's deadline before it (a grant that did not reenter)


class Hold(msgspec.Struct, gc=False):
    """One hold; ``leases`` is ``[(from_t, deadline), …]``: the deadline in effect from each
    instant on (the acquire's first, then every extend/renew, and every nested grant: the
    lock vouched for its holder again; the inner release of a grant that did not re-enter
    puts back the deadline before it), ``NEVER`` when unbounded.

    A msgspec Struct because the scan creates one per acquire: construction runs in C.
    """

    process: str
    token: str | None
    invoked: int  # the acquire invoke's time (the ok's when there was none)
    start: int
    leases: list[tuple[int, int]]
    end: int = NEVER
    ended_by: str | None = None  # "release", "crash", "reacquire"; None: still held
    released: str | None = None  # the release's outcome: "ok", "fail", "info"
    release_acked: int | None = None  # when the release returned true
    # What it holds (its acquire invoke's ``value``): a mutex's holds are all exclusive, one
    # permit; a semaphore's are shared, each taking ``permits`` of the run's capacity.
    mode: str = EXCLUSIVE
    permits: int = 1
    # The nested grants inside it, in order (None: none, the usual case); those still open
    # are the last ones, innermost last.
    levels: list[Level] | None = None
    # Its key stayed on purpose after it ended, by the lock's own account, until this instant
    # (``UNTIL_DEADLINE``: its deadline then): a release that ``kept`` it (a minimum hold), or
    # an extend that left it ``invalidated``. None: not kept (deleted, or left to a crash).
    kept_until: int | None = None

    def key_kept_until(self) -> int | None:
        """Until when the lock kept this hold's key on purpose after the hold ended: nobody
        could take the lock before then (None: it did not keep it)."""
        if self.kept_until == UNTIL_DEADLINE:
            return self.deadline_at(self.end)
        return self.kept_until

    def revoke(self, at: int) -> None:
        """Its lease claims no validity from ``at`` on (an extend invoked then whose answer
        was ``revoked``: the library may have deleted the key at any instant after it)."""
        self.leases = [lease for lease in self.leases if lease[0] < at] + [(at, at)]

    def open_level(self) -> Level | None:
        """The innermost nested level not released yet, if any: what a release ends first."""
        if self.levels is None:
            return None
        return next((level for level in reversed(self.levels) if level.end == NEVER), None)

    def has_token(self, token: str | None) -> bool:
        """Whether ``token`` is this hold's or an open nested level's: an extend or renewal
        of either moves the client's deadline (a reentrant lock's nested grants share one
        key, whose TTL any of them re-arms)."""
        if token == self.token:
            return True
        return self.levels is not None and any(
            level.token == token for level in self.levels if level.end == NEVER)

    def freed_by(self, before: int) -> Level | None:
        """The inner release that may have freed the lock this hold still had, before
        ``before``: the last one invoked by then that did not fail (a release that returned
        false deleted nothing), unless a nested grant came after it (that took the lock
        again)."""
        levels = [level for level in self.levels or () if level.start < before]
        freed = max((level for level in levels if level.end < before
                     and level.released != FAIL), key=lambda level: level.end, default=None)
        if freed is None or any(level.start > freed.end for level in levels):
            return None
        return freed

    def deadline_at(self, t: int) -> int:
        """The lease deadline in effect at ``t`` (the acquire's one before any renewal)."""
        index = bisect_right(self.leases, (t, NEVER)) - 1
        return self.leases[max(index, 0)][1]

    def valid_spans(self) -> list[Span]:
        """The instants at which the holder was within its claimed validity, in order.

        A renewal after the lease lapsed starts a new span: the lock vouched for the holder
        again from that moment on.
        """
        spans: list[Span] = []
        bounds = [lease[0] for lease in self.leases[1:]] + [self.end]
        for (since, deadline), until in zip(self.leases, bounds, strict=True):
            start, end = since, min(deadline, until)
            if start < end:
                if spans and spans[-1][1] == start:
                    start = spans.pop()[0]
                spans.append((start, end))
        return spans

    def lapsed_before(self, t: int) -> int | None:
        """When the lease ran out, if it was no longer valid at ``t``; else None."""
        deadline = self.deadline_at(t)
        return deadline if deadline <= t else None


def first_common(a: list[Span], b: list[Span], within: Span) -> Span | None:
    """The first stretch of ``within`` covered by both span lists (each sorted, disjoint)."""
    lo, hi = within
    i = j = 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0], lo)
        end = min(a[i][1], b[j][1], hi)
        if start < end:
            return start, end
        if start >= hi:
            return None
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return None
