"""The Hypothesis strategy for campaign schedules (what ``run --search`` tries): schedules
fit the run, and a failing one shrinks to fewer, shorter faults. Pure: no processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.campaign import Campaign
from chaos.errors import UsageError
from chaos.experiments.search import fault_time_s, schedules, search
from chaos.nemesis import parse_faults
from chaos.nemesis.schedule import Schedule

TTL_MS = 200
QUICK = settings(database=None, max_examples=300, deadline=None)


def strategy(faults: str) -> st.SearchStrategy[Schedule]:
    return schedules(parse_faults(faults), ttl_ms=TTL_MS, duration_s=20.0, seed=7)


@QUICK
@given(strategy("client-pause,latency:latency_ms=77"))
def test_faults_come_one_after_another_within_the_run(schedule: Schedule) -> None:
    assert schedule.seed == 7 and schedule.events
    for event, after in zip(schedule.events, schedule.events[1:], strict=False):
        assert after.at_s >= event.at_s + event.duration_s  # a quiet gap, never an overlap
    assert all(event.at_s < 20.0 for event in schedule.events)
    assert all(e.params["latency_ms"] == 77 for e in schedule.events if e.fault == "latency")


class _Breaks(Exception):
    """The schedule "breaks the lock" (a stand-in predicate: these tests start nothing)."""


def shrunk(
    strategy: st.SearchStrategy[Schedule], breaks: Callable[[Schedule], bool]
) -> tuple[Schedule, Schedule]:
    """The first schedule that breaks, as generated, and the one Hypothesis shrinks it to
    (the last it runs: Hypothesis replays the shrunk example last)."""
    seen: list[Schedule] = []

    @settings(QUICK, derandomize=True)
    @given(strategy)
    def trial(schedule: Schedule) -> None:
        if breaks(schedule):
            seen.append(schedule)
            raise _Breaks

    with pytest.raises(_Breaks):
        trial()
    return seen[0], seen[-1]


def test_a_failing_schedule_shrinks_to_fewer_shorter_faults() -> None:
    first, last = shrunk(
        strategy("latency,partition,client-pause"),
        lambda s: sum(e.fault == "partition" for e in s.events) >= 2,
    )
    assert len(last.events) < len(first.events)
    assert fault_time_s(last) < fault_time_s(first)
    assert [e.fault for e in last.events] == ["partition", "partition"]
    assert all(e.params["duration_ms"] == 2.0 * TTL_MS for e in last.events)  # the shortest


def test_one_fault_shrinks_to_the_short_end_of_its_range() -> None:
    _, last = shrunk(strategy("latency,client-pause"), lambda s: "client-pause" in faults(s))
    (event,) = last.events
    assert event.fault == "client-pause"
    assert event.params["duration_ms"] == 1.5 * TTL_MS


def faults(schedule: Schedule) -> list[str]:
    return [event.fault for event in schedule.events]


def test_a_search_without_faults_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--search needs --faults"):
        schedules([], ttl_ms=TTL_MS, duration_s=5.0)


def test_a_search_with_faults_in_order_is_a_usage_error(tmp_path: Path) -> None:
    """The search draws which fault comes when: an order asked for would do nothing."""
    campaign = Campaign("lua", faults=parse_faults("latency,reset"), faults_in_order=True)
    with pytest.raises(UsageError, match="--faults-in-order does nothing with --search"):
        search(campaign, tmp_path, tries=1)
