"""From a timeline to a verdict: run every analysis, explain every finding, count."""

from __future__ import annotations

from chaos.checker import exercised, explain
from chaos.checker.coverage import coverage
from chaos.checker.data import LostWrite, lost_writes
from chaos.checker.explain import Clock
from chaos.checker.fairness import Overtaken, find_overtaken
from chaos.checker.holds import NEVER, REACQUIRE
from chaos.checker.leaks import Leak, find_leaks
from chaos.checker.liveness import GaveUp, Outage, find_outages, gave_up_unheld
from chaos.checker.overlaps import Overlap, find_overlaps
from chaos.checker.permits import Excess, find_excesses
from chaos.checker.renewals import Lapse, find_lapses
from chaos.checker.timeline import Timeline
from chaos.checker.verdict import INCONCLUSIVE, RANK, VIOLATION_KINDS, Verdict, Violation
from chaos.history import (
    ACQUIRE,
    CRASH,
    EXTEND,
    FAIL,
    INFO,
    OK,
    PAUSE_POINT,
    READ,
    RELEASE,
    RENEW,
    WRITE,
)


def judge(timeline: Timeline, *, liveness_factor: float, notes: list[str]) -> Verdict:
    """The verdict on ``timeline``; ``notes`` (what the reader had to say) are kept and
    extended with what could not be judged."""
    clock = Clock(timeline)
    overlaps = find_overlaps(timeline.holds)
    violations = [_overlap(ov, timeline, clock) for ov in overlaps]
    capacity = timeline.capacity
    if not timeline.mutex and capacity is not None:  # a mutex's are all overlaps
        violations += [_excess(ex, timeline, clock)
                       for ex in find_excesses(timeline.holds, capacity)]
    violations += _lapsed(find_lapses(timeline), timeline, clock)

    ttl_ns = timeline.ttl_ns
    if ttl_ns is None:
        notes.append("the start event has no ttl_ms: liveness was not judged")
    else:
        threshold = liveness_factor * ttl_ns
        violations += [_outage(o, timeline, clock, ttl_ns)
                       for o in find_outages(timeline, threshold)]
        if not timeline.mutex and capacity is not None:
            violations += [_leak(leak, timeline, clock, ttl_ns)
                           for leak in find_leaks(timeline, capacity, threshold)]

    if timeline.refused_own:
        violations.append(_self_deadlock(timeline, clock))
    if timeline.fair:
        overtaken = find_overtaken(timeline)
        if overtaken is not None:
            violations.append(_overtaken(overtaken, timeline, clock))
    gave_up = gave_up_unheld(timeline)
    if gave_up is not None:
        violations.append(_gave_up(gave_up, timeline, clock))

    lost = None
    if timeline.final_read is None:
        notes.append("the history has no final read: lost writes were not judged")
    else:
        read_at, present = timeline.final_read
        lost = lost_writes(timeline, read_at, present)
        if lost:
            violations.append(_lost(lost, read_at, overlaps, timeline, clock))
    if not timeline.has_start_event:
        notes.append("no harness start event: times are counted from the first event")

    # Whether the run exercised the lock: only a finished run can say. Beside violations,
    # only what it asked for and never met counts (the violations show the lock was used).
    covered = coverage(timeline)
    reasons: list[str] = []
    if timeline.has_end_event:
        reasons = (exercised.untested(timeline, covered) if violations
                   else exercised.inconclusive_reasons(timeline, clock, covered))
    elif not violations and timeline.has_start_event:
        notes.append("the history has no end event (a run cut short?): whether it exercised "
                     "the lock was not judged")

    violations.sort(key=lambda v: (-RANK[v.kind], v.start_s))
    by_kind = {kind: sum(v.kind == kind for v in violations) for kind in VIOLATION_KINDS}
    hard_from = [v.both_valid_from_s for v in violations if v.both_valid_from_s is not None]
    hard_from += [v.start_s for v in violations if v.cause == NOT_RENEWED]  # the lapse
    lock = timeline.params.get("lock")
    ttl_ms = timeline.params.get("ttl_ms")
    return Verdict(
        verdict=violations[0].kind if violations else INCONCLUSIVE if reasons else "ok",
        lock=lock if isinstance(lock, str) else None,
        ttl_ms=ttl_ms if isinstance(ttl_ms, int | float) else None,
        duration_s=clock.seconds(timeline.end),
        hard_violations=by_kind["hard"],
        soft_violations=by_kind["soft"],
        liveness_violations=by_kind["liveness"],
        lost_writes=None if lost is None else len(lost),
        lost_write_ids=None if lost is None else [w.op for w in lost],
        stale_writes_rejected=timeline.stale_rejected,
        first_hard_violation_s=min(hard_from, default=None),
        explanations=[v.explanation for v in violations],
        violations=violations,
        counts=_counts(timeline),
        notes=notes,
        lock_errors=exercised.lock_errors(timeline, clock),
        coverage=covered,
        inconclusive_reasons=reasons,
        lock_unusable=exercised.unusable(timeline) if reasons and not violations else None,
    )


