"""The checker on locks with shared holds: a semaphore's permits against its capacity, a
read-write lock's exclusive holds against every other; a brute-force oracle for both.

All times are whole milliseconds, so checking every whole millisecond is an exact (and
independent) oracle for "valid leases held more than the capacity at some instant".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_checker_support import History, at

from chaos.checker import Verdict
from chaos.history import EXCLUSIVE, SHARED

PROCESSES = ["c1", "c2", "c3", "c4", "c5"]
RW = [EXCLUSIVE, SHARED]


class SharedHistory(History):
    """A history whose start event declares a lock that is not a mutex."""

    def __init__(self, capacity: int | None, modes: list[str], ttl_ms: float = 1000) -> None:
        super().__init__(ttl_ms=None, start=False)
        self.add(0, "info", "harness", "start", value={
            "lock": "test-shared", "ttl_ms": ttl_ms, "clients": PROCESSES, "seed": 1,
            "capacity": capacity, "modes": modes, "fair": False})

    def take(self, p: str, ms: float, *, mode: str = SHARED, permits: int = 1,
             lease: float = 200, invoked: float | None = None) -> SharedHistory:
        """Granted at ``ms``, asked at ``invoked`` (default ``ms``); ``lease`` ms from the
        grant."""
        token = self.tokens[p] = f"{p}@{ms}"
        asked = ms if invoked is None else invoked
        self.add(asked, "invoke", p, "acquire", value={"mode": mode, "permits": permits})
        self.add(ms, "ok", p, "acquire", token=token, valid_until=at(ms + lease))
        return self


def test_valid_permits_over_the_capacity_are_hard_in_plain_words() -> None:
    h = SharedHistory(3, [SHARED])
    h.take("c1", 10).take("c2", 20, permits=2).take("c4", 50)
    h.release("c1", 100).release("c2", 110).release("c4", 120)
    verdict = h.check()
    assert verdict.verdict == "hard" and verdict.hard_violations == 1, verdict.explanations
    (v,) = verdict.violations
    assert v.explanation.startswith(
        "hard: c1, c2 and c4 held 4 permits of a 3-permit semaphore from 0.050 s to 0.100 s, "
        "their leases valid from 0.050 s to 0.100 s"), v.explanation
    assert "c2 acquired 2 permits at 0.020 s" in v.explanation
    assert v.processes == ["c1", "c2", "c4"] and v.both_valid_from_s == 0.05
    assert verdict.first_hard_violation_s == 0.05


def test_an_acquire_granted_after_one_it_was_under_way_across_is_named_a_race() -> None:
    """Redis in Action 6.3.1 with no fault: c1 read its clock first, c2's transaction
    arrived first and took the one permit, c1's ZADD ranked it ahead of c2 and it was
    granted too. The excess read "the lock granted c1 while the others' permits should
    still have been counted"."""
    h = SharedHistory(1, [SHARED])
    h.take("c2", 20, invoked=15).pause_point("c1", 12, "MULTI")
    h.take("c1", 30, invoked=10).release("c1", 100).release("c2", 110)
    v = h.check().violations[0]
    assert (v.kind, v.cause) == ("hard", "raced"), v.explanation
    assert ("c1's acquire, invoked at 0.010 s, stalled at pause-point MULTI, was still under "
            "way when c2 was granted at 0.020 s, and was granted too at 0.030 s: each counted "
            "itself within the 1 permit") in v.explanation
    # asked after c2 was granted: nothing raced, the lock counted wrong
    h = SharedHistory(1, [SHARED]).take("c2", 20, invoked=15).take("c1", 30, invoked=25)
    assert h.release("c1", 100).release("c2", 110).check().violations[0].cause == "unexplained"


def test_a_client_clock_moved_under_a_semaphore_holder_is_named_before_a_race() -> None:
    """The book semaphore times out holders by the acquiring client's clock: c1's, 800 ms
    ahead, timed out c2's live entry. That is the cause, though c1 also asked before c2's
    grant."""
    h = SharedHistory(1, [SHARED])
    h.fault("f1", "client-clock", 5, 900, target={"client": "c1"}, params={"skew_ms": 800})
    h.take("c2", 20, invoked=15).take("c1", 30, invoked=10)
    v = h.release("c1", 100).release("c2", 110).check().violations[0]
    assert v.cause == "client-clock", v.explanation
    assert "c1's clock ran 800 ms ahead (client-clock f1 from 0.005 s): it judged c2's permit " \
        "expired and took it" in v.explanation


