"""Whether a run exercised the lock at all: the conditions behind an ``inconclusive`` verdict, and
the bugs in the lock it ran into.

A CI gate reads exit status 0 as "this lock survived". A run whose lock never started, was
never acquired, or never went through two whole cycles found no violation because it tested
nothing, and must not say ``ok``. The conditions (docs/history-format.md, "Inconclusive runs") are
judged only on a finished run — the history has the harness's ``end`` event: a history cut
short, or one a test builds by hand, is judged on its violations alone — and only when no
violation was found (a violation is evidence, whatever else went wrong):

1. **the lock never started**: every client of the start event (every client process, when it
   names none) wrote ``lock-unusable`` — its factory failed;
2. **the lock was never acquired**: no acquire ``ok`` in the whole run;
3. **fewer than ``MIN_LOCK_CYCLES`` lock cycles**: an acquire ``ok`` followed by the same
   client's release that did not raise (its ``ok`` or ``fail``). Two grants are the fewest
   that can test mutual exclusion.

Only the first of these that holds is reported: it is the one that explains the others. With
enough cycles, every condition of the second kind that holds is reported, one line each
(``untested``):

4. **a fault the run asked for did nothing to the lock** (``chaos.checker.coverage``: a pause
   point never reached, a pause that met no holder…), with what would reach it;
5. **a capability the run asked for was never used**: asked to extend during work, and the
   clients' locks have ``extend``, but no extend ran; the lock declares background renewals,
   but none was recorded;
6. **a mode or a count the lock grants was never granted** (a lock that is not a mutex).

The conditions of the second kind are judged on a finished run with violations too: a violation
is evidence, so they never make its verdict inconclusive, but a run whose violations all
fall below the gate (``--fail-on``) vouches for the lock only as far as it tested it, and
does not pass while something it asked for had no effect (``exit_status``).
"""

from __future__ import annotations

from chaos.checker.coverage import FaultCoverage
from chaos.checker.explain import Clock
from chaos.checker.timeline import FaultSpan, Raised, Timeline
from chaos.checker.verdict import LockErrors
from chaos.history import (
    ACQUIRE,
    CRASH,
    DISTURBS_NETWORK,
    EXTEND,
    FAIL,
    INFO,
    OK,
    RELEASE,
    RENEW,
    SHARED,
)

MIN_LOCK_CYCLES = 2
# Commands a lock sends only when a reply said the server lacks something, never its act:
# ``SCRIPT`` (LOAD) after a ``NOSCRIPT`` — a script's first run on a fresh node (before any
# fault's first turn), or its first after the node's cache was emptied.
RELOADS = frozenset({"SCRIPT"})


def lock_cycles(timeline: Timeline) -> int:
    """Holds that ended with their client's release invoke, the release not raising."""
    return sum(hold.ended_by == RELEASE and hold.released != INFO for hold in timeline.holds)


def lock_errors(timeline: Timeline, clock: Clock) -> list[LockErrors]:
    """The bugs in the lock, per operation: how many, and the first with its traceback."""
    return [
        LockErrors(op=op, count=bugs.count, error=bugs.first.error, process=bugs.first.process,
                   at_s=clock.seconds(bugs.first.t), traceback=bugs.first.traceback)
        for op in (ACQUIRE, RELEASE, EXTEND)
        if (bugs := timeline.lock_bugs.get(op)) is not None
    ]


def unusable(timeline: Timeline) -> str | None:
    """Condition 1: the sentence when the lock's factory failed in every client, else None."""
    if not timeline.unusable:
        return None
    failed = {raised.process for raised in timeline.unusable}
    clients = timeline.params.get("clients")
    if isinstance(clients, list) and clients:
        every = failed >= set(map(str, clients))
    else:
        every = not _completed(timeline, ACQUIRE)
    if not every:
        return None
    first = min(timeline.unusable, key=lambda raised: raised.t)
    return f"the lock factory failed in every client: {first.error}"