def _overlap(ov: Overlap, timeline: Timeline, clock: Clock) -> Violation:
    cause, text = explain.overlap(ov, timeline, clock)
    a, b = ov.first, ov.second
    valid = ov.both_valid
    return Violation(
        kind="hard" if valid else "soft",
        processes=[a.process, b.process],
        start_s=clock.seconds(ov.start),
        end_s=clock.seconds(ov.end),
        explanation=text,
        cause=cause,
        expires_s={hold.process: _deadline(hold.deadline_at(ov.start), clock) for hold in (a, b)},
        both_valid_from_s=clock.seconds(valid[0]) if valid else None,
        both_valid_until_s=clock.seconds(valid[1]) if valid else None,
        faults=[fault.id for fault in timeline.faults_during(a.start, ov.end)],
    )


def _excess(ex: Excess, timeline: Timeline, clock: Clock) -> Violation:
    cause, text = explain.excess(ex, timeline, clock)
    valid = ex.valid
    return Violation(
        kind="hard" if valid else "soft",
        processes=sorted({hold.process for hold in ex.holds}),
        start_s=clock.seconds(ex.start),
        end_s=clock.seconds(ex.end),
        explanation=text,
        cause=cause,
        expires_s={hold.process: _deadline(hold.deadline_at(max(hold.start, ex.start)), clock)
                   for hold in ex.holds},
        both_valid_from_s=clock.seconds(valid[0]) if valid else None,
        both_valid_until_s=clock.seconds(valid[1]) if valid else None,
        faults=[fault.id for fault in timeline.faults_during(ex.holds[0].start, ex.end)],
    )


NOT_RENEWED = "not-renewed"  # the cause of a renewing lock's lapse (chaos.checker.renewals)


def _lapsed(lapses: list[Lapse], timeline: Timeline, clock: Clock) -> list[Violation]:
    """One hard violation per client whose renewing lock let a lease lapse while it ran:
    the lock broke its own promise (chaos.checker.renewals)."""
    by_process: dict[str, list[Lapse]] = {}
    for lapse in lapses:
        by_process.setdefault(lapse.process, []).append(lapse)
    return [
        Violation(
            kind="hard",
            processes=[process],
            start_s=clock.seconds(found[0].deadline),
            end_s=clock.seconds(found[0].until),
            explanation=explain.lapses(found, clock),
            cause=NOT_RENEWED,
            expires_s={process: clock.seconds(found[0].deadline)},
            faults=[f.id for f in timeline.faults_during(found[0].deadline, found[0].until)],
        )
        for process, found in by_process.items()
    ]


def _outage(out: Outage, timeline: Timeline, clock: Clock, ttl_ns: int) -> Violation:
    processes = [out.previous.process] if out.previous else []
    return Violation(
        kind="liveness",
        processes=processes,
        start_s=clock.seconds(out.start),
        end_s=clock.seconds(out.end),
        explanation=explain.outage(out, timeline, clock, ttl_ns),
        faults=[fault.id for fault in timeline.faults_during(out.gap[0], out.end)],
        failed_acquires=out.failures,
    )


def _leak(leak: Leak, timeline: Timeline, clock: Clock, ttl_ns: int) -> Violation:
    return Violation(
        kind="liveness",
        processes=sorted({hold.process for hold in leak.lost[-MAX_LOST:]}),
        start_s=clock.seconds(leak.start),
        end_s=clock.seconds(leak.end),
        explanation=explain.leak(leak, timeline, clock, ttl_ns),
        cause=LEAKED,
        faults=[fault.id for fault in timeline.faults_during(leak.start, leak.end)],
        failed_acquires=leak.failures,
    )


