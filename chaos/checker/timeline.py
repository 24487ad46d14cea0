"""What a history says happened, as time-indexed facts: the input of every analysis.

The records are msgspec Structs: the scan creates one per acquire, release or failure, and
Struct construction runs in C.

``chaos.checker.scan`` builds a ``Timeline`` in one pass; the analyses (overlaps, liveness,
data) and the explanations only ever look here, never at raw events. Lists are sorted by
``seal()``, after which the lookups below answer "what happened between these instants"
with a binary search instead of a scan of the history.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec

from chaos.checker.holds import NEVER, Hold
from chaos.history import EXCLUSIVE, LOSES_KEYS, REPORTED, SPLITS_MASTER, STALLS_CLIENT

# A lease this many TTLs past its grant rests on no key the acquire set (whole-second
# rounding gives a key a second at most; a sound lock claims a TTL at most).
CLAIM_TTLS = 2


class FaultSpan(msgspec.Struct, gc=False):
    """A fault as the history tells it: when it was on (``stop`` is ``NEVER`` when the history
    has no stop event for it) and the ``effects`` its start event declared
    (``chaos.history.EFFECTS``). The name is only shown, never reasoned about."""

    id: str
    name: str
    target: Any
    params: Any
    start: int
    effects: frozenset[str] = frozenset()
    stop: int = NEVER
    evidence: str = ""  # chaos.history.EVIDENCE (empty in older histories: activity)

    def hits(self, process: str) -> bool:
        """Whether the fault was aimed at this client (targets are a name, ``*`` for every
        client, a list of names, or ``{"client": name, "nodes": [...]}``)."""
        target = self._client_target
        if isinstance(target, str):
            return target in (process, "*")
        return isinstance(target, list) and process in target

    @property
    def aims_at_clients(self) -> bool:
        """Whether the fault was aimed at one or more clients (not only at servers)."""
        return bool(self._client_target)

    @property
    def _client_target(self) -> Any:
        target = self.target
        return target.get("client") if isinstance(target, dict) else target

    @property
    def loses_keys(self) -> bool:
        return LOSES_KEYS in self.effects

    @property
    def splits(self) -> bool:
        return SPLITS_MASTER in self.effects

    @property
    def stalls(self) -> bool:
        return STALLS_CLIENT in self.effects

    @property
    def reported(self) -> bool:
        """Whether only an event naming its id shows it did something (``REPORTED``)."""
        return self.evidence == REPORTED


class PauseReached(msgspec.Struct, frozen=True, gc=False):
    """A client reached an armed pause-injection point (``command`` of its ``action``)."""

    t: int
    command: str
    action: str


IN_FLIGHT_BOUND_NS = 1_000_000_000  # a release returning this long after the gap is not its cause


class Release(msgspec.Struct, frozen=True, gc=False):
    """A release that returned true (``ok``): it removed *a* key, whoever's it was — or one
    that got no answer (``info``, not ``answered``; ``acked``: when its client gave up): its
    command may have run, at any time after its invoke (a lost reply, a delayed command)."""

    process: str
    invoked: int
    acked: int
    hold: Hold | None  # the hold its invoke ended (or, an inner release, the hold it was in)
    answered: bool = True

    @property
    def stale(self) -> bool:
        """Its process held no valid lease when it invoked it (or held none at all)."""
        return self.hold is None or self.hold.lapsed_before(self.invoked) is not None

    @property
    def outlived(self) -> bool:
        """Its process's lease ran out before it returned (or it held none): its command,
        run at some moment between its invoke and its return, may have found the releaser's
        own key expired — and another client's key in its place."""
        return self.hold is None or self.hold.lapsed_before(self.acked) is not None


class UnsureAcquire(msgspec.Struct, frozen=True, gc=False):
    """An acquire that may have taken the lock without the client knowing: it completed
    ``info`` (``error`` set) or its process crashed before it completed (``crashed`` set)."""

    process: str
    invoked: int
    error: str | None = None
    crashed: int | None = None


