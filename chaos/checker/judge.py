"""From a timeline to a verdict: apply every rule (``chaos.checker.rules``), each on its
own, then count."""

from __future__ import annotations

import traceback

import msgspec

from chaos.checker import exercised
from chaos.checker.coverage import coverage
from chaos.checker.holds import REACQUIRE
from chaos.checker.rules import (
    DEAD_WATCHDOG,
    LOST_WRITES,
    NOT_RENEWED,
    RULES,
    Case,
    NotJudged,
    Rule,
)
from chaos.checker.timeline import Timeline
from chaos.checker.verdict import (
    INCONCLUSIVE,
    RANK,
    VIOLATION_KINDS,
    RuleError,
    Verdict,
    Violation,
)
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

# The violations that show by themselves that the lock was used: two holds at once, or their
# writes to the resource interleaved.
EXCLUSION = frozenset({"hard", "data"})


def judge(timeline: Timeline, *, liveness_factor: float, notes: list[str],
          rules: tuple[Rule, ...] = RULES) -> Verdict:
    """The verdict of ``rules`` on ``timeline``; ``notes`` (what the reader had to say) are
    kept and extended with what could not be judged. A rule that raises is that rule's error
    (``Verdict.rule_errors``, and an inconclusive reason), never the verdict's. ``rules`` is
    every rule, unless a caller isolates some (each reads the history alone, never another
    rule's findings)."""
    case = Case(timeline, liveness_factor)
    clock = case.clock
    violations: list[Violation] = []
    judged: set[str] = set()
    errors: list[RuleError] = []
    for rule in rules:
        try:
            found = rule.check(case)
            if stray := sorted({v.kind for v in found} - set(rule.kinds)):
                raise ValueError(f"it found {' and '.join(stray)} violations, which it does "
                                 f"not declare ({', '.join(rule.kinds)})")
        except NotJudged as why:
            if str(why) not in notes:
                notes.append(str(why))
        except Exception as error:  # check-safe: one broken rule is not a broken verdict
            errors.append(RuleError(rule=rule.name, kinds=list(rule.kinds),
                                    error=f"{type(error).__name__}: {error}",
                                    traceback=traceback.format_exc()))
        else:
            violations += found
            judged.add(rule.name)
    if not timeline.has_start_event:
        notes.append("no harness start event: times are counted from the first event")

    # Whether the run exercised the lock: only a finished run can say. Beside a violation of
    # exclusion (hard, or data: two holds at once, or their writes, show the lock was used)
    # only what it asked for and never met counts; beside the others, whether it completed
    # lock cycles counts too: a lapsed lease in a run whose every release raised tested
    # nothing of the release, and a gate below hard must not pass it.
    covered = coverage(timeline)
    reasons: list[str] = []
    if timeline.has_end_event:
        reasons = (exercised.untested(timeline, covered)
                   if any(v.kind in EXCLUSION for v in violations)
                   else exercised.inconclusive_reasons(timeline, clock, covered))
    elif not violations and timeline.has_start_event:
        notes.append("the history has no end event (a run cut short?): whether it exercised "
                     "the lock was not judged")
    unusable = exercised.unusable(timeline) if reasons and not violations else None
    reasons = [error.reason for error in errors] + reasons

    violations.sort(key=lambda v: (-RANK[v.kind], v.start_s))
    by_kind = {kind: sum(v.kind == kind for v in violations) for kind in VIOLATION_KINDS}
    hard_from = [v.both_valid_from_s for v in violations if v.both_valid_from_s is not None]
    hard_from += [v.start_s for v in violations  # the lapse
                  if v.cause in (NOT_RENEWED, DEAD_WATCHDOG)]
    lost = case.lost if LOST_WRITES.name in judged else None
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
        lock_unusable=unusable,
        rule_errors=errors or msgspec.UNSET,
    )


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
