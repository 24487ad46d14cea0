"""Campaign schedules as a Hypothesis strategy, and ``run --search``: try schedules, keep the
smallest one that still breaks the lock.

A schedule drawn here comes from the generator a seeded one comes from
(``chaos.nemesis.generator.timed``), on Hypothesis's choices (``Drawn``) rather than a seed's:
the first fault early, then each fault after the previous one's end plus a quiet gap. Each
turn's fault is picked (``picks``), so the turns shrink towards fewer faults; each fault's
parameters come from the fault's own ``params`` fed a Hypothesis-controlled random, so they
shrink the way the fault's ranges go: towards the short end of every duration and the first
of every choice. A failing schedule thus shrinks to fewer, shorter faults.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from chaos.campaign import Campaign
from chaos.errors import UsageError
from chaos.experiments.execute import Outcome, run_campaign
from chaos.explore.profiles import select_profile
from chaos.nemesis.fault import FaultSpec
from chaos.nemesis.generator import Drawn, picks, timed
from chaos.nemesis.schedule import Schedule
from chaos.signals import sigterm_interrupts

MAX_EVENTS = 12
MAX_TRIES = 10_000


@st.composite
def _schedule(draw: st.DrawFn, specs: list[FaultSpec], ttl_ms: int, duration_s: float,
              seed: int) -> Schedule:
    return Schedule(seed, tuple(timed(specs, Drawn(draw), picks(MAX_EVENTS), ttl_ms=ttl_ms,
                                      duration_s=duration_s)))


def schedules(
    specs: list[FaultSpec], *, ttl_ms: int, duration_s: float, seed: int = 1
) -> st.SearchStrategy[Schedule]:
    """Schedules of ``specs`` (faults with parameter overrides) that fit in ``duration_s``:
    the one generator (``chaos.nemesis.generator.timed``) on Hypothesis's choices, a fault
    picked each turn."""
    if not specs:
        raise UsageError("--search needs --faults: there is no schedule to search without them")
    return _schedule(specs, ttl_ms, duration_s, seed)


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
