"""Renewals: a lock that renews its leases by itself let one lapse while its holder ran.

A lock that renews in the background (a watchdog) promises more than a plain lease: as long as
its holder runs, the lease does not run out. A lapse is expected when something stopped the
holder (a pause, a crash: the watchdog stops with it, the known limit of watchdogs) or cut it
off from the servers (the renewals cannot arrive). A lapse with none of that is the lock
breaking its own promise — a renewal thread that died, or that gave up — and is hard.

A hold of a renewing lock *lapsed* when a lease in it (the acquire's, or the last renewal's or
extend's) ran out more than a tolerance before the next renewal or the client's own release:
one TTL (the lease's own length stands in for a TTL the history does not give), and never
less than ``MIN_TOLERANCE_NS``. A renewal whose round trip straddled the deadline, or a
watchdog thread that an overloaded machine did not run for a while (three busy loops on two
cores and a dozen more runnable processes delayed one by 190 ms at a 200 ms TTL), is not a
dead one. A machine's stall does not shrink with the TTL: at the audit's explore TTL (50 ms),
two audits side by side on two cores stopped a sound ``reentrant-watchdog`` client, both its
threads, for 164 ms, and its watchdog renewed the moment it ran again — judged against one
TTL, that was hard. It counts only when:

* the lease reached its holder with at least ``MIN_LEFT`` of the TTL left: an acquire (or a
  renewal) whose reply came back late — the machine overloaded, say — may be gone before a
  watchdog renewing every TTL/3 first tries, and then nothing could have kept it;

* no renewal was *sent* in time — by the deadline plus the tolerance (a ``renew``'s
  ``value.invoked``; a ``renew`` ``fail`` is a renewal the lock gave up on): a renewal sent in
  time whose answer came back late, or refused, shows a live watchdog whose lease lapsed on
  the way to Redis (an overloaded server or proxy), not a watchdog that stopped renewing.
  The tolerance counts only time the holder ran: each stretch its process did not run
  (``stall``, recorded by the process itself: ``chaos.workload.stalls``) moves the end on by
  its length. In CI, beside five JVMs starting, a ``watchdog`` holder's process did not run
  for 524 ms — its read of a local Redis took 534 ms — and its watchdog renewed the moment it
  ran again: that lease ran out while its holder was stalled, as under a GC pause (soft);
* the client demonstrably ran afterwards: a renewal ended the lapse, or the client released
  (or acquired again) — a hold cut by a crash, or still held when the history ends, is not
  judged;
* nothing excuses it between the lease's start and its deadline: no fault aimed at the client
  (stalled, killed, its links delayed or cut, its clock moved), no fault aimed at the servers
  rather than at clients, and no pause point the client reached.

A lapse that a fault excused is not the end of it. A renewal the fault cut is expected (it
raised: a ``renew`` ``fail`` with an ``error``, or nothing at all), and a live watchdog renews
again once the links are back — or finds the lease gone and says so (a renewal with validity
0 and no error: the history's ``renew`` ``fail``; or an extend that revoked the lease). One
that never renews again while its holder runs on with its links up is a **dead watchdog**
(``DeadWatchdog``): a renewal thread killed by the fault's error (Redisson #3194,
python-redis-lock 4.0.1's ``_lock_renewer``), as hard as an unexcused lapse. It counts when,
after the last fault aimed at the holder or the servers healed (or the holder's last pause
point, or its last renewal that raised, if later), the holder ran — its stalls left out — for
longer than ``dead_after``: a watchdog renews at least once a TTL, a renewal in flight when
the fault healed may take the client's socket timeout to fail before the next one goes out,
and the tolerance above covers a thread an overloaded machine ran late.

Which locks renew is what the harness start event declares (``renews: true``: from the lock's
catalog entry or driver's ``describe``, from ``--renews``, or from the audit's warm-up, which
saw the lock renew). A history without it — older ones, hand-built ones, locks that declare
nothing — is never judged here: its ``renew`` events only move deadlines, as they always did.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from chaos.checker.holds import NEVER, REACQUIRE, Hold
from chaos.checker.timeline import FaultSpan, PauseReached, Timeline
from chaos.history import INVALIDATED, RELEASE, REVOKED

# A renewing lock may let a lease run out by up to one TTL, and never less than 250 ms (a
# renewal sent that late is not a dead watchdog), and is judged only on leases that reached
# the holder with 2/3 of a TTL left.
MIN_LEFT = 2 / 3
MIN_TOLERANCE_NS = 250_000_000  # above the longest stall measured on an overloaded machine
# Hold ends that show the client was running: it released, was granted again, or was told
# by an extend that its lease is gone (revoked) or out of its reach (invalidated).
ENDED_BY_CLIENT = (RELEASE, REACQUIRE, REVOKED, INVALIDATED)
# The client's socket timeout (``WorkloadConfig.socket_timeout_s``, in the start event) when a
# history does not say it: a renewal in flight when a fault healed fails by then at the latest.
DEFAULT_SOCKET_TIMEOUT_S = 0.5


@dataclass(frozen=True, slots=True)
class Lapse:
    """One lease of a renewing lock that ran out while its holder ran."""

    hold: Hold
    since: int  # the lease began: the acquire, or the last renewal or extend
    deadline: int  # it ran out
    until: int  # the next renewal, or the client's release
    renewed_again: bool  # a renewal or an extend ended it (else the hold's end did)
    # Which of those were the holder's extends (else the acquire, or a renewal): the lease's
    # beginning, its end.
    extended: tuple[bool, bool] = (False, False)

    @property
    def process(self) -> str:
        return self.hold.process


def renews(timeline: Timeline) -> bool:
    """Whether the history's lock renews its leases by itself (see the module docstring)."""
    return timeline.params.get("renews") is True


