"""Properties: random schedules of holds without overlap are clean; injecting one overlapping
hold yields exactly one violation, of the kind a brute-force oracle predicts.

All times are whole milliseconds, so checking every whole millisecond of the overlap is an
exact (and independent) oracle for "both leases valid at some shared instant".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from test_checker_support import History

PROCESSES = ["c1", "c2", "c3", "c4"]


@dataclass
class Plan:
    process: str
    start: int
    end: int
    lease: int
    renewals: list[tuple[int, int]] = field(default_factory=list)  # (at, new deadline)

    def valid_at(self, t: int) -> bool:
        deadline = self.start + self.lease
        for renewed_at, until in self.renewals:
            if renewed_at <= t:
                deadline = until
        return t < deadline

    def emit(self, h: History) -> None:
        h.acquire(self.process, self.start, lease=self.lease, token=f"{self.process}@{self.start}")
        for renewed_at, until in self.renewals:
            h.renew(self.process, renewed_at, until=until, token=f"{self.process}@{self.start}")
        h.release(self.process, self.end)


@st.composite
def plans(draw, start: int, end: int, process: str) -> Plan:
    lease = draw(st.integers(1, 150))
    renew_at = sorted(draw(st.lists(st.integers(start, end - 1), max_size=2)))
    renewals = [(t, t + draw(st.integers(0, 150))) for t in renew_at]
    return Plan(process, start, end, lease, renewals)


@st.composite
def schedules(draw) -> list[Plan]:
    """Holds one after the other (possibly touching), by random processes."""
    holds, t = [], draw(st.integers(1, 20))
    for _ in range(draw(st.integers(1, 8))):
        start = t + draw(st.integers(0, 30))
        end = start + draw(st.integers(1, 100))
        holds.append(draw(plans(start, end, draw(st.sampled_from(PROCESSES)))))
        t = end
    return holds


def history_of(holds: list[Plan]) -> History:
    h = History(ttl_ms=1000)
    for hold in holds:
        hold.emit(h)
    for i, hold in enumerate(holds):  # contention: others fail while someone holds
        loser = PROCESSES[(PROCESSES.index(hold.process) + 1 + i) % len(PROCESSES)]
        h.attempt(loser, hold.start, hold.start)
    return h


@settings(max_examples=100, deadline=None)
@given(schedules())
def test_holds_one_after_the_other_are_never_a_violation(holds):
    verdict = history_of(holds).check()
    assert verdict.verdict == "ok", verdict.explanations
    assert verdict.violations == []
    assert verdict.counts["acquire_ok"] == len(holds)


@st.composite
def one_overlap(draw) -> tuple[list[Plan], Plan, Plan]:
    holds = draw(schedules())
    victim = draw(st.sampled_from(holds))
    start = draw(st.integers(victim.start, victim.end - 1))
    end = draw(st.integers(start + 1, victim.end))
    intruder = draw(st.sampled_from([p for p in PROCESSES if p != victim.process]))
    return holds, victim, draw(plans(start, end, intruder))


@settings(max_examples=100, deadline=None)
@given(one_overlap())
def test_one_injected_overlap_is_exactly_one_violation_of_the_right_kind(case):
    holds, victim, intruder = case
    h = history_of(holds)
    intruder.emit(h)
    verdict = h.check()

    shared = range(intruder.start, min(intruder.end, victim.end))
    hard = any(victim.valid_at(t) and intruder.valid_at(t) for t in shared)
    [violation] = verdict.violations
    assert violation.kind == ("hard" if hard else "soft")
    assert sorted(violation.processes) == sorted([victim.process, intruder.process])
    assert (violation.start_s, violation.end_s) == (shared.start / 1000, shared.stop / 1000)
    assert victim.process in violation.explanation and intruder.process in violation.explanation
    if hard:
        first = next(t for t in shared if victim.valid_at(t) and intruder.valid_at(t))
        assert verdict.first_hard_violation_s == violation.both_valid_from_s == first / 1000