LEAKED = "leaked-permits"  # the cause of a semaphore short of permits (chaos.checker.leaks)
MAX_LOST = explain.MAX_LISTED


def _self_deadlock(timeline: Timeline, clock: Clock) -> Violation:
    """Nested acquires refused by their own holder: one liveness violation for all of them
    (a thread that waited for it would wait on itself until its own lease ran out)."""
    refused = timeline.refused_own
    first = min(refused, key=lambda r: r[2])
    return Violation(
        kind="liveness",
        processes=sorted({r[0] for r in refused}),
        start_s=clock.seconds(first[3]),
        end_s=clock.seconds(first[2]),
        explanation=explain.refused_own(refused, clock),
        cause="self-deadlock",
        faults=[fault.id for fault in timeline.faults_during(first[3], first[2])],
        failed_acquires=len(refused),
    )


def _overtaken(found: Overtaken, timeline: Timeline, clock: Clock) -> Violation:
    """Grants out of the order of waiting, in a lock that claims to be fair: one violation
    for all of them, from the first overtaken waiter's request to the grant that passed it."""
    waiter, by = found.waiter, found.by
    granted = by.granted if by.granted is not None else by.until
    return Violation(
        kind="fairness",
        processes=[waiter.process, by.process],
        start_s=clock.seconds(waiter.first_invoked),
        end_s=clock.seconds(granted),
        explanation=explain.overtaken(found, clock),
        cause="overtaken",
        faults=[f.id for f in timeline.faults_during(waiter.first_invoked, granted)],
    )


def _gave_up(gave_up: GaveUp, timeline: Timeline, clock: Clock) -> Violation:
    """Waiters that gave up while nobody alive held the lock: lost availability (a liveness
    violation), never a breach of mutual exclusion."""
    return Violation(
        kind="liveness",
        processes=[gave_up.process],
        start_s=clock.seconds(gave_up.invoked),
        end_s=clock.seconds(gave_up.failed),
        explanation=explain.gave_up(gave_up, timeline, clock),
        cause="gave-up",
        faults=[f.id for f in timeline.faults_during(gave_up.invoked, gave_up.failed)],
        failed_acquires=gave_up.count,
    )


def _lost(lost: list[LostWrite], read_at: int, overlaps: list[Overlap], timeline: Timeline,
          clock: Clock) -> Violation:
    return Violation(
        kind="data",
        processes=sorted({write.process for write in lost}),
        start_s=clock.seconds(lost[0].acked),
        end_s=clock.seconds(read_at),
        explanation=explain.lost_writes(lost, read_at, overlaps, timeline, clock),
        op_ids=[write.op for write in lost],
    )


def _deadline(t: int, clock: Clock) -> float | None:
    return None if t >= NEVER else clock.seconds(t)


def _counts(timeline: Timeline) -> dict[str, int]:
    """Events, and the outcomes of each client operation as ``<f>_<type>`` (``acquire_ok``…)."""
    outcomes = timeline.outcomes
    counts = {"events": timeline.events, "holds": len(timeline.holds)}
    for f in (ACQUIRE, RELEASE, EXTEND, RENEW, READ, WRITE):
        for typ in (OK, FAIL, INFO):
            counts[f"{f}_{typ}"] = outcomes.get(typ, {}).get(f, 0)
    counts["crashes"] = outcomes.get(INFO, {}).get(CRASH, 0)
    counts["pause_points"] = outcomes.get(INFO, {}).get(PAUSE_POINT, 0)
    counts["faults"] = len(timeline.faults)
    counts["lock_cycles"] = exercised.lock_cycles(timeline)
    # Acquires granted to a client that already held the lock: nested ones that reentered
    # (reentrancy; not one granted after its own lease ran out), and those it did not mark
    # nested (which ended its hold)
    counts["reacquired"] = sum(
        (hold.ended_by == REACQUIRE) + sum(level.reentered for level in hold.levels or ())
        for hold in timeline.holds)
    counts["lock_bugs"] = sum(bugs.count for bugs in timeline.lock_bugs.values())
    counts["lock_unusable"] = len({raised.process for raised in timeline.unusable})
    return counts
