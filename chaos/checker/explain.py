"""Plain-language explanations, built only from what the history recorded.

Each violation gets one paragraph a person can act on: who held the lock, when, what each
lease promised, which faults were active, and above all *how* the earlier holder's key went
away before the later client acquired. The cause is searched in a fixed order, from the most
direct evidence to the least:

1. another client's release returned true while the earlier holder held the lock (it can
   only have deleted the earlier holder's key) — unless a fault that splits the master was on
   at the time: with two masters, that release may have removed the releaser's own key on
   the other one; or, failing (2) and (3), a release that was in flight across the earlier
   acquire or the gap (it may have landed after the earlier key was set);
2. a fault that loses keys began or ended in between;
3. the earlier holder's own inner release (of a nested grant, invoked while its lease was
   valid) freed the lock its outer hold still had: a reentrant lock whose release ignores
   its count (python-zk/kazoo#291);
4. the earlier lease had simply expired (the holder was stalled, or its work outran the TTL);
5. either acquire (the later one first) took a TTL or longer and the lock granted it a
   lease more than ``CLAIM_TTLS`` TTLs past the grant, which no key it set can back (the
   redlock crate's validity, computed in an unsigned integer, wraps): the earlier holder's
   keys had expired under a lease that said otherwise, or the later one was granted on keys
   already gone;
6. a fault that moves a client's wall clock was on when the later client acquired, aimed at
   one of the two: a lock that judges expiry by client clocks gave it away early;
7. a client's losing acquire that writes first overwrote the earlier holder's expiry (certain
   for a ``GETSET``, a condition for a script, whose writes the history cannot see);
8. a fault that splits the master was on when the later client acquired: split brain, two
   masters granting;
9. a chain of releases: a release of a live lease whose own key another release had removed
   first removed whatever key was there;
10. the later acquire took a TTL or longer and was granted all the same (any lease);
11. none of the above: the lock granted a key that should still have existed.

What made an overlap hard comes before that cause when it was one holder's own operation: the
two leases became valid together only at a lease that holder's extend, renewal or nested
grant began, after its previous lease had run out and the other client had acquired (an
extend that does not check whose key it extends: ``_revived``).

Which faults lose keys, split the master or stall a client is what each fault's start event
declares (its ``effects``, ``chaos.history.EFFECTS``): this module knows no fault by name.

Times are seconds since the run started, with millisecond precision.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from itertools import pairwise

from chaos.checker.data import LostWrite
from chaos.checker.fairness import Overtaken
from chaos.checker.holds import NEVER, REACQUIRE, Hold, Level
from chaos.checker.leaks import Leak
from chaos.checker.liveness import GaveUp, Outage, Wedged
from chaos.checker.overlaps import Overlap
from chaos.checker.permits import Excess
from chaos.checker.renewals import DeadWatchdog, Lapse
from chaos.checker.timeline import CLAIM_TTLS, FaultSpan, PauseReached, Release, Timeline
from chaos.history import ACQUIRE, EXCLUSIVE, MOVES_CLOCK

MAX_LISTED = 5  # lost writes or suspects spelled out in one explanation


class Clock:
    """Monotonic ns → seconds since the run started."""

    def __init__(self, timeline: Timeline) -> None:
        self.start = timeline.start
        self.end = timeline.end

    def seconds(self, t: int) -> float:
        """For verdict fields; the end of the history stands in for ``NEVER``."""
        return round(((self.end if t >= NEVER else t) - self.start) / 1e9, 6)

    def at(self, t: int) -> str:
        if t >= NEVER:
            return f"the end of the history ({self.at(self.end)})"
        return f"{(t - self.start) / 1e9:.3f} s"

    def deadline(self, t: int) -> str:
        return "no deadline" if t >= NEVER else self.at(t)


def overlap(ov: Overlap, timeline: Timeline, clock: Clock) -> tuple[str, str]:
    """The cause (a short tag) and the explanation of one overlapping pair: two holders of a
    mutex, or (a lock with shared holds) an exclusive hold and another."""
    a, b = ov.first, ov.second
    at = clock.at
    if timeline.mutex:
        held = f"{a.process} and {b.process} both held the lock"
    elif a.mode == b.mode:
        held = f"{a.process} and {b.process} both {_did(a)}"
    else:
        first, other = (a, b) if a.mode == EXCLUSIVE else (b, a)
        held = f"{first.process} {_did(first)} while {other.process} {_did(other)}"
    head = f"{held} from {at(ov.start)} to {at(ov.end)}"
    if ov.both_valid is not None:
        valid_from, valid_until = ov.both_valid
        head = f"hard: {head}, both leases valid from {at(valid_from)} to {at(valid_until)}."
    else:
        head = f"soft: {head}, but never both within their leases."
    leases = (
        f"{a.process} acquired at {at(a.start)} (lease until "
        f"{clock.deadline(a.deadline_at(ov.start))}); {b.process} acquired at {at(b.start)} "
        f"(lease until {clock.deadline(b.deadline_at(ov.start))})."
    )
    cause, why = _cause(a, b, timeline, clock)
    revived = _revived(ov, timeline, clock)
    if revived is not None:  # what made it hard comes first; how the key went, after it
        cause, why = revived[0], f"{revived[1]}. Before it, {why}"
    return cause, " ".join([head, leases, f"{why}.", *_faults(timeline, a.start, ov.end, clock)])


def _revived(ov: Overlap, timeline: Timeline, clock: Clock) -> tuple[str, str] | None:
    """The operation that broke exclusion, when the overlap became hard at the lease it gave:
    a holder's extend, renewal or nested grant, after its previous lease had run out and the
    other client had acquired meanwhile — "c1's extend at 3.481 s succeeded although c3 had
    held the lock since 3.290 s: the extend does not check whose key it extends" (a
    ``SET key token XX``, a plain ``PEXPIRE``, redisson/redisson#597). Not while a fault
    that splits the master was on, nor across one that loses keys: then the other master,
    or a key that came back, may be what it extended."""
    if ov.both_valid is None:
        return None
    t = ov.both_valid[0]
    for holder, other in ((ov.first, ov.second), (ov.second, ov.first)):
        starts = [lease[0] for lease in holder.leases]
        if t not in starts[1:]:
            continue
        lapsed = holder.leases[starts.index(t, 1) - 1][1]  # the deadline it had before
        if not lapsed <= other.start < t or timeline.split_at(t) is not None or (
                timeline.key_loss(lapsed, t) is not None):
            continue
        return _unchecked(holder, t, other, timeline, clock)
    return None


def _unchecked(holder: Hold, t: int, other: Hold, timeline: Timeline,
               clock: Clock) -> tuple[str, str]:
    """The cause and the words for what gave ``holder`` its lease from ``t`` on — its extend,
    a nested acquire or a renewal — though ``other`` held the lock by then."""
    p, at = holder.process, clock.at
    if (p, t) in timeline.extended:
        cause, op, verb = "foreign-extend", "extend", "extends"
    elif any(level.start == t for level in holder.levels or ()):
        cause, op, verb = "foreign-reentry", "nested acquire", "re-enters"
    else:
        cause, op, verb = "foreign-renewal", "renewal", "renews"
    return cause, (f"{p}'s {op} at {at(t)} succeeded although {other.process} had held "
                   f"the lock since {at(other.start)}: the {op} does not check whose key "
                   f"it {verb}")


def _did(hold: Hold) -> str:
    """What a hold of a lock with shared holds did, in a read-write lock's words."""
    return "wrote (exclusive)" if hold.mode == EXCLUSIVE else "read (shared)"