def test_permits_within_the_capacity_are_no_violation() -> None:
    h = SharedHistory(3, [SHARED])
    h.take("c1", 10).take("c2", 20, permits=2).release("c1", 50)
    h.take("c4", 50).release("c2", 110).release("c4", 120)
    verdict = h.check()
    assert verdict.violations == [], verdict.explanations


def test_an_excess_made_of_a_lapsed_lease_is_soft_and_says_whose() -> None:
    h = SharedHistory(2, [SHARED])
    h.take("c1", 10, lease=30).take("c2", 20).take("c3", 60)
    h.release("c1", 100).release("c2", 110).release("c3", 120)
    verdict = h.check()
    assert verdict.verdict == "soft", verdict.explanations
    (v,) = verdict.violations
    assert v.explanation.startswith("soft: c1, c2 and c3 held 3 permits of a 2-permit semaphore "
                                    "from 0.060 s to 0.100 s, but never more than 2 within "
                                    "their leases."), v.explanation
    assert v.cause == "lease-expired" and "c1's lease expired at 0.040 s" in v.explanation


def test_a_writer_with_a_valid_reader_is_hard_and_readers_share() -> None:
    h = SharedHistory(None, RW)
    h.take("c1", 10).take("c2", 20)  # two readers: fine
    h.take("c3", 30, mode=EXCLUSIVE)
    h.release("c1", 80).release("c2", 90).release("c3", 100)
    verdict = h.check()
    assert verdict.hard_violations == 2 and verdict.soft_violations == 0, verdict.explanations
    texts = sorted(v.explanation for v in verdict.violations)
    assert texts[0].startswith("hard: c3 wrote (exclusive) while c1 read (shared) from 0.030 s "
                               "to 0.080 s, both leases valid from 0.030 s to 0.080 s."), texts
    assert texts[1].startswith("hard: c3 wrote (exclusive) while c2 read (shared) from")


def test_two_writers_are_named_as_writers() -> None:
    h = SharedHistory(None, RW)
    h.take("c1", 10, mode=EXCLUSIVE).take("c2", 20, mode=EXCLUSIVE)
    h.release("c1", 50).release("c2", 60)
    (v,) = h.check().violations
    assert re.match(r"hard: c1 and c2 both wrote \(exclusive\) from 0\.020 s", v.explanation)


def test_an_unbounded_capacity_is_never_exceeded() -> None:
    h = SharedHistory(None, RW)
    for i, p in enumerate(PROCESSES):
        h.take(p, 10 + i)
    for i, p in enumerate(PROCESSES):
        h.release(p, 100 + i)
    assert h.check().violations == []


# -- properties ------------------------------------------------------------------------------


@dataclass
class Plan:
    process: str
    start: int
    end: int
    lease: int
    mode: str
    permits: int

    def held_at(self, t: int) -> bool:
        return self.start <= t < self.end

    def valid_at(self, t: int) -> bool:
        return self.held_at(t) and t < self.start + self.lease


@st.composite
def schedules(draw: Any, modes: list[str], most_permits: int) -> list[Plan]:
    """Each process's holds one after the other; the processes' holds overlap at random."""
    plans = []
    for process in PROCESSES[: draw(st.integers(2, len(PROCESSES)))]:
        t = draw(st.integers(0, 40))
        for _ in range(draw(st.integers(0, 3))):
            start = t + draw(st.integers(0, 40))
            end = start + draw(st.integers(1, 80))
            mode = draw(st.sampled_from(modes))
            permits = 1 if mode == EXCLUSIVE else draw(st.integers(1, most_permits))
            plans.append(Plan(process, start, end, draw(st.integers(1, 120)), mode, permits))
            t = end
    return plans


def checked(plans: list[Plan], capacity: int | None, modes: list[str]) -> Verdict:
    h = SharedHistory(capacity, modes)
    edges = sorted([(p.start, 1, p) for p in plans] + [(p.end, 0, p) for p in plans],
                   key=lambda edge: (edge[0], edge[1]))
    for ms, starts, plan in edges:
        if starts:
            h.take(plan.process, ms, mode=plan.mode, permits=plan.permits, lease=plan.lease)
        else:
            h.tokens[plan.process] = f"{plan.process}@{plan.start}"
            h.release(plan.process, ms)
    return h.check()


def _instants(plans: list[Plan]) -> range:
    return range(0, max((p.end for p in plans), default=0) + 1)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.data())