@dataclass(frozen=True, slots=True)
class DeadWatchdog:
    """A lapse a fault excused, after which the watchdog never renewed again although its
    holder ran on with its links up (the module docstring)."""

    lapse: Lapse
    healed: int  # the last thing that excused it ended: a fault healed, a pause point reached
    by: FaultSpan | PauseReached  # what that was
    ran: int  # how long the holder ran from then to the lapse's end, its stalls left out

    @property
    def process(self) -> str:
        return self.lapse.process


def find_lapses(timeline: Timeline) -> list[Lapse]:
    """Every unexcused lapse, in order of its deadline; none for a lock that does not renew."""
    lapses = [lapse for lapse, due in _lapsed(timeline)  # a renewal sent by ``due``: its
              if not timeline.renewal_sent(lapse.process, lapse.since, due)  # answer was late
              and not excused(lapse.process, lapse.since, lapse.deadline, timeline)]
    lapses.sort(key=lambda lapse: lapse.deadline)
    return lapses


def find_dead_watchdogs(timeline: Timeline) -> list[DeadWatchdog]:
    """Every lapse a fault excused after which the watchdog never renewed again, though its
    holder ran for longer than ``dead_after`` once the fault healed; in order of the lapse's
    deadline. None for a lock that does not renew."""
    found = []
    for lapse, _ in _lapsed(timeline):
        p, hold = lapse.process, lapse.hold
        if hold.ended_by in (REVOKED, INVALIDATED) and lapse.until in (
                hold.end, hold.leases[-1][0]):  # a revoked hold's last lease is the revoke's
            continue  # an extend said the lease was gone: its end, not a dead watchdog
        if not excused(p, lapse.since, lapse.deadline, timeline):
            continue  # a lapse (``find_lapses``), if no renewal went out in time
        if timeline.renewal_sent(p, lapse.since, lapse.until, answered=True):
            continue  # it renewed again, or found the lease gone and said so (validity 0)
        healed = _last_excuse(p, lapse.since, lapse.until, timeline)
        if healed is None or healed[0] >= lapse.until:
            continue  # excused to the end
        # A renewal that raised after the heal shows the watchdog alive then: from it on.
        tried = timeline.last_renewal_sent(p, healed[0], lapse.until)
        alive = healed[0] if tried is None else tried
        ran = lapse.until - alive - sum(
            min(until, lapse.until) - max(since, alive)
            for since, until in timeline.stalls_of(p, alive, lapse.until))
        if ran > dead_after(timeline, lapse):
            found.append(DeadWatchdog(lapse, healed[0], healed[1], ran))
    found.sort(key=lambda dead: dead.lapse.deadline)
    return found