def excess(ex: Excess, timeline: Timeline, clock: Clock) -> tuple[str, str]:
    """The cause and the explanation of shared holds that took more permits than the lock
    has: "c1, c2, c4 and c5 held 4 permits of a 3-permit semaphore from …"."""
    at = clock.at
    shown = ex.valid_holds if ex.valid is not None else ex.holds
    most = ex.most if ex.valid is None else sum(hold.permits for hold in shown)
    head = (f"{_names(sorted({hold.process for hold in shown}))} held {most} permits of a "
            f"{ex.capacity}-permit semaphore from {at(ex.start)} to {at(ex.end)}")
    if ex.valid is not None:
        valid_from, valid_until = ex.valid
        head = (f"hard: {head}, their leases valid from {at(valid_from)} to "
                f"{at(valid_until)}, more permits than the lock has.")
    else:
        head = (f"soft: {head}, but never more than {ex.capacity} within their leases.")
    listed = [
        f"{hold.process} acquired {_permits(hold.permits)} at {at(hold.start)} (lease until "
        f"{clock.deadline(hold.deadline_at(max(hold.start, ex.start)))})"
        for hold in ex.holds[:MAX_LISTED]
    ]
    more = f" and {len(ex.holds) - MAX_LISTED} more" if len(ex.holds) > MAX_LISTED else ""
    cause, why = _excess_cause(ex, timeline, clock)
    return cause, " ".join([head, "; ".join(listed) + f"{more}.", f"{why}.",
                            *_faults(timeline, ex.holds[0].start, ex.end, clock)])


def _excess_cause(ex: Excess, timeline: Timeline, clock: Clock) -> tuple[str, str]:
    """Why the permits ran over: a lapsed lease (soft), else a fault that lost keys or split
    the master, else a client clock moved under one of the holders, else the last acquire
    raced another (``_raced``), else the lock granted a permit it did not have."""
    at = clock.at
    last = max(ex.holds, key=lambda hold: hold.start)
    if ex.valid is None:
        lapsed = [hold for hold in ex.holds if hold.lapsed_before(last.start) is not None
                  and hold is not last]
        if lapsed:
            hold = lapsed[0]
            return "lease-expired", (
                f"{hold.process}'s lease expired at {at(hold.deadline_at(last.start))} while "
                f"{hold.process} still held its {_permits(hold.permits)} "
                f"({_stalled(hold, last.start, timeline, clock)})"
            )
    loss = timeline.key_loss(ex.holds[0].start, last.start)
    if loss is not None:
        return _lost_to(loss, clock, "while the permits were held: the holders' entries did "
                                     "not survive it")
    split = timeline.split_at(last.start)
    if split is not None:
        return split.name, (
            f"{split.name} {split.id} was under way when {last.process} acquired: two "
            f"masters each counted their own holders (split brain)"
        )
    others = [hold for hold in ex.holds if hold is not last]
    for other in others:
        moved = _clock_moved(other, last, timeline, clock, what="permit")
        if moved is not None:
            return moved
    raced = _raced(last, others, ex.capacity, timeline, clock)
    if raced is not None:
        return raced
    return "unexplained", (
        f"The lock granted {last.process} while the others' permits should still have "
        f"been counted"
    )