def test_a_semaphore_is_flagged_hard_iff_valid_permits_exceed_its_capacity(
    capacity: int, data: st.DataObject
) -> None:
    plans = data.draw(schedules([SHARED], 3))
    verdict = checked(plans, capacity, [SHARED])

    def permits(t: int, valid: bool) -> int:
        return sum(p.permits for p in plans if (p.valid_at(t) if valid else p.held_at(t)))

    hard = any(permits(t, True) > capacity for t in _instants(plans))
    over = any(permits(t, False) > capacity for t in _instants(plans))
    assert (verdict.hard_violations > 0) is hard, verdict.explanations
    assert (verdict.hard_violations + verdict.soft_violations > 0) is over, verdict.explanations


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_read_write_lock_is_flagged_hard_iff_a_valid_writer_meets_another_valid_hold(
    data: st.DataObject,
) -> None:
    plans = data.draw(schedules(RW, 1))
    verdict = checked(plans, None, RW)

    def clash(t: int, valid: bool) -> bool:
        live = [p for p in plans if (p.valid_at(t) if valid else p.held_at(t))]
        return len(live) > 1 and any(p.mode == EXCLUSIVE for p in live)

    hard = any(clash(t, True) for t in _instants(plans))
    over = any(clash(t, False) for t in _instants(plans))
    assert (verdict.hard_violations > 0) is hard, verdict.explanations
    assert (verdict.hard_violations + verdict.soft_violations > 0) is over, verdict.explanations


# -- leaked permits --------------------------------------------------------------------------


def _leaky(crash: bool) -> Verdict:
    """c1 takes a permit of 3 at 10 ms and (if ``crash``) dies holding it; from then on c2 and
    c3 hold one permit each, turn about, and c4's 1-permit acquires keep failing for 2 s."""
    h = SharedHistory(3, [SHARED], ttl_ms=200)
    h.take("c1", 10)
    if crash:
        h.crash("c1", 20)
    else:
        h.release("c1", 20)
    for ms in range(30, 2100, 100):
        h.take("c2", ms).take("c3", ms + 1)
        h.add(ms + 10, "invoke", "c4", "acquire", value={"mode": SHARED, "permits": 1})
        h.add(ms + 11, "fail", "c4", "acquire")
        h.release("c2", ms + 50).release("c3", ms + 51)
    return h.check()


def test_a_crashed_holders_permit_that_never_returns_is_a_leak() -> None:
    verdict = _leaky(crash=True)
    (leak,) = [v for v in verdict.violations if v.cause == "leaked-permits"]
    assert leak.kind == "liveness" and leak.processes == ["c1"], verdict.explanations
    assert leak.explanation.startswith("liveness: from 0.040 s to 2.041 s (2.001 s, 10× the "
                                       "200 ms TTL) the live holders took at most 2 of the 3 "
                                       "permits, yet 21 acquires that fitted in the rest failed")
    assert "c1 crashed at 0.020 s holding 1 permit: it never came back." in leak.explanation


def test_acquires_that_do_not_fit_are_no_leak() -> None:
    h = SharedHistory(2, [SHARED], ttl_ms=200)
    for ms in range(30, 2100, 100):
        h.take("c2", ms)
        h.add(ms + 10, "invoke", "c4", "acquire", value={"mode": SHARED, "permits": 2})
        h.add(ms + 11, "fail", "c4", "acquire")
        h.release("c2", ms + 50)
    assert h.check().violations == []


# -- fairness ------------------------------------------------------------------------------


def _waiting(fair: bool, c3_asks_at: float) -> Verdict:
    """c1 holds 10-100 ms; c2 starts waiting at 20 ms, c3 at ``c3_asks_at``; c3 is granted at
    100 ms (until 140), c2 only at 150 ms."""
    h = History(ttl_ms=1000, start=False)
    h.add(0, "info", "harness", "start", value={
        "lock": "test-fair", "ttl_ms": 1000, "clients": PROCESSES, "seed": 1, "fair": fair})
    h.acquire("c1", 10)
    h.attempt("c2", 20, 21)
    h.attempt("c3", c3_asks_at, c3_asks_at + 1)
    h.attempt("c2", 60, 61)
    h.release("c1", 100)
    h.acquire("c3", 100, invoked=99)
    h.release("c3", 140)
    h.acquire("c2", 150, invoked=149)
    h.release("c2", 210)
    return h.check()


def test_a_fair_lock_that_grants_a_later_waiter_first_is_unfair() -> None:
    verdict = _waiting(fair=True, c3_asks_at=40)
    assert verdict.verdict == "fairness", verdict.explanations
    (v,) = verdict.violations
    assert v.kind == "fairness" and v.processes == ["c2", "c3"]
    assert v.explanation == (
        "fairness: c3 was granted the lock at 0.100 s, ahead of c2, which had been waiting "
        "since 0.020 s (its first attempt failed at 0.021 s, before c3 first asked at "
        "0.040 s) and was granted only at 0.150 s: a lock that claims to be fair grants "
        "waiters in the order they asked.")