def dead_after(timeline: Timeline, lapse: Lapse) -> int:
    """How long a holder may run with its links up after a fault healed before a watchdog
    that never renewed again is dead: a renewal period (at most one TTL: a watchdog renews
    before its lease runs out), the client's socket timeout (a renewal in flight when the
    fault healed may take that long to fail, before the next goes out) and the tolerance of
    a late thread (``MIN_TOLERANCE_NS``)."""
    socket_timeout_s = timeline.params.get("socket_timeout_s", DEFAULT_SOCKET_TIMEOUT_S)
    if not isinstance(socket_timeout_s, int | float):
        socket_timeout_s = DEFAULT_SOCKET_TIMEOUT_S
    return dead_after_ns(timeline.ttl_ns or lapse.deadline - lapse.since, socket_timeout_s)


def dead_after_ns(ttl_ns: int, socket_timeout_s: float) -> int:
    """``dead_after`` for a TTL and a socket timeout: what the audit gives a holder a failing
    fault hit to run after the heal, too (``chaos.experiments.audit.trials``)."""
    return ttl_ns + int(socket_timeout_s * 1e9) + MIN_TOLERANCE_NS


def _last_excuse(process: str, lo: int, hi: int, timeline: Timeline
                 ) -> tuple[int, FaultSpan | PauseReached] | None:
    """When the last thing that excused ``process``'s lapses in [lo, hi] ended, and what it
    was: a fault aimed at it or at the servers (its stop), or a pause point it reached."""
    last: tuple[int, FaultSpan | PauseReached] | None = None
    for fault in timeline.faults_during(lo, hi):
        if _touches(fault, process) and (last is None or fault.stop > last[0]):
            last = (fault.stop, fault)
    for point in timeline.pauses_of(process, lo, hi):
        if last is None or point.t > last[0]:
            last = (point.t, point)
    return last


def _lapsed(timeline: Timeline) -> Iterator[tuple[Lapse, int]]:
    """Every lease of a renewing lock that ran out more than the tolerance before its
    holder's next renewal or release (and could have been kept), with the end of that
    tolerance (counted in the time the holder ran); none for a lock that does not renew.
    Whether a renewal went out in time and whether something excused it is the callers'."""
    if not renews(timeline):
        return
    for hold in timeline.holds:
        yield from _hold_lapsed(hold, timeline)


def _hold_lapsed(hold: Hold, timeline: Timeline) -> Iterator[tuple[Lapse, int]]:
    ends = [lease[0] for lease in hold.leases[1:]] + [hold.end]
    for index, ((since, deadline), until) in enumerate(zip(hold.leases, ends, strict=True)):
        renewed_again = index + 1 < len(hold.leases)
        if deadline >= NEVER or until >= NEVER:
            continue
        if not renewed_again and hold.ended_by not in ENDED_BY_CLIENT:
            continue
        ttl = timeline.ttl_ns or deadline - since
        if deadline - since < ttl * MIN_LEFT:
            continue  # it reached the holder too late to be kept (see the module docstring)
        due = _while_running(hold.process, since, deadline + max(ttl, MIN_TOLERANCE_NS),
                             timeline)
        if until <= due:
            continue
        extended = tuple((hold.process, t) in timeline.extended for t in (since, until))
        yield Lapse(hold, since, deadline, until, renewed_again,
                    (extended[0], extended[1] and renewed_again)), due


def _while_running(process: str, since: int, due: int, timeline: Timeline) -> int:
    """``due``, moved on by the time ``process`` did not run after ``since`` (its ``stall``
    events, in time order): the tolerance is counted in the time the holder ran. A stall
    that begins before the end so far moves it past its own end."""
    moved = due
    for start, until in timeline.stalls.get(process, []):
        if start >= moved:
            break
        if until > since:
            moved += until - max(start, since)
    return moved


def excused(process: str, lo: int, hi: int, timeline: Timeline) -> bool:
    """Whether something outside the lock may have kept ``process``'s renewals from landing
    in [lo, hi]: a fault aimed at it or at the servers, or a pause point it reached."""
    if timeline.pauses_of(process, lo, hi):
        return True
    return any(_touches(fault, process) for fault in timeline.faults_during(lo, hi))


def _touches(fault: FaultSpan, process: str) -> bool:
    """A fault aimed at this client, or at the servers (every client's renewals) rather than
    at other clients only."""
    return fault.hits(process) or not fault.aims_at_clients
