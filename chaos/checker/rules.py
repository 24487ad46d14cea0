"""The checker's rules: each finds one kind of wrong in a timeline, makes each finding a
``Violation`` and explains it; ``RULES`` lists them, and ``judge`` applies each in turn.

A rule is data (``Rule``): its ``name``, the violation ``kinds`` it can produce, a one-line
``summary`` (``lockchaos list --rules``) and ``check``, a function from the ``Case`` being
judged to its violations. A rule that cannot judge a history (it lacks what the rule reads: a
TTL, a final read) raises ``NotJudged``, whose sentence becomes a note of the verdict; any
other exception is that rule's error, reported as such (``Verdict.rule_errors``), never a
crash of the verdict — Jepsen's ``checker/compose`` with ``check-safe`` around each checker.

Adding a rule: its finder (a module of its own when it is more than a few lines, as those
below are) and its explanation, one ``check`` function here that makes ``Violation``s of
them, one ``Rule`` in ``RULES``, and a test. ``RULES``' order is the order in which
violations of equal severity and start are listed, so a new rule goes at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from chaos.checker import explain
from chaos.checker.data import LostWrite, lost_writes
from chaos.checker.explain import Clock
from chaos.checker.fairness import find_overtaken
from chaos.checker.holds import NEVER
from chaos.checker.leaks import Leak, find_leaks
from chaos.checker.liveness import Outage, find_outages, gave_up_unheld, wedged
from chaos.checker.overlaps import Overlap, find_overlaps
from chaos.checker.permits import Excess, find_excesses
from chaos.checker.renewals import DeadWatchdog, Lapse, find_dead_watchdogs, find_lapses
from chaos.checker.timeline import Timeline
from chaos.checker.verdict import WEDGED, Violation


class NotJudged(Exception):
    """A rule could not judge this history; the message (one sentence) says why, and becomes
    a note of the verdict (once, however many rules raise it)."""


class Case:
    """What the rules judge: the timeline, the clock its times are told in, and what more
    than one rule (or the verdict) reads, found once."""

    def __init__(self, timeline: Timeline, liveness_factor: float) -> None:
        self.timeline = timeline
        self.clock = Clock(timeline)
        self.liveness_factor = liveness_factor

    @cached_property
    def overlaps(self) -> list[Overlap]:
        """Every pair of holds that excluded each other and shared an instant."""
        return find_overlaps(self.timeline.holds)

    @property
    def ttl_ns(self) -> int:
        """The run's TTL (the harness start event's ``ttl_ms``); ``NotJudged`` without one."""
        if self.timeline.ttl_ns is None:
            raise NotJudged("the start event has no ttl_ms: liveness was not judged")
        return self.timeline.ttl_ns

    @property
    def unavailable_ns(self) -> float:
        """How long the lock may go without a holder before it is a liveness violation."""
        return self.liveness_factor * self.ttl_ns

    @property
    def final_read(self) -> tuple[int, list[str]]:
        """When the resource was read at the end, and the op ids it held; ``NotJudged``
        without a final read."""
        if self.timeline.final_read is None:
            raise NotJudged("the history has no final read: lost writes were not judged")
        return self.timeline.final_read

    @cached_property
    def lost(self) -> list[LostWrite]:
        """The acknowledged writes the final read did not find."""
        return lost_writes(self.timeline, *self.final_read)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the checker (see the module docstring)."""

    name: str
    kinds: tuple[str, ...]  # the violation kinds its violations may have
    summary: str
    check: Callable[[Case], list[Violation]]


def _faults(case: Case, lo: int, hi: int) -> list[str]:
    """The ids of the faults active at some instant of [lo, hi]."""
    return [fault.id for fault in case.timeline.faults_during(lo, hi)]


def _deadline(t: int, clock: Clock) -> float | None:
    return None if t >= NEVER else clock.seconds(t)


# -- mutual exclusion ---------------------------------------------------------------------


def _overlaps(case: Case) -> list[Violation]:
    return [_overlap(ov, case) for ov in case.overlaps]


def _overlap(ov: Overlap, case: Case) -> Violation:
    clock = case.clock
    cause, text = explain.overlap(ov, case.timeline, clock)
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
        faults=_faults(case, a.start, ov.end),
    )