def _raced(last: Hold, others: list[Hold], capacity: int, timeline: Timeline,
           clock: Clock) -> tuple[str, str] | None:
    """``last``'s acquire was under way when another holder was granted, and was granted
    after it: both counted themselves within the permits. Redis in Action's semaphores rank an
    acquire by a value read before its entry lands (6.3.1 the client's clock, 6.3.2 a counter
    taken one transaction earlier): one that read first and arrived second ranks ahead of a
    permit already granted. A hypothesis — the history cannot see the rank — so named last,
    before "unexplained"; the book's excesses with no fault were that sentence."""
    crossed = [hold for hold in others if last.invoked < hold.start <= last.start]
    if not crossed:
        return None
    other = crossed[-1]
    stalled = _stalled_at(last.process, last.invoked, last.start, timeline)
    at = clock.at
    return "raced", (
        f"{last.process}'s acquire, invoked at {at(last.invoked)}{stalled}, was still under way "
        f"when {other.process} was granted at {at(other.start)}, and was granted too at "
        f"{at(last.start)}: each counted itself within the {_permits(capacity)} — if this "
        f"lock ranks an acquire by a value read before its entry is added (a clock, a "
        f"counter), the one that read first and arrived second ranked ahead of a permit "
        f"already granted"
    )


def _lost_to(loss: tuple[int, FaultSpan], clock: Clock, what: str) -> tuple[str, str]:
    """The cause: a fault that lost keys (``Timeline.key_loss``) began or ended at ``t``."""
    t, fault = loss
    began = "began" if t == fault.start else "ended"
    return fault.name, f"{fault.name} {fault.id} {began} at {clock.at(t)}, {what}"


def _permits(n: int) -> str:
    return "1 permit" if n == 1 else f"{n} permits"