def inconclusive_reasons(timeline: Timeline, clock: Clock,
                         covered: dict[str, FaultCoverage]) -> list[str]:
    """Why the run did not exercise the lock (empty: it did). The caller asks only about a
    finished run without violations."""
    never_started = unusable(timeline)
    if never_started is not None:
        return [never_started]
    if not _outcome(timeline, OK, ACQUIRE):
        return [f"the lock was never acquired: {_why_never_acquired(timeline, clock)}"]
    cycles = lock_cycles(timeline)
    if cycles >= MIN_LOCK_CYCLES:
        return untested(timeline, covered)
    if not _outcome(timeline, OK, RELEASE) and not _outcome(timeline, FAIL, RELEASE) and (
        first := timeline.raised.get(RELEASE)
    ):
        raised = _outcome(timeline, INFO, RELEASE)
        return [f"no lock cycle completed: {_every('release', raised, timeline, first, clock)}"]
    crashes = _outcome(timeline, INFO, CRASH)
    if not cycles and crashes:  # a lock that kills its client between acquire and release
        holds = len(timeline.holds)
        return [f"no lock cycle completed in {holds} holds: {_crashed(timeline, crashes, clock)}"]
    plural = "" if cycles == 1 else "s"
    return [
        f"only {cycles} lock cycle{plural} completed (an acquire, then a release that "
        f"returned) in {len(timeline.holds)} holds: at least {MIN_LOCK_CYCLES} are needed to "
        "test mutual exclusion"
    ]


def untested(timeline: Timeline, covered: dict[str, FaultCoverage]) -> list[str]:
    """What the run asked of the lock and the lock never met (conditions 4–6), judged with the
    run's fault ``covered`` (``chaos.checker.coverage``, computed once by the caller): a fault
    without effect, a capability never used, a mode or count never granted (empty: none)."""
    return (_faults_that_missed(timeline, covered) + _capabilities_unused(timeline)
            + _sharing_untested(timeline))


def _faults_that_missed(timeline: Timeline, covered: dict[str, FaultCoverage]) -> list[str]:
    """A fault the run asked for (the harness start event's ``faults``) that did nothing to
    the lock (``chaos.checker.coverage``): the lock was not tested against it, whatever else
    the run shows. Each reason says why, and what would reach the lock."""
    asked = timeline.params.get("faults")
    if not isinstance(asked, list):
        return []
    reasons = []
    for name in dict.fromkeys(str(fault) for fault in asked):
        entry = covered.get(name)
        if entry is None:
            reasons.append(f"{name} never fired: the run ended before its turn (a longer "
                           "--duration gives every fault of the schedule its chance)")
        elif not entry.effective:
            first = next(fault for fault in timeline.faults if fault.name == name)
            reasons.append(no_effect(first, entry.fired, timeline))
    return reasons


def no_effect(fault: FaultSpan, fired: int, timeline: Timeline) -> str:
    """Why ``fault`` (its first firing of ``fired``) did nothing, in the terms of its
    evidence, and what would reach the lock."""
    times = "once" if fired == 1 else f"{fired} times"
    params = fault.params if isinstance(fault.params, dict) else {}
    command = params.get("command")
    if isinstance(command, str) and command != "*":  # it armed a pause point
        return _point_not_reached(fault.name, command, params.get("op"), timeline)
    if fault.reported and DISTURBS_NETWORK in fault.effects:
        return (f"{fault.name} fired {times} and did nothing to the lock: no client it hit "
                "sent a command over a link it disturbed while it was on (a longer --duration "
                "gives it the chance; a holder that works all the time it is on sends nothing)")
    if fault.reported:
        sends = "; ".join(f"{op} {', '.join(commands)}"
                          for op, commands in timeline.surface.items())
        return (f"{fault.name} fired {times} and did nothing to the lock: no firing met a "
                "client at the lock (a longer --duration or more --clients give it the chance"
                + (f"; or it needs what this lock does not do — it sends {sends}" if sends else "")
                + ")")
    target = "its target" if fault.aims_at_clients else "any client"
    return (f"{fault.name} never met the lock: it fired {times}, never while {target} held it "
            "or was acquiring it (a longer --duration or --work-ms widens the window)")


def _point_not_reached(name: str, command: str, op: object, timeline: Timeline) -> str:
    """"client-pause-at:command=DEL never reached: this lock's release sends EVAL; try
    command=EVAL" — from the commands the clients recorded (the lock's surface)."""
    said = f"{name}:command={command} never reached"
    ops = [op] if isinstance(op, str) else list(timeline.surface)
    every = [c for o in ops for c in timeline.surface.get(o, [])]
    where = f"this lock's {op}" if isinstance(op, str) else "this lock"
    if command in RELOADS and command in every:
        return (f"{said} while armed: {where} sends it only after a NOSCRIPT reply, when a "
                "node's script cache is empty (a restart, a failover, SCRIPT FLUSH): a fault "
                "that empties it after the point is armed reaches it (--faults-in-order)")
    if command in every:
        return (f"{said} while armed: {where} sends it, but never while the point was armed "
                "(a longer --duration gives it more chances)")
    sent = [c for c in every if c != command]
    if not sent:
        return f"{said}: {where} sent no command in this run"
    return f"{said}: {where} sends {', '.join(sent)}; try command={acts(sent)[-1]}"