def _excesses(case: Case) -> list[Violation]:
    timeline = case.timeline
    if timeline.mutex or timeline.capacity is None:  # a mutex's are all overlaps
        return []
    return [_excess(ex, case) for ex in find_excesses(timeline.holds, timeline.capacity)]


def _excess(ex: Excess, case: Case) -> Violation:
    clock = case.clock
    cause, text = explain.excess(ex, case.timeline, clock)
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
        faults=_faults(case, ex.holds[0].start, ex.end),
    )


NOT_RENEWED = "not-renewed"  # the cause of a renewing lock's lapse (chaos.checker.renewals)


def _lapsed(case: Case) -> list[Violation]:
    """One hard violation per client whose renewing lock let a lease lapse while it ran:
    the lock broke its own promise (chaos.checker.renewals)."""
    by_process: dict[str, list[Lapse]] = {}
    for lapse in find_lapses(case.timeline):
        by_process.setdefault(lapse.process, []).append(lapse)
    clock = case.clock
    return [
        Violation(
            kind="hard",
            processes=[process],
            start_s=clock.seconds(found[0].deadline),
            end_s=clock.seconds(found[0].until),
            explanation=explain.lapses(found, clock),
            cause=NOT_RENEWED,
            expires_s={process: clock.seconds(found[0].deadline)},
            faults=_faults(case, found[0].deadline, found[0].until),
        )
        for process, found in by_process.items()
    ]


DEAD_WATCHDOG = "dead-watchdog"  # the cause of a watchdog that stopped for good after a fault


def _dead_watchdogs(case: Case) -> list[Violation]:
    """One hard violation per client whose renewing lock stopped renewing for good once a
    fault (or a pause point) that excused its lapse was over, while it ran on with its links
    up (chaos.checker.renewals)."""
    by_process: dict[str, list[DeadWatchdog]] = {}
    for dead in find_dead_watchdogs(case.timeline):
        by_process.setdefault(dead.process, []).append(dead)
    clock = case.clock
    violations = []
    for process, found in by_process.items():
        lapse = found[0].lapse
        start = max(lapse.deadline, found[0].healed)  # from then on nothing excused it
        violations.append(Violation(
            kind="hard",
            processes=[process],
            start_s=clock.seconds(start),
            end_s=clock.seconds(lapse.until),
            explanation=explain.dead_watchdogs(found, clock),
            cause=DEAD_WATCHDOG,
            expires_s={process: clock.seconds(lapse.deadline)},
            faults=_faults(case, lapse.since, lapse.until),
        ))
    return violations


# -- liveness -----------------------------------------------------------------------------


def _outages(case: Case) -> list[Violation]:
    return [_outage(out, case) for out in find_outages(case.timeline, case.unavailable_ns)]


def _outage(out: Outage, case: Case) -> Violation:
    """An outage; one that lasted to the end of the run, far past the TTL, is a lock wedged
    for good (``cause: wedged``), which fails every gate."""
    clock = case.clock
    found = wedged(out, case.timeline, case.ttl_ns)
    return Violation(
        kind="liveness",
        processes=[out.previous.process] if out.previous else [],
        start_s=clock.seconds(out.start),
        end_s=clock.seconds(out.end),
        explanation=explain.outage(out, case.timeline, clock, case.ttl_ns, found),
        cause=WEDGED if found else None,
        faults=_faults(case, out.gap[0], out.end),
        failed_acquires=out.failures,
    )


LEAKED = "leaked-permits"  # the cause of a semaphore short of permits (chaos.checker.leaks)


def _leaks(case: Case) -> list[Violation]:
    timeline = case.timeline
    if timeline.mutex or timeline.capacity is None:
        return []
    found = find_leaks(timeline, timeline.capacity, case.unavailable_ns)
    return [_leak(leak, case) for leak in found]


def _leak(leak: Leak, case: Case) -> Violation:
    clock = case.clock
    return Violation(
        kind="liveness",
        processes=sorted({hold.process for hold in leak.lost[-explain.MAX_LISTED:]}),
        start_s=clock.seconds(leak.start),
        end_s=clock.seconds(leak.end),
        explanation=explain.leak(leak, case.timeline, clock, case.ttl_ns),
        cause=LEAKED,
        faults=_faults(case, leak.start, leak.end),
        failed_acquires=leak.failures,
    )