class FinalKey(msgspec.Struct, frozen=True, gc=False):
    """The lock's key once the run was over (``final-key``): its name, and per node that had
    it, its PTTL in ms (-1: it never expires). No node: nobody had that key."""

    key: str
    pttl: dict[str, int]

    @property
    def without_expiry(self) -> list[str]:
        """The nodes on which the key never expires."""
        return [node for node, left in self.pttl.items() if left == -1]


class Raised(msgspec.Struct, gc=False):
    """An operation that raised (an ``info`` with an ``error``), or a client that could not
    start its lock: who, when, what; ``traceback`` where the history carries one."""

    process: str
    t: int
    error: str
    traceback: str | None = None


class Dropped(msgspec.Struct, frozen=True, gc=False):
    """Bytes a fault dropped on ``process``'s link to ``node`` (Toxiproxy's count: a
    ``dropped`` event), between ``since`` and ``t``: of its ``requests``, of the replies."""

    process: str
    node: str
    since: int
    t: int
    requests: int
    replies: int


class LockBugs(msgspec.Struct, gc=False):
    """The exceptions of one lock operation that the client marked ``bug`` (not a Redis or
    connection error): how many, and the first one."""

    count: int
    first: Raised


@dataclass(slots=True)
class Timeline:
    """The facts of one history. Times are monotonic ns; ``start``/``end`` bound the run."""

    params: dict[str, Any] = field(default_factory=dict)  # the harness start event's value
    start: int = 0
    end: int = 0
    has_start_event: bool = False
    holds: list[Hold] = field(default_factory=list)
    # Failed acquires, in file order: fail and invoke times as machine integers, so that
    # millions of failures keep no Python objects alive.
    failed_at: array[int] = field(default_factory=lambda: array("q"))
    failed_invoked: array[int] = field(default_factory=lambda: array("q"))
    failed_by: list[str] = field(default_factory=list)  # the process of each (shared names)
    # The permits each asked, for a lock that is not a mutex (a mutex's: empty, 1 each).
    failed_permits: array[int] = field(default_factory=lambda: array("q"))
    # Nested acquires (marked ``depth``) refused while their own process held the lock, its
    # lease still valid:
    # (process, invoked, refused at, the hold's start). A lock refusing its own holder.
    refused_own: list[tuple[str, int, int, int]] = field(default_factory=list)
    # Acquires that gave up after their lock's own acquire timeout: (process, invoked, failed).
    gave_up: list[tuple[str, int, int]] = field(default_factory=list)
    unsure_acquires: list[UnsureAcquire] = field(default_factory=list)
    # Releases that returned true without a hold to end; the others are on their holds.
    orphan_releases: list[Release] = field(default_factory=list)
    # Releases that got no answer (``info``), in the order their clients gave up.
    unanswered_releases: list[Release] = field(default_factory=list)
    faults: list[FaultSpan] = field(default_factory=list)
    pause_points: dict[str, list[PauseReached]] = field(default_factory=dict)  # in time order
    # Per process, the (since, until) of each stretch it did not run (``stall``), in order.
    stalls: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # What faults did, by fault id: each ``effect`` event's words, and each pause point that
    # names the fault that armed it ("c2 stopped before EVAL").
    fault_effects: dict[str, list[str]] = field(default_factory=dict)
    # What the proxy counted that faults dropped, by fault id (``dropped`` events).
    dropped: dict[str, list[Dropped]] = field(default_factory=dict)
    # When each process had a lock operation (acquire, release, extend) in flight: the invoke
    # and completion times of each, in order (a crash completes one, and so does the end of
    # the history).
    ops_invoked: dict[str, array[int]] = field(default_factory=dict)
    ops_done: dict[str, array[int]] = field(default_factory=dict)
    # Clients a fault killed: (fault id, process, when); whether it hit is the coverage's call.
    kills: list[tuple[str, str, int]] = field(default_factory=list)
    crashes: list[tuple[str, int]] = field(default_factory=list)  # (process, when), every one
    # The lock's surface: per operation, the commands its clients sent, in first-seen order.
    surface: dict[str, list[str]] = field(default_factory=dict)
    can_extend: bool = False  # some client's lock started with an extend (``lock-ready``)
    # When each process's background renewals (``renew`` ok or fail) were sent, in order; and
    # those answered (all but a ``fail`` with an ``error``: a renewal that raised).
    renewals_sent: dict[str, list[int]] = field(default_factory=dict)
    renewals_answered: dict[str, list[int]] = field(default_factory=dict)
    # (process, when) of each extend that gave its hold a new lease: where a lease began.
    extended: set[tuple[str, int]] = field(default_factory=set)
    # Acknowledged writes, in file order: op id, when, by whom (parallel, no tuple per write).
    acked_ops: list[str] = field(default_factory=list)
    acked_at: array[int] = field(default_factory=lambda: array("q"))
    acked_by: list[str] = field(default_factory=list)
    final_read: tuple[int, list[str]] | None = None
    final_key: FinalKey | None = None  # the lock's key at the end (older histories: none)
    stale_rejected: int = 0
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)  # type → f → events
    events: int = 0
    has_end_event: bool = False  # the harness's end: the run is over, not cut short
    # What acquire, release and extend raised: the first of each, and every error type seen.
    raised: dict[str, Raised] = field(default_factory=dict)
    raised_types: dict[str, set[str]] = field(default_factory=dict)
    lock_bugs: dict[str, LockBugs] = field(default_factory=dict)  # by operation
    unusable: list[Raised] = field(default_factory=list)  # clients whose lock factory failed
    crash_error: Raised | None = None  # the first client crash that said why (at start)
    _releases: list[Release] | None = None  # every release that returned true, by ack time
    _release_acks: list[int] = field(default_factory=list)
    _key_losses: list[tuple[int, FaultSpan]] = field(default_factory=list)
    _fault_starts: list[int] = field(default_factory=list)
    _unsure_invoked: list[int] = field(default_factory=list)
    _key_life: int | None = None

    @property
    def ttl_ns(self) -> int | None:
        ttl_ms = self.params.get("ttl_ms")
        return int(ttl_ms * 1_000_000) if isinstance(ttl_ms, int | float) else None

    @property
    def key_life_ns(self) -> int | None:
        """How long a key the lock sets lives, as its grants show: the run's TTL, unless the
        lock's grants quicker than a TTL claim leases more than ``CLAIM_TTLS`` TTLs long (half
        of them at least: their lower median) — a lock whose keys live longer than the run's
        TTL (sherlock with no expiry: a day), whose acquires and leases that TTL cannot judge.
        (Its acquire that took longer than the run's TTL was named "outlasted its lease"
        while its key lived a day.)"""
        ttl = self.ttl_ns
        if ttl is None or self._key_life is not None:
            return self._key_life or ttl
        quick = sorted(hold.deadline_at(hold.start) - hold.start for hold in self.holds
                       if hold.start - hold.invoked < ttl)
        claimed = quick[(len(quick) - 1) // 2] if quick else ttl  # the lower median
        self._key_life = claimed if claimed > CLAIM_TTLS * ttl else ttl
        return self._key_life

    @property
    def capacity(self) -> int | None:
        """The permits held at once at most (the start event's ``capacity``; absent: 1, a
        mutex's; null: unbounded, a read-write lock's readers)."""
        capacity = self.params.get("capacity", 1)
        return capacity if isinstance(capacity, int) else None

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes the lock grants (the start event's ``modes``; absent: a mutex's)."""
        modes = self.params.get("modes")
        return tuple(map(str, modes)) if isinstance(modes, list) else (EXCLUSIVE,)

    @property
    def fair(self) -> bool:
        """Whether the lock claims to grant waiters in the order they asked."""
        return self.params.get("fair") is True

    @property
    def mutex(self) -> bool:
        """Whether the run's lock is a plain mutex (capacity 1, exclusive holds only): every
        history written before semaphores and read-write locks existed."""
        return self.capacity == 1 and self.modes == (EXCLUSIVE,)

    def seal(self) -> None:
        """Sort what the lookups search by time and index it (once, after the scan)."""
        self.holds.sort(key=attrgetter("start"))
        self.unsure_acquires.sort(key=attrgetter("invoked"))
        self._unsure_invoked = [attempt.invoked for attempt in self.unsure_acquires]
        self.faults.sort(key=attrgetter("start"))
        for sent in (*self.renewals_sent.values(), *self.renewals_answered.values()):
            sent.sort()
        self._fault_starts = [fault.start for fault in self.faults]
        self._key_losses = sorted(
            ((t, fault) for fault in self.faults if fault.loses_keys
             for t in (fault.start, fault.stop) if t != NEVER),
            key=lambda pair: pair[0],
        )

    # -- lookups (after seal) ------------------------------------------------------------

    def faults_during(self, lo: int, hi: int) -> list[FaultSpan]:
        """Faults active at some instant of [lo, hi]."""
        last = bisect_right(self._fault_starts, hi)
        return [fault for fault in self.faults[:last] if fault.stop > lo]

    def split_at(self, t: int) -> FaultSpan | None:
        """A fault that splits the master, on at instant ``t``: while it lasts, two masters may
        each grant the lock, and a release may act on either of them."""
        last = bisect_right(self._fault_starts, t)
        return next(
            (fault for fault in self.faults[:last] if fault.splits and fault.stop > t), None
        )

    def foreign_release(self, hold: Hold, before: int,
                        chained: bool = False) -> tuple[Release, bool] | None:
        """A release by another process that returned true and may have removed this hold's
        key before ``before``, and whether that is certain.

        Certain: the release lies entirely within (``hold.start``, ``before``]. Otherwise the
        first release that was in flight across that gap (invoked before ``before``, returned
        after ``hold.start``): its effect lies somewhere between its invoke and its return,
        as with get-then-del's DEL sent after a pause that began before the hold did. A
        release that returned while this hold's acquire was still in flight counts too when
        its own lease had lapsed (or it ended no hold of its own): its DEL may have reached
        Redis after this acquire's SET, and a loaded machine can deliver the releaser's
        reply first. (A release of a live lease cannot: this acquire's SET NX could only
        succeed once that release had removed the releaser's own key. Nor can one invoked
        before this acquire returned that returned after it, its lease still valid then: c1's
        release of a live lease, in flight 0.9 ms across c2's grant, read as what removed
        c2's key 200 ms later, when c2's lease had run out while it was paused.) Failing those, a
        release that got no answer, invoked before ``before``, within ``IN_FLIGHT_BOUND_NS``
        of this hold's acquire, by the same rule: a ``DEL`` whose reply a fault lost ran all
        the same, and the overlap it made was "unexplained". If ``chained`` (the explanations'
        last resort: in a lock whose clients' clocks decide, such chains are everywhere and
        the clock is the cause), a release of a live lease counts as a stale one when its
        own key may have gone before its command ran: another release had already removed it
        (one link deep: under load, del-release's stale release removed c2's key, c4's
        ``SET NX`` took the lock, c2's own release removed c4's key and c2 acquired again,
        and both held it), or its lease ran out before it returned (del-release in a fresh
        clone from nothing: every process stood still 160 ms, c5's lease lapsed while its
        DEL was in flight, c2's SET NX took the lock between, and c5's reply came first).
        Its ``DEL`` removed whatever key was there.
        """
        releases = self._release_index()
        in_flight = None
        for index in range(bisect_right(self._release_acks, hold.invoked), len(releases)):
            release = releases[index]
            if release.acked > before + IN_FLIGHT_BOUND_NS:
                break
            if release.process == hold.process or release.invoked >= before:
                continue
            if release.acked <= hold.start and not release.stale and not (
                    chained and (release.outlived or self._lost_key(release))):
                continue
            if release.invoked < hold.start < release.acked and not release.outlived and not (
                    chained and self._lost_key(release)):
                continue  # its own key stood until its command ran: before this SET NX could
            if release.acked <= before and release.invoked >= hold.start:
                return release, True
            in_flight = in_flight or release
        if in_flight is None:
            in_flight = next((release for release in self.unanswered_releases
                              if release.process != hold.process and release.invoked < before
                              and release.acked >= hold.invoked - IN_FLIGHT_BOUND_NS
                              and (release.acked > hold.start or release.stale)), None)
        return (in_flight, False) if in_flight is not None else None

    def _lost_key(self, release: Release) -> bool:
        """Whether another release had removed ``release``'s own key before it was invoked."""
        return release.hold is not None and self.foreign_release(
            release.hold, release.invoked, chained=False) is not None

    def _release_index(self) -> list[Release]:
        """Built on first use: only violations need it, and most histories have none."""
        if self._releases is None:
            self._releases = self.orphan_releases + [
                Release(hold.process, hold.end, hold.release_acked, hold)
                for hold in self.holds if hold.release_acked is not None
            ] + [  # inner releases of nested grants, as the hold they were inside
                Release(hold.process, level.end, level.release_acked, hold)
                for hold in self.holds if hold.levels is not None
                for level in hold.levels if level.release_acked is not None
            ]
            self._releases.sort(key=attrgetter("acked"))
            self._release_acks = [release.acked for release in self._releases]
        return self._releases

    def key_loss(self, lo: int, hi: int) -> tuple[int, FaultSpan] | None:
        """The first start or stop of a key-losing fault in (lo, hi]."""
        index = bisect_right(self._key_losses, lo, key=lambda pair: pair[0])
        if index < len(self._key_losses) and self._key_losses[index][0] <= hi:
            return self._key_losses[index]
        return None

    def unsure_between(self, lo: int, hi: int) -> list[UnsureAcquire]:
        """The acquires with an unknown outcome invoked in [lo, hi]."""
        first = bisect_left(self._unsure_invoked, lo)
        return self.unsure_acquires[first:bisect_right(self._unsure_invoked, hi)]

    def renewal_sent(self, process: str, lo: int, hi: int, *, answered: bool = False) -> bool:
        """Whether ``process`` sent a background renewal in (lo, hi] (``answered``: one that
        did not raise)."""
        sent = (self.renewals_answered if answered else self.renewals_sent).get(process, [])
        index = bisect_right(sent, lo)
        return index < len(sent) and sent[index] <= hi

    def in_flight(self, process: str, lo: int, hi: int) -> bool:
        """Whether ``process`` had a lock operation in flight, or sent a background renewal,
        at some instant of [lo, hi]."""
        invoked = self.ops_invoked.get(process)
        last = bisect_right(invoked, hi) if invoked is not None else 0
        return bool(last and self.ops_done[process][last - 1] >= lo) or self.renewal_sent(
            process, lo - 1, hi)

    def last_renewal_sent(self, process: str, lo: int, hi: int) -> int | None:
        """When ``process`` last sent a background renewal in (lo, hi] (None: it sent none)."""
        sent = self.renewals_sent.get(process, [])
        index = bisect_right(sent, hi) - 1
        return sent[index] if index >= 0 and sent[index] > lo else None

    def stalls_of(self, process: str, lo: int, hi: int) -> list[tuple[int, int]]:
        """The stretches ``process`` did not run that overlap [lo, hi]."""
        return [(since, until) for since, until in self.stalls.get(process, [])
                if since < hi and until > lo]

    def pauses_of(self, process: str, lo: int, hi: int) -> list[PauseReached]:
        """The pause points ``process`` reached in [lo, hi]."""
        points = self.pause_points.get(process, [])
        first = bisect_left(points, lo, key=lambda point: point.t)
        last = bisect_right(points, hi, key=lambda point: point.t)
        return points[first:last]