def test_no_fairness_is_judged_without_the_claim_or_within_a_race() -> None:
    assert _waiting(fair=False, c3_asks_at=40).violations == []
    # c3 asked before c2's first attempt had failed: which asked first is not certain.
    assert _waiting(fair=True, c3_asks_at=20.5).violations == []


def test_failures_while_nobody_holds_anything_are_an_outage_not_a_leak() -> None:
    h = SharedHistory(3, [SHARED], ttl_ms=200)
    h.take("c1", 10).crash("c1", 20)
    for ms in range(30, 2100, 50):
        h.add(ms, "invoke", "c4", "acquire", value={"mode": SHARED, "permits": 1})
        h.add(ms + 1, "fail", "c4", "acquire")
    h.take("c2", 2200).release("c2", 2250)
    causes = [(v.kind, v.cause) for v in h.check().violations]
    assert causes == [("liveness", None)], causes  # the outage, explained as ever


@dataclass
class Waited:
    process: str
    failures: list[tuple[int, int]]  # (invoked, failed), in order
    granted: tuple[int, int]  # (invoked, ok)
    released: int


@st.composite
def waits(draw: Any) -> list[Waited]:
    """Each process's rounds one after the other: some failed attempts, then a grant."""
    found = []
    for process in PROCESSES[: draw(st.integers(2, 4))]:
        t = draw(st.integers(0, 30))
        for _ in range(draw(st.integers(1, 3))):
            failures = []
            for _ in range(draw(st.integers(0, 3))):
                failures.append((t, t + draw(st.integers(0, 5))))
                t = failures[-1][1] + draw(st.integers(1, 10))
            granted = (t, t + draw(st.integers(0, 5)))
            released = granted[1] + draw(st.integers(1, 30))
            found.append(Waited(process, failures, granted, released))
            t = released + draw(st.integers(0, 20))
    return found


@settings(max_examples=150, deadline=None)
@given(waits())
def test_a_fair_lock_is_unfair_iff_some_grant_certainly_overtook_an_earlier_waiter(
    rounds: list[Waited],
) -> None:
    h = History(ttl_ms=100_000, start=False)
    h.add(0, "info", "harness", "start", value={
        "lock": "test-fair", "ttl_ms": 100_000, "clients": PROCESSES, "seed": 1, "fair": True})
    steps: list[tuple[int, int, str, Any]] = []
    for r in rounds:
        steps += [(failed, 0, r.process, ("fail", invoked, failed))
                  for invoked, failed in r.failures]
        steps.append((r.granted[1], 1, r.process, ("grant", *r.granted)))
        steps.append((r.released, 2, r.process, ("release", r.released)))
    for _, _, process, step in sorted(steps, key=lambda s: (s[0], s[1])):
        if step[0] == "fail":
            h.attempt(process, step[1], step[2])
        elif step[0] == "grant":
            h.acquire(process, step[2], invoked=step[1], lease=100_000)
        else:
            h.release(process, step[1])
    verdict = h.check()
    waited = [r for r in rounds if r.failures]
    unfair = any(
        a.process != b.process and a.failures[0][1] < b.failures[0][0]
        and b.granted[1] < a.granted[0]
        for a in waited for b in waited
    )
    assert any(v.kind == "fairness" for v in verdict.violations) is unfair, verdict.explanations


def test_a_semaphores_acquire_that_says_no_mode_takes_one_shared_permit() -> None:
    h = SharedHistory(2, [SHARED])
    h.acquire("c1", 10).acquire("c2", 20)  # no value: one permit of the lock's only mode
    h.release("c1", 50).release("c2", 60)
    assert h.check().violations == []
    h.acquire("c3", 70).acquire("c4", 71).acquire("c5", 72)
    h.release("c3", 90).release("c4", 91).release("c5", 92)
    (v,) = h.check().violations
    assert v.explanation.startswith("hard: c3, c4 and c5 held 3 permits of a 2-permit "
                                    "semaphore from 0.072 s to 0.090 s"), v.explanation


def test_a_read_write_run_that_never_wrote_tested_no_exclusion() -> None:
    h = SharedHistory(None, RW)
    for ms in (10, 100, 200):
        h.take("c1", ms).take("c2", ms + 5)
        h.release("c1", ms + 50).release("c2", ms + 55)
    h.add(300, "info", "harness", "end", value={"completed_ops": 6})
    verdict = h.check()
    assert verdict.verdict == "inconclusive", verdict.explanations
    assert verdict.inconclusive_reasons == [
        "the lock grants exclusive holds, but none was granted in 6 holds"]