def _self_deadlock(case: Case) -> list[Violation]:
    """Nested acquires refused by their own holder: one liveness violation for all of them
    (a thread that waited for it would wait on itself until its own lease ran out)."""
    refused = case.timeline.refused_own
    if not refused:
        return []
    first = min(refused, key=lambda r: r[2])
    clock = case.clock
    return [Violation(
        kind="liveness",
        processes=sorted({r[0] for r in refused}),
        start_s=clock.seconds(first[3]),
        end_s=clock.seconds(first[2]),
        explanation=explain.refused_own(refused, clock),
        cause="self-deadlock",
        faults=_faults(case, first[3], first[2]),
        failed_acquires=len(refused),
    )]


def _overtaken(case: Case) -> list[Violation]:
    """Grants out of the order of waiting, in a lock that claims to be fair: one violation
    for all of them, from the first overtaken waiter's request to the grant that passed it."""
    found = find_overtaken(case.timeline) if case.timeline.fair else None
    if found is None:
        return []
    waiter, by = found.waiter, found.by
    granted = by.granted if by.granted is not None else by.until
    clock = case.clock
    return [Violation(
        kind="fairness",
        processes=[waiter.process, by.process],
        start_s=clock.seconds(waiter.first_invoked),
        end_s=clock.seconds(granted),
        explanation=explain.overtaken(found, clock),
        cause="overtaken",
        faults=_faults(case, waiter.first_invoked, granted),
    )]


def _gave_up(case: Case) -> list[Violation]:
    """Waiters that gave up while nobody alive held the lock: lost availability (a liveness
    violation), never a breach of mutual exclusion."""
    gave_up = gave_up_unheld(case.timeline)
    if gave_up is None:
        return []
    clock = case.clock
    return [Violation(
        kind="liveness",
        processes=[gave_up.process],
        start_s=clock.seconds(gave_up.invoked),
        end_s=clock.seconds(gave_up.failed),
        explanation=explain.gave_up(gave_up, case.timeline, clock),
        cause="gave-up",
        faults=_faults(case, gave_up.invoked, gave_up.failed),
        failed_acquires=gave_up.count,
    )]


# -- data ---------------------------------------------------------------------------------


def _lost(case: Case) -> list[Violation]:
    lost = case.lost
    if not lost:
        return []
    timeline, clock = case.timeline, case.clock
    read_at = case.final_read[0]
    return [Violation(
        kind="data",
        processes=sorted({write.process for write in lost}),
        start_s=clock.seconds(lost[0].acked),
        end_s=clock.seconds(read_at),
        explanation=explain.lost_writes(lost, read_at, case.overlaps, timeline, clock),
        op_ids=[write.op for write in lost],
    )]


LOST_WRITES = Rule(
    "lost-writes", ("data",),
    "acknowledged writes missing from the shared resource at the final read",
    _lost,
)

# Every rule, in the order ``judge`` applies them (see the module docstring).
RULES: tuple[Rule, ...] = (
    Rule("overlap", ("hard", "soft"),
         "two clients held the lock at once, one of them exclusively: hard when both leases "
         "were valid at some instant, else soft",
         _overlaps),
    Rule("excess-permits", ("hard", "soft"),
         "a semaphore's holders held more permits than its capacity: hard when valid leases "
         "alone did, else soft",
         _excesses),
    Rule(NOT_RENEWED, ("hard",),
         "a lock that renews its leases let one lapse while its holder ran and nothing "
         "excused it",
         _lapsed),
    Rule("outage", ("liveness",),
         "nobody could take the lock for longer than the liveness factor × TTL although "
         "nobody alive held it (to the run's end: wedged, failing every gate)",
         _outages),
    Rule(LEAKED, ("liveness",),
         "a semaphore stayed short of its permits for longer than the liveness factor × TTL",
         _leaks),
    Rule("self-deadlock", ("liveness",),
         "a nested acquire was refused by the lock its own client held",
         _self_deadlock),
    Rule("overtaken", ("fairness",),
         "a lock that claims to be fair granted a client ahead of one already waiting",
         _overtaken),
    Rule("gave-up", ("liveness",),
         "a waiter gave up while nobody alive held the lock",
         _gave_up),
    LOST_WRITES,
    Rule(DEAD_WATCHDOG, ("hard",),
         "a lock that renews its leases never renewed again once a fault healed, while its "
         "holder ran on with its links up",
         _dead_watchdogs),
)