def _names(names: list[str]) -> str:
    """``c1``, ``c1 and c2``, ``c1, c2 and c4``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _cause(a: Hold, b: Hold, timeline: Timeline, clock: Clock) -> tuple[str, str]:
    """How ``a``'s key went away before ``b`` acquired (see the module docstring). With
    shared holds, another holder's release removed its own entry, not ``a``'s: the releases
    are not suspects."""
    at = clock.at
    found = timeline.foreign_release(a, b.start) if timeline.mutex else None
    if found is not None and timeline.split_at(found[0].acked) is not None:
        found = None  # with two masters, it may have removed the releaser's own key
    loss = timeline.key_loss(a.start, b.start)
    freed = _freed(a, b)
    if found is not None and (found[1] or (loss is None and freed is None)):
        return _released(found, a, timeline, clock)
    if loss is not None:
        return _lost_to(loss, clock, f"after {a.process} acquired and before {b.process} did: "
                                     f"{a.process}'s key did not survive it")
    if freed is not None:
        return "inner-release", (
            f"{a.process}'s inner release at {at(freed.end)} freed the lock its outer hold "
            f"still had; {b.process} acquired it at {at(b.start)}: the release of "
            f"{a.process}'s nested grant (at {at(freed.start)}) must leave the lock held until "
            f"{a.process}'s outermost release"
        )
    lapsed = a.lapsed_before(b.start)
    if lapsed is not None:
        return "lease-expired", (
            f"{a.process}'s lease expired at {at(lapsed)} while {a.process} still held it "
            f"({_stalled(a, b.start, timeline, clock)})"
        )
    for holder in (b, a):
        unbacked = _outlasted(holder, timeline, clock)
        if unbacked is not None and _claims_past_any_key(holder, timeline):
            return unbacked
    moved = _clock_moved(a, b, timeline, clock)
    if moved is not None:
        return moved
    overwritten = _overwritten(a, b, timeline, clock)
    if overwritten is not None:
        return overwritten
    split = timeline.split_at(b.start)
    if split is not None:
        return split.name, (
            f"{split.name} {split.id} was under way when {b.process} acquired: two masters "
            f"(one of which never received the other's keys) both granted the lock, so "
            f"{a.process} and {b.process} could each hold it on one (split brain)"
        )
    if timeline.mutex:
        # A chain, last: a release of a live lease whose own key another release had removed
        # first (or which outlived its lease in flight) removed ``a``'s key — or ``b``'s, and
        # ``a`` acquired after (del-release under load: c3's stale DEL took c2's key, c4
        # acquired, c2's release took c4's, c2 again).
        chain = timeline.foreign_release(a, b.start, chained=True)
        victim = a
        if chain is None:
            chain, victim = timeline.foreign_release(b, a.start, chained=True), b
        if chain is not None:
            return _released(chain, victim, timeline, clock)
    outlasted = _outlasted(b, timeline, clock)
    if outlasted is not None:
        return outlasted
    return "unexplained", (
        f"The lock granted {b.process} while {a.process}'s key should still have existed"
    )


def _outlasted(b: Hold, timeline: Timeline, clock: Clock) -> tuple[str, str] | None:
    """``b``'s acquire took a TTL or longer, and the lock granted it all the same: a key it
    set in its first TTL had expired before it was granted — another client could take it
    meanwhile — and the lease it claims cannot rest on it (redlock-rs's validity, TTL − time
    spent in an unsigned integer, wrapped to 1.8·10¹⁹ ms: "lease until no deadline"). Named
    only when nothing else explains the overlap: a blocking acquire that waited, then set its
    key, took as long and did nothing wrong."""
    life = timeline.key_life_ns
    if life is None or b.start - b.invoked < life or b.deadline_at(b.start) <= b.start:
        return None  # quicker than a TTL, or granted a lease already gone (soft at most)
    stalled = _stalled_at(b.process, b.invoked, b.start, timeline)
    return "acquire-outlasted-lease", (
        f"{b.process}'s acquire, invoked at {clock.at(b.invoked)}{stalled}, took "
        f"{(b.start - b.invoked) / 1e6:.0f} ms, longer than the {life / 1e6:.0f} ms TTL, and the "
        f"lock granted it a lease until {clock.deadline(b.deadline_at(b.start))}: any key it "
        f"set in its first TTL had expired by then, and another client could take it "
        f"meanwhile (a lock must not count a key it set more than a TTL before it grants)"
    )


def _claims_past_any_key(b: Hold, timeline: Timeline) -> bool:
    """Whether the lease ``b`` was granted runs more than ``CLAIM_TTLS`` TTLs past its grant:
    no key set during its acquire lasts that long, so an acquire that outlasted its TTL
    (``_outlasted``) is the certain cause, named before the hypotheses about other clients'
    writes (a losing acquire that overwrote an expiry: in the redlock crate's audit, every
    client was paused before its last node, and the one whose validity wrapped — the later
    holder in one seed, the earlier in another — was named second to a loser that overwrote
    nothing)."""
    life = timeline.key_life_ns
    return life is not None and b.deadline_at(b.start) - b.start > CLAIM_TTLS * life


def _took_over(release: Release, victim: Hold) -> tuple[int, int] | None:
    """When the releaser's own extend (renewal, nested grant) succeeded after ``victim`` had
    acquired — its lease gone before ``victim`` did, so that key was ``victim``'s — and
    before the release: one that does not check whose key it extends (``SET key token XX``)
    made it the releaser's, and its owner-checked release then removed it. (When, and when
    its lease had lapsed.) ``_revived`` names such an extend when the lease it gave was still
    valid; one invoked before a pause and answered after it gave a lease already past, and
    the overlap read "c2 released c1's lock" (a fresh clone's CI). Only for a release that
    answered true: one with no answer is a hypothesis of its own (``_released``)."""
    hold = release.hold
    if hold is None or not release.answered:
        return None
    for (_, lapsed_at), (since, _) in pairwise(hold.leases):
        if lapsed_at <= victim.start < since <= release.invoked:
            return since, lapsed_at
    return None


def _released(found: tuple[Release, bool], victim: Hold, timeline: Timeline,
              clock: Clock) -> tuple[str, str]:
    """The words for a release by another client that removed ``victim``'s key
    (``Timeline.foreign_release``): certain, in flight, or with no answer."""
    at = clock.at
    release, certain = found
    took = _took_over(release, victim)
    if took is not None and release.hold is not None:  # it removed a key it had made its own
        since, lapsed_at = took
        cause, text = _unchecked(release.hold, since, victim, timeline, clock)
        p = release.process
        return cause, (f"{text}. Before it, {p}'s lease expired at {at(lapsed_at)}; after it, "
                       f"{p}'s release returned true at {at(release.acked)}, removing "
                       f"{victim.process}'s key")
    if certain:
        text = (
            f"{release.process} released {victim.process}'s lock at {at(release.acked)}: "
            f"{release.process}'s release returned true while {victim.process} held it"
        )
    else:
        stalled = _stalled_at(release.process, release.invoked, release.acked, timeline)
        when = (f"when {victim.process} acquired" if release.acked > victim.start
                else f"while {victim.process}'s acquire was")
        text = (
            f"{release.process} released {victim.process}'s lock: {release.process}'s release, "
            f"invoked at {at(release.invoked)}{stalled}, was still in flight {when} and "
            f"returned true at {at(release.acked)}"
        ) if release.answered else (
            f"{release.process} may have released {victim.process}'s lock: "
            f"{release.process}'s release, invoked at {at(release.invoked)}{stalled}, got "
            f"no answer (given up at {at(release.acked)}); its command may have run all "
            f"the same, and removed {victim.process}'s key if the release does not check whose "
            f"key it is"
        )
    lapsed = release.hold.lapsed_before(release.acked) if release.hold else None
    if lapsed is not None and lapsed <= release.invoked:
        text += f" ({release.process}'s own lease had expired at {at(lapsed)})"
    elif lapsed is not None:
        text += (f" ({release.process}'s own lease expired at {at(lapsed)}, while its release "
                 f"was in flight: its key may have gone before the release's command ran)")
    return ("foreign-release" if certain else "in-flight-release"), text


def _freed(a: Hold, b: Hold) -> Level | None:
    """The inner release of ``a`` (the release of a nested grant) that may have freed the lock
    before ``b`` acquired, invoked while ``a``'s lease was valid (else its lapse explains)."""
    freed = a.freed_by(b.start)
    if freed is None or a.lapsed_before(freed.end) is not None:
        return None
    return freed


def _clock_moved(a: Hold, b: Hold, timeline: Timeline, clock: Clock,
                 what: str = "lock") -> tuple[str, str] | None:
    """A fault that moves one *client's* wall clock (``moves-clock``, aimed at a client and at
    no node), on while ``b`` acquired and aimed at ``a`` or ``b``: a lock that judges expiry
    by its clients' clocks (seed 004's ``wrongGetLock2``) then hands out a lock that is still
    held. The skew is the fault's ``skew_ms`` (or ``offset_ms``) parameter."""
    for fault in timeline.faults_during(b.invoked, b.start):
        target = fault.target
        if MOVES_CLOCK not in fault.effects or (isinstance(target, dict) and target.get("nodes")):
            continue
        params = fault.params if isinstance(fault.params, dict) else {}
        skew = params.get("skew_ms", params.get("offset_ms"))
        if not isinstance(skew, int | float):
            continue
        ran = f"{abs(skew):g} ms {'ahead' if skew > 0 else 'behind'}"
        during = f"{fault.name} {fault.id} from {clock.at(fault.start)}"
        if fault.hits(b.process):
            return fault.name, (
                f"{b.process}'s clock ran {ran} ({during}): it judged {a.process}'s {what} "
                f"expired and took it"
            )
        if fault.hits(a.process):
            return fault.name, (
                f"{a.process}'s clock ran {ran} ({during}): the expiry it wrote was not "
                f"{b.process}'s, so {b.process} judged {a.process}'s {what} expired and took "
                f"it"
            )
    return None


def _overwritten(a: Hold, b: Hold, timeline: Timeline, clock: Clock) -> tuple[str, str] | None:
    """Another client's acquire (``b``'s own earlier one, too) that was already under way when
    ``a`` acquired, failed after it and before ``b`` acquired, and was invoked more than a TTL
    before ``b`` acquired: a lock
    whose acquire writes before it knows it won (004's ``getSet``) can have overwritten ``a``'s
    value with an expiry stamped at that old invoke — already past when ``b`` read it.
    Acquires that never write (``SET NX``) cannot do this, and for them the faster ones this
    leaves out are only polling. Nor can one after which ``a`` extended before ``b`` asked
    (``_wrote_again``). The expiry stamped is the lock's own (``key_life_ns``)."""
    life = timeline.key_life_ns
    if life is None:
        return None
    for failed, invoked, p in zip(
        timeline.failed_at, timeline.failed_invoked, timeline.failed_by, strict=True
    ):
        if (p != a.process and invoked < a.start < failed <= b.start
                and invoked + life <= b.start and not _wrote_again(a, failed, b.invoked, timeline)):
            stalled = _stalled_at(p, invoked, failed, timeline)
            return "overwrote", (
                f"{p}'s acquire, invoked at {clock.at(invoked)}{stalled}, was still under way "
                f"when {a.process} acquired and failed at {clock.at(failed)}: "
                f"{_writes_first(timeline)} {a.process}'s expiry with one stamped at "
                f"{clock.at(invoked)}, already past when {b.process} judged the lock expired "
                f"and took it"
            )
    return None


def _wrote_again(hold: Hold, after: int, before: int, timeline: Timeline) -> bool:
    """Whether ``hold``'s own extend, invoked after ``after`` and answered before ``before``,
    gave it a new lease: it wrote its expiry again, and a lock that keeps the expiry in its
    value must, to extend it — what an acquire wrote before is gone. (The whole-seconds extend
    lost its lease's remainder at each extend, and its overlap read "that losing acquire
    overwrote c2's expiry", the acquire 1.3 s and four extends behind the grant.)"""
    p = hold.process
    invoked, done = timeline.ops_invoked.get(p), timeline.ops_done.get(p)
    if invoked is None or done is None:
        return False
    for since, _ in hold.leases[1:]:
        if after < since < before and (p, since) in timeline.extended:
            index = bisect_right(done, since) - 1  # the operation answered then
            if index >= 0 and done[index] == since and invoked[index] > after:
                return True
    return False


def _writes_first(timeline: Timeline) -> str:
    """How sure the overwrite is, from the acquire's recorded commands: a ``GETSET`` writes
    before it knows it won (004's flaw), so it did; a script's or an unrecorded acquire's
    writes cannot be seen, so it may have (a Redisson-style script that checks first never
    does — the cause is then only the one left that fits the times)."""
    sent = timeline.surface.get(ACQUIRE, [])
    if "GETSET" in sent:
        return "a losing GETSET, which writes before it knows it won, overwrote"
    what = f"its acquire sends {', '.join(sent)}" if sent else "its commands were not recorded"
    return (f"if this lock's acquire writes before it knows it won ({what}), that losing "
            f"acquire overwrote")


def _stalled(hold: Hold, until: int, timeline: Timeline, clock: Clock) -> str:
    """What kept ``hold``'s client busy past its lease, as far as the history shows."""
    seen = [
        _fault(fault, clock)
        for fault in timeline.faults_during(hold.start, until)
        if fault.stalls and fault.hits(hold.process)
    ]
    seen += [_pause(point, clock) for point in timeline.pauses_of(hold.process, hold.start, until)]
    if not seen:  # a fault's or a point's stop is one too: the stall adds nothing to it
        seen = [f"its process did not run for {(end - since) / 1e6:.0f} ms from "
                f"{clock.at(since)}, and no fault stopped it: the machine did not run it"
                for since, end in timeline.stalls_of(hold.process, hold.start, until)]
    if not seen:
        return f"no pause is recorded for {hold.process}: its work outran the lease"
    return f"{hold.process} was stalled: " + "; ".join(seen)


def lapses(found: list[Lapse], clock: Clock) -> str:
    """Why a renewing lock's lapses are hard: the first of one client's, and how many."""
    lapse = found[0]
    p = lapse.process
    more = f" ({len(found)} of {p}'s leases lapsed like this in all)" if len(found) > 1 else ""
    return (
        f"hard: {p}'s watchdog did not renew for {(lapse.until - lapse.since) / 1e6:.0f} ms "
        f"while {p} ran and its links were up: {_lapse(lapse, clock)}. No fault touched "
        f"{p}, its links or the servers, and {p} reached no pause point: a lock that renews "
        f"its leases must renew them for as long as its holder runs{more}."
    )


def dead_watchdogs(found: list[DeadWatchdog], clock: Clock) -> str:
    """Why a watchdog that stopped renewing once a fault healed is hard: the first of one
    client's, and how many."""
    dead = found[0]
    p, at = dead.process, clock.at
    if isinstance(dead.by, FaultSpan):
        after = f"{dead.by.name} {dead.by.id} healed at {at(dead.healed)}"
    else:
        after = f"{p} reached pause-point {dead.by.command} ({dead.by.action}) at {at(dead.healed)}"
    more = (f" ({len(found)} of {p}'s leases were left to lapse like this in all)"
            if len(found) > 1 else "")
    return (
        f"hard: {p}'s watchdog never renewed after {after}, though {p} ran for "
        f"{dead.ran / 1e9:.3f} s with its links up: {_lapse(dead.lapse, clock)}. A renewal "
        f"a fault cut must be followed by renewals once the links are back, or by the "
        f"watchdog saying the lease is gone: a lock that renews its leases must renew them "
        f"for as long as its holder runs{more}."
    )


def _lapse(lapse: Lapse, clock: Clock) -> str:
    """"its lease from its renewal at 1.234 s ran out at 1.434 s, and c2 went on holding the
    lock until it released it at 1.874 s": which lease lapsed, and what ended the lapse."""
    p, at = lapse.process, clock.at
    levels = lapse.hold.levels or []
    began = ("from its acquire" if lapse.since == lapse.hold.start
             else "from its nested grant" if any(level.start == lapse.since for level in levels)
             else "from its extend" if lapse.extended[0]
             else "from its renewal")
    if any(level.start == lapse.until for level in levels) or (
            not lapse.renewed_again and lapse.hold.ended_by == REACQUIRE):
        until = f"until it acquired again at {at(lapse.until)}"
    elif any(level.end == lapse.until and not level.reentered for level in levels):
        until = f"until it released its nested grant at {at(lapse.until)}"
    elif lapse.renewed_again:
        again = "it extended it" if lapse.extended[1] else "its next renewal"
        until = f"until {again} at {at(lapse.until)}"
    else:
        until = f"until it released it at {at(lapse.until)}"
    return (f"its lease {began} at {at(lapse.since)} ran out at {at(lapse.deadline)}, and {p} "
            f"went on holding the lock {until}")


def _stretch(start: int, end: int, clock: Clock, ttl_ns: int) -> str:
    """``from 1.000 s to 2.500 s (1.500 s, 8× the 200 ms TTL)``: how long, against the TTL."""
    length = end - start
    return (f"from {clock.at(start)} to {clock.at(end)} ({length / 1e9:.3f} s, "
            f"{length / ttl_ns:.0f}× the {ttl_ns / 1e6:g} ms TTL)")


def outage(out: Outage, timeline: Timeline, clock: Clock, ttl_ns: int,
           wedged: Wedged | None = None) -> str:
    """Why nobody could acquire for so long; a lock wedged for good says so first."""
    at = clock.at
    unheld = (f"no client held the lock {_stretch(out.start, out.end, clock, ttl_ns)} "
              f"while {out.failures} acquire attempts failed; "
              f"{_previous(out.previous, timeline, clock)}.")
    if wedged is None:
        parts = [f"liveness: {unheld}"]
    else:
        parts = [_wedged(wedged, timeline, clock, ttl_ns), unheld[0].upper() + unheld[1:]]
    since = out.previous.start if out.previous else timeline.start
    for attempt in timeline.unsure_between(since, out.end)[-MAX_LISTED:]:
        if attempt.crashed is not None:
            parts.append(
                f"{attempt.process}'s acquire invoked at {at(attempt.invoked)} never "
                f"completed: {attempt.process} crashed at {at(attempt.crashed)}"
                f"{_last_pause(attempt.process, attempt.invoked, attempt.crashed, timeline)}."
            )
        else:
            parts.append(
                f"{attempt.process}'s acquire invoked at {at(attempt.invoked)} was "
                f"indeterminate ({attempt.error}): it may hold a key nobody will release."
            )
    return " ".join(parts + _faults(timeline, out.gap[0], out.end, clock))


def _wedged(wedged: Wedged, timeline: Timeline, clock: Clock, ttl_ns: int) -> str:
    """"nobody acquired for the last 9.8 s of the run after c2 crashed holding the lock: its
    key lockchaos:lock has no expiry" — what left the lock taken, and what the key was at the
    end (``final-key``; a key the lock names otherwise was not read: then nothing is said)."""
    at = clock.at
    out, culprit = wedged.outage, wedged.culprit
    previous = out.previous
    if previous is not None and previous.ended_by == "crash":
        after = (f"after {previous.process} crashed holding the lock at {at(previous.end)}"
                 f"{_last_pause(previous.process, previous.start, previous.end, timeline)}")
    elif culprit is not None and culprit.crashed is not None:
        after = (f"after {culprit.process} crashed in its acquire at {at(culprit.crashed)}"
                 f"{_last_pause(culprit.process, culprit.invoked, culprit.crashed, timeline)}")
    elif culprit is not None:
        after = (f"after {culprit.process}'s acquire invoked at {at(culprit.invoked)} was "
                 f"indeterminate ({culprit.error})")
    elif previous is not None:
        after = f"since {previous.process} released it at {at(previous.end)}"
    else:
        after = "since the run began"
    left = (clock.end - wedged.since) / 1e9
    key = timeline.final_key
    held = ""
    if key is not None and key.without_expiry:
        held = f": its key {key.key} has no expiry"
    elif key is not None and key.pttl:
        held = (f": its key {key.key} was still there when the run ended, "
                f"{max(key.pttl.values())} ms from expiring")
    return (f"liveness, wedged for good: nobody acquired for the last {left:.1f} s of the run "
            f"({left * 1e9 / ttl_ns:.0f}× the {ttl_ns / 1e6:g} ms TTL) {after}{held}.")


def leak(found: Leak, timeline: Timeline, clock: Clock, ttl_ns: int) -> str:
    """Why a semaphore stayed short of its permits: who took them and never came back."""
    at = clock.at
    parts = [
        f"liveness: {_stretch(found.start, found.end, clock, ttl_ns)} the live holders took "
        f"at most {found.most} of the {found.capacity} permits, yet {found.failures} acquires that "
        f"fitted in the rest failed: permits leaked, held by no live client."
    ]
    for hold in found.lost[-MAX_LISTED:]:
        parts.append(
            f"{hold.process} crashed at {at(hold.end)} holding {_permits(hold.permits)}"
            f"{_last_pause(hold.process, hold.start, hold.end, timeline)}: "
            f"{'they' if hold.permits > 1 else 'it'} never came back."
        )
    for attempt in timeline.unsure_between(timeline.start, found.end)[-MAX_LISTED:]:
        if attempt.error is not None:
            parts.append(
                f"{attempt.process}'s acquire invoked at {at(attempt.invoked)} was "
                f"indeterminate ({attempt.error}): it may hold permits nobody will release."
            )
    return " ".join(parts + _faults(timeline, found.start, found.end, clock))


def overtaken(found: Overtaken, clock: Clock) -> str:
    """Why a fair lock was not: a waiter granted ahead of one that had asked earlier."""
    at = clock.at
    waiter, by = found.waiter, found.by
    after = (f"was granted only at {at(waiter.granted)}" if waiter.granted is not None
             else "was never granted")
    more = (f" ({found.count} grants overtook an earlier waiter in all)"
            if found.count > 1 else "")
    return (
        f"fairness: {by.process} was granted the lock at {at(by.granted or by.until)}, ahead of "
        f"{waiter.process}, which had been waiting since {at(waiter.first_invoked)} (its "
        f"first attempt failed at {at(waiter.asked)}, before {by.process} first asked at "
        f"{at(by.first_invoked)}) and {after}: a lock that claims to be fair grants waiters "
        f"in the order they asked{more}."
    )


def gave_up(gave_up: GaveUp, timeline: Timeline, clock: Clock) -> str:
    """Why a waiter gave up although nobody held the lock."""
    at = clock.at
    more = (f" ({gave_up.count} acquires gave up while nobody held the lock)"
            if gave_up.count > 1 else "")
    return (
        f"liveness: {gave_up.process} gave up waiting for the lock at {at(gave_up.failed)} "
        f"(its acquire, invoked at {at(gave_up.invoked)}, ran out its own acquire timeout) "
        f"while no client held it; {_previous(gave_up.previous, timeline, clock)}: its key "
        f"outlived it, and an acquire timeout shorter than the TTL gives up before the key "
        f"expires — lost availability, not a breach of mutual exclusion{more}."
        + "".join(f" {line}" for line in _faults(timeline, gave_up.invoked, gave_up.failed,
                                                  clock))
    )


def refused_own(refused: list[tuple[str, int, int, int]], clock: Clock) -> str:
    """Why a nested acquire failed: the lock refused its own holder (it is not reentrant)."""
    process, invoked, at, held_since = min(refused, key=lambda r: r[2])
    more = f" ({len(refused)} nested acquires were refused in all)" if len(refused) > 1 else ""
    return (
        f"liveness: {process}'s nested acquire, invoked at {clock.at(invoked)} while {process} "
        f"held the lock (since {clock.at(held_since)}), was refused by its own holder at "
        f"{clock.at(at)}: the lock is not reentrant, so a holder that acquires again waits on "
        f"itself (self-deadlock) until its own lease runs out{more}."
    )


def _previous(hold: Hold | None, timeline: Timeline, clock: Clock) -> str:
    if hold is None:
        return "nobody had held it before"
    ended = f"the last holder {hold.process}"
    if hold.ended_by == "crash":
        pause = _last_pause(hold.process, hold.start, hold.end, timeline)
        return f"{ended} crashed at {clock.at(hold.end)}{pause}"
    outcome = {"ok": "returned true", "fail": "returned false", "info": "was indeterminate"}
    return (
        f"{ended} released it at {clock.at(hold.end)} (the release "
        f"{outcome.get(hold.released or '', 'never completed')})"
    )


def _stalled_at(process: str, lo: int, hi: int, timeline: Timeline) -> str:
    """", stalled at pause-point X": the last pause point ``process`` reached in [lo, hi]
    (an operation in flight then), or nothing."""
    points = timeline.pauses_of(process, lo, hi)
    return f", stalled at pause-point {points[-1].command}" if points else ""


def _last_pause(process: str, lo: int, hi: int, timeline: Timeline) -> str:
    points = timeline.pauses_of(process, lo, hi)
    if not points:
        return ""
    return f" right after reaching pause-point {points[-1].command} ({points[-1].action})"


def lost_writes(lost: list[LostWrite], read_at: int, overlaps: list[Overlap],
                timeline: Timeline, clock: Clock) -> str:
    """Which acknowledged writes vanished from the final read (taken at ``read_at``), and
    what their writer was doing at the time."""
    writers = {write.process for write in lost}
    holds: dict[str, list[Hold]] = defaultdict(list)
    for hold in timeline.holds:
        if hold.process in writers:
            holds[hold.process].append(hold)
    listed = [
        f"{w.op} (by {w.process}, acknowledged at {clock.at(w.acked)}"
        f"{_writer_state(w, holds[w.process], overlaps, clock)})"
        for w in lost[:MAX_LISTED]
    ]
    more = f" and {len(lost) - MAX_LISTED} more" if len(lost) > MAX_LISTED else ""
    count = "1 acknowledged write is" if len(lost) == 1 else f"{len(lost)} acknowledged writes are"
    return (
        f"data: {count} missing from the final read at {clock.at(read_at)}: "
        f"{', '.join(listed)}{more}."
    )


def _writer_state(write: LostWrite, holds: list[Hold], overlaps: list[Overlap],
                  clock: Clock) -> str:
    index = bisect_right([hold.start for hold in holds], write.acked) - 1
    hold = holds[index] if index >= 0 else None
    if hold is None or hold.end <= write.acked:
        return f", while {write.process} held no lock"
    others = sorted({
        (ov.second if ov.first is hold else ov.first).process
        for ov in overlaps
        if (ov.first is hold or ov.second is hold) and ov.start <= write.acked < ov.end
    })
    if others:
        return f", while {', '.join(others)} held the lock too"
    lapsed = hold.lapsed_before(write.acked)
    if lapsed is not None:
        return f", after {write.process}'s lease expired at {clock.at(lapsed)}"
    return ""


def _faults(timeline: Timeline, lo: int, hi: int, clock: Clock) -> list[str]:
    faults = timeline.faults_during(lo, hi)
    if not faults:
        return []
    return ["Faults active: " + "; ".join(_fault(fault, clock) for fault in faults) + "."]


def _fault(fault: FaultSpan, clock: Clock) -> str:
    target = fault.target
    if isinstance(target, dict):
        target = " ".join(str(v) if isinstance(v, str) else ",".join(map(str, v))
                          for v in target.values())
    elif isinstance(target, list):
        target = ",".join(map(str, target))
    on = f" on {target}" if target else ""
    params = ""
    if isinstance(fault.params, dict) and fault.params:
        params = " " + " ".join(f"{k}={v}" for k, v in fault.params.items())
    until = "the end" if fault.stop >= NEVER else clock.at(fault.stop)
    return f"{fault.name} {fault.id}{on}{params} ({clock.at(fault.start)} to {until})"


def _pause(point: PauseReached, clock: Clock) -> str:
    return f"pause-point {point.command} ({point.action}) at {clock.at(point.t)}"
