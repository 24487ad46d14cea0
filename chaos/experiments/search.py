"""Campaign schedules as a Hypothesis strategy, and ``run --search``: try schedules, keep the
smallest one that still breaks the lock.

A schedule drawn here is laid out like a seeded one (``chaos.nemesis.schedule.generate``):
the first fault early, then each fault after the previous one's end plus a quiet gap. Each
fault's parameters come from the fault's own ``params`` fed a Hypothesis-controlled random,
so they shrink the way the fault's ranges go: towards the short end of every duration and
the first of every choice. The list shrinks towards fewer faults. A failing schedule thus
shrinks to fewer, shorter faults.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hypothesis import Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from chaos.campaign import Campaign
from chaos.errors import UsageError
from chaos.experiments.execute import Outcome, run_campaign
from chaos.explore.profiles import select_profile
from chaos.nemesis.fault import FAULTS
from chaos.nemesis.schedule import FIRST_AT_S, GAP_TTLS, FaultEvent, Schedule
from chaos.signals import sigterm_interrupts

MAX_EVENTS = 12
DIALS = 2  # numbers drawn per fault for its parameters, used in turn (more stall the shrinker)
MAX_TRIES = 10_000

Faults = list[tuple[str, dict[str, Any]]]
_Part = tuple[float, str, dict[str, Any]]  # gap before it (TTLs), fault, parameters


class _Dials(random.Random):
    """A ``Random`` whose every draw comes from a list of numbers in [0, 1) Hypothesis drew
    (in turn, cycling), so a fault's ``params`` shrink with them: towards 0, that is towards
    the low end of every ``uniform`` and the first of every ``choice``."""

    def __init__(self, dials: list[float]) -> None:
        super().__init__(0)
        self._dials = dials
        self._next = 0

    def random(self) -> float:
        value = self._dials[self._next % len(self._dials)]
        self._next += 1
        return value

    def _randbelow(self, n: int) -> int:  # what choice, randrange and sample draw with
        return int(self.random() * n)


@st.composite
def _part(draw: st.DrawFn, faults: Faults, ttl_ms: int) -> _Part:
    name, overrides = draw(st.sampled_from(faults))
    dials = [draw(st.floats(0, 1, exclude_max=True)) for _ in range(DIALS)]
    params = {**FAULTS[name].params(_Dials(dials), ttl_ms), **overrides}
    return draw(st.floats(*GAP_TTLS)), name, params


def schedules(
    faults: Faults, *, ttl_ms: int, duration_s: float, seed: int = 1
) -> st.SearchStrategy[Schedule]:
    """Schedules of ``faults`` (names with parameter overrides) that fit in ``duration_s``."""
    if not faults:
        raise UsageError("--search needs --faults: there is no schedule to search without them")
    return st.builds(
        _lay_out,
        st.floats(*FIRST_AT_S),
        st.lists(_part(faults, ttl_ms), min_size=1, max_size=MAX_EVENTS),
        st.just((seed, duration_s, ttl_ms)),
    )


def _lay_out(first_at_s: float, parts: list[_Part], frame: tuple[int, float, int]) -> Schedule:
    seed_, duration_s, ttl_ms = frame
    events, at = [], first_at_s
    for gap_ttls, name, params in parts:
        if at >= duration_s:
            break
        event = FaultEvent(round(at, 3), name, params)
        events.append(event)
        at += event.duration_s + gap_ttls * ttl_ms / 1000
    return Schedule(seed_, tuple(events))


def fault_time_s(schedule: Schedule) -> float:
    """How long faults are on in ``schedule``, in total."""
    return sum(event.duration_s for event in schedule.events)


class _Broke(Exception):
    """A campaign broke the lock (at or above its ``fail_on``)."""


@dataclass(frozen=True)
class SearchOutcome:
    """The smallest failing campaign found (or the last one tried, if none failed)."""

    outcome: Outcome
    tries: int
    flaky: bool = False

    def describe(self) -> str:
        schedule = self.outcome.schedule
        shape = f"{len(schedule.events)} faults, {fault_time_s(schedule):.3f} s of faults in all"
        if not self.outcome.failed:
            return f"search: {self.tries} schedules tried, none broke the lock"
        note = " (its replay did not fail again: timing-dependent)" if self.flaky else ""
        return f"search: {self.tries} schedules tried; shrunk the failing one to {shape}{note}"


def search(campaign: Campaign, out: Path, *, tries: int) -> SearchOutcome:
    """Run ``campaign`` with up to ``tries`` Hypothesis-drawn schedules; shrink the first that
    breaks the lock; return its outcome, with its run directory moved under ``out``."""
    if not 1 <= tries <= MAX_TRIES:
        raise UsageError(f"--search must be between 1 and {MAX_TRIES} (got {tries})")
    campaign.validate()
    if campaign.faults_in_order:
        raise UsageError("--faults-in-order does nothing with --search: the search draws which "
                         "fault comes when; drop one of them")
    strategy = schedules(
        campaign.faults, ttl_ms=campaign.ttl_ms, duration_s=campaign.duration_s, seed=campaign.seed
    )
    select_profile()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="lockchaos-search-") as scratch:

        @seed(campaign.seed)
        @settings(
            max_examples=tries,
            database=None,
            derandomize=False,
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
            phases=(Phase.generate, Phase.shrink),
        )
        @given(strategy)
        def trial(schedule: Schedule) -> None:
            outcomes.append(run_campaign(campaign, Path(scratch), schedule=schedule))
            if outcomes[-1].failed:
                raise _Broke

        result = "passed"
        try:
            with sigterm_interrupts():
                trial()
        except _Broke:
            result = "broke"  # the last run was Hypothesis replaying the shrunk schedule
        except Flaky:
            result = "flaky"  # ... and it passed: report the smallest failure seen instead
        failed = [o for o in outcomes if o.failed]
        chosen = outcomes[-1]
        if result == "flaky" and failed:
            chosen = min(failed, key=lambda o: (len(o.schedule.events), fault_time_s(o.schedule)))
        out.mkdir(parents=True, exist_ok=True)
        kept = Path(shutil.move(chosen.run_dir, out / chosen.run_dir.name))
    return SearchOutcome(replace(chosen, run_dir=kept), len(outcomes), result == "flaky")
