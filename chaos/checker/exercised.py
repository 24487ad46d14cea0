"""Whether a run exercised the lock at all: the rules behind an ``inconclusive`` verdict, and
the bugs in the lock it ran into.

A CI gate reads exit status 0 as "this lock survived". A run whose lock never started, was
never acquired, or never went through two whole cycles found no violation because it tested
nothing, and must not say ``ok``. The rules (docs/history-format.md, "Inconclusive runs") are
judged only on a finished run — the history has the harness's ``end`` event: a history cut
short, or one a test builds by hand, is judged on its violations alone — and only when no
violation was found (a violation is evidence, whatever else went wrong):

1. **the lock never started**: every client of the start event (every client process, when it
   names none) wrote ``lock-unusable`` — its factory failed;
2. **the lock was never acquired**: no acquire ``ok`` in the whole run;
3. **fewer than ``MIN_LOCK_CYCLES`` lock cycles**: an acquire ``ok`` followed by the same
   client's release that did not raise (its ``ok`` or ``fail``). Two grants are the fewest
   that can test mutual exclusion.

Only the first rule that holds is reported: it is the one that explains the others.
"""

from __future__ import annotations

from chaos.checker.coverage import coverage
from chaos.checker.explain import Clock
from chaos.checker.timeline import Raised, Timeline
from chaos.checker.verdict import LockErrors
from chaos.history import ACQUIRE, CRASH, EXTEND, FAIL, INFO, OK, RELEASE

MIN_LOCK_CYCLES = 2


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
    """Rule 1: the sentence when the lock's factory failed in every client, else None."""
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


def inconclusive_reasons(timeline: Timeline, clock: Clock) -> list[str]:
    """Why the run did not exercise the lock (empty: it did). The caller asks only about a
    finished run without violations."""
    never_started = unusable(timeline)
    if never_started is not None:
        return [never_started]
    if not _outcome(timeline, OK, ACQUIRE):
        return [f"the lock was never acquired: {_why_never_acquired(timeline, clock)}"]
    cycles = lock_cycles(timeline)
    if cycles >= MIN_LOCK_CYCLES:
        return _faults_that_missed(timeline)
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


def _faults_that_missed(timeline: Timeline) -> list[str]:
    """A fault the run asked for (the harness start event's ``faults``) that never hit a
    holder: the lock was not tested against it, whatever else the run shows."""
    asked = timeline.params.get("faults")
    if not isinstance(asked, list):
        return []
    covered = coverage(timeline)
    reasons = []
    for name in dict.fromkeys(str(fault) for fault in asked):
        entry = covered.get(name)
        if entry is None:
            reasons.append(f"{name} never fired: the run ended before its turn (a longer "
                           "--duration gives every fault of the schedule its chance)")
        elif not entry.hit_holder:
            times = "once" if entry.fired == 1 else f"{entry.fired} times"
            reasons.append(f"{name} never hit a holder: it fired {times}, never while its "
                           "target held the lock (a longer --duration or --work-ms widens "
                           "the window)")
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