def acts(commands: list[str]) -> list[str]:
    """``commands`` without those sent only on demand (``RELOADS``), unless nothing else is
    left: the commands an operation sends every time, its act the last of them."""
    return [c for c in commands if c not in RELOADS] or commands


def _capabilities_unused(timeline: Timeline) -> list[str]:
    """What the run asked the lock to do and it never did: extend during the work (its
    clients' locks have ``extend``), renew in the background (the lock declares ``renews``)."""
    params, reasons = timeline.params, []
    ttl_ms, work_ms = params.get("ttl_ms"), params.get("work_ms")
    if (params.get("extend_during_work") is True and timeline.can_extend
            and not _completed(timeline, EXTEND)):
        reasons.append(f"the run asked to extend during work, but no extend ran in "
                       f"{len(timeline.holds)} holds (work of {work_ms} ms): a --work-ms above "
                       "0 lets the holder extend")
    if params.get("renews") is True and not _completed(timeline, RENEW):
        reasons.append(f"the lock renews its lease in the background, but no renewal was "
                       f"recorded in {len(timeline.holds)} holds (work of {work_ms} ms, TTL "
                       f"{ttl_ms} ms): a --work-ms of at least the TTL lets its watchdog renew")
    return reasons


def _sharing_untested(timeline: Timeline) -> list[str]:
    """What a lock that is not a mutex grants and the run never saw it grant: one of its modes,
    or a semaphore's permits to more than one holder at once (its count was never tested)."""
    if timeline.mutex:
        return []
    holds = timeline.holds
    reasons = [
        f"the lock grants {mode} holds, but none was granted in {len(holds)} holds"
        for mode in timeline.modes if not any(hold.mode == mode for hold in holds)
    ]
    capacity = timeline.capacity
    if capacity is not None and capacity > 1 and SHARED in timeline.modes:
        edges = sorted([(hold.start, hold.permits) for hold in holds if hold.mode == SHARED]
                       + [(hold.end, -hold.permits) for hold in holds if hold.mode == SHARED])
        held = most = 0
        for _, change in edges:
            held += change
            most = max(most, held)
        if most <= 1:
            reasons.append(f"the lock has {capacity} permits, but its holds never took more "
                           f"than {most} at once: its count was not tested (more --clients)")
    return reasons


def _why_never_acquired(timeline: Timeline, clock: Clock) -> str:
    refused = _outcome(timeline, FAIL, ACQUIRE)
    raised = _outcome(timeline, INFO, ACQUIRE)
    first = timeline.raised.get(ACQUIRE)
    if raised and not refused and first is not None:
        return _every("acquire", raised, timeline, first, clock)
    if raised and first is not None:
        return (f"{refused} attempts were refused and {raised} raised (the first: "
                f"{_first(first, clock)})")
    if refused:
        return f"all {refused} attempts were refused: the key was never free"
    crashes = _outcome(timeline, INFO, CRASH)
    why = "no client completed an acquire"
    return f"{why}: {_crashed(timeline, crashes, clock)}" if crashes else why


def _crashed(timeline: Timeline, crashes: int, clock: Clock) -> str:
    """"client processes crashed 40 times (ConnectionError: …, c2 at 0.100 s)"."""
    said = f" ({_first(timeline.crash_error, clock)})" if timeline.crash_error else ""
    return f"client processes crashed {crashes} times{said}"


def _every(op: str, count: int, timeline: Timeline, first: Raised, clock: Clock) -> str:
    """"every acquire raised RuntimeError: boom (c1, first at 0.010 s)", or with several
    types of error, how many and the first."""
    if len(timeline.raised_types.get(op, ())) == 1:
        return f"every {op} raised {first.error} ({first.process}, first at {clock.at(first.t)})"
    return f"every {op} raised, {count} times (the first: {_first(first, clock)})"


def _first(raised: Raised, clock: Clock) -> str:
    return f"{raised.error}, {raised.process} at {clock.at(raised.t)}"


def _outcome(timeline: Timeline, typ: str, f: str) -> int:
    return timeline.outcomes.get(typ, {}).get(f, 0)


def _completed(timeline: Timeline, f: str) -> int:
    return sum(_outcome(timeline, typ, f) for typ in (OK, FAIL, INFO))
