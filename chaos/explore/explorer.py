"""``explore``: Hypothesis generates step programs against one lock, and shrinks the first
that breaks it to the smallest program that still does (``chaos.explore.shrink``).

One topology serves the whole exploration (``Session`` resets it between examples). The
seed makes the exploration repeatable: the same seed tries the same programs in the same
order. Hypothesis's own example database is off, so a failure found for one lock is never
replayed against another.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import Phase, Verbosity, seed, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from chaos.campaign import Campaign, choose_layout, open_topology
from chaos.checker.exercised import MIN_LOCK_CYCLES
from chaos.errors import UsageError
from chaos.explore.fault_steps import check_explorable
from chaos.explore.machine import Exploration, Failure, TimeUp, ViolationFound, machine_for
from chaos.explore.profiles import select_profile
from chaos.explore.program import Program
from chaos.explore.rundir import write_run_dir
from chaos.explore.session import Session
from chaos.explore.shrink import shrink
from chaos.signals import sigterm_interrupts

MAX_EXAMPLES = 100_000
MAX_STEPS = 200
# Every wait of a program is a multiple of the TTL (at most: it ends once every lease and key
# has run out, see session.py), so a program's wall time is about proportional to it: 50 ms
# explores more programs per second than 100 ms, finding and shrinking to the same programs
# (bench/explore.py measures both), while staying far above the harness's per-step cost (a
# few ms on an idle machine).
EXPLORE_TTL_MS = 50


@dataclass
class ExploreResult:
    """How an exploration went: ``failure`` is the shrunk program (None: the lock held)."""

    campaign: Campaign
    examples: int
    elapsed_s: float
    failure: Failure | None = None
    time_to_find_s: float | None = None
    flaky: bool = False  # no smaller program failed again: the one found is reported as is
    run_dir: Path | None = None
    programs: list[Program] = field(default_factory=list, repr=False)
    lock_cycles: int = 0  # over every example: an acquire, then a release that returned
    untested: str | None = None  # the first example's reason for testing nothing, if any

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def inconclusive(self) -> bool:
        """No program broke the lock because none exercised it: its examples completed fewer
        than ``MIN_LOCK_CYCLES`` lock cycles between them (its acquire always raised, say).
        ``lockchaos explore`` then exits 3, as ``run`` does, not 0."""
        return not self.failed and self.lock_cycles < MIN_LOCK_CYCLES

    def inconclusive_reason(self) -> str:
        """Why the exploration tested nothing, in one line (when ``inconclusive``)."""
        said = f" (the first: {self.untested})" if self.untested else ""
        return (f"its {self.examples} programs completed {self.lock_cycles} lock cycles "
                f"between them, fewer than the {MIN_LOCK_CYCLES} that test mutual "
                f"exclusion{said}")

    def summary(self) -> dict[str, object]:
        return {
            "examples": self.examples,
            "elapsed_s": round(self.elapsed_s, 3),
            "time_to_find_s": _rounded(self.time_to_find_s),
            "steps": len(self.failure.program.steps) if self.failure else None,
            "flaky": self.flaky,
        }


@contextmanager
def _seeded(value: int) -> Iterator[None]:
    """Seed the global ``random`` for the run, then restore it.

    ``run_state_machine_as_test`` ignores ``@seed`` on the machine and, without
    ``derandomize``, draws its own seed from the global ``random``: whatever an importer did to
    that state (a library drawing one number at import) changed which programs were tried.
    Seeding it here makes ``--seed`` alone decide the programs.
    """
    state = random.getstate()
    random.seed(value)
    try:
        yield
    finally:
        random.setstate(state)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def explore(
    campaign: Campaign, *, max_examples: int = 100, steps: int = 20, out: Path | None = None,
    until: float | None = None,
) -> ExploreResult:
    """Explore ``campaign.lock`` with ``campaign.faults`` as steps; on a failure at or above
    ``campaign.fail_on``, shrink it and (when ``out`` is given) write its run directory.
    ``until`` (``time.monotonic()``) ends the exploration early: no example starts after it
    (the audit's explore phase, a time budget rather than a number of programs)."""
    if not 1 <= max_examples <= MAX_EXAMPLES:
        raise UsageError(
            f"--max-examples must be between 1 and {MAX_EXAMPLES} (got {max_examples})"
        )
    if not 1 <= steps <= MAX_STEPS:
        raise UsageError(f"--steps must be between 1 and {MAX_STEPS} (got {steps})")
    check_explorable(campaign.faults)
    campaign.validate()
    layout = choose_layout(campaign)
    if layout.kind == "cluster":  # reset() puts standalone and Sentinel groups back, not this
        raise UsageError("explore runs on the standalone and sentinel topologies; "
                         "test a lock on a cluster with `lockchaos run --topology cluster`")
    shape = Program.of(campaign, layout)
    select_profile()
    hypothesis_settings = settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        database=None,
        derandomize=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate,),  # shrinking happens on the concrete program: shrink.py
    )
    with open_topology(campaign, layout) as topo, tempfile.TemporaryDirectory(
        prefix="lockchaos-explore-"
    ) as workdir:
        exploration = Exploration(
            Session(topo, shape, campaign.seed),
            Path(workdir),
            fail_on=campaign.fail_on,
            faults=campaign.faults,
            until=until,
        )
        machine = seed(campaign.seed)(machine_for(exploration))
        found, flaky = None, False
        try:
            with _seeded(campaign.seed), sigterm_interrupts():
                run_state_machine_as_test(machine, settings=hypothesis_settings)
        except (ViolationFound, Flaky, TimeUp) as stopped:
            # Time up: the examples run so far are the exploration (one of them may have
            # failed, with time running out as Hypothesis played it again).
            found = exploration.failure
            if found is None and not isinstance(stopped, TimeUp):
                raise
        failure = found
        if found is not None:
            failure = shrink(exploration.session, found, campaign.fail_on,
                             exploration.history_path, until=until)
            flaky = failure is found and len(found.program.steps) > 1
    result = ExploreResult(
        campaign,
        exploration.examples,
        time.monotonic() - exploration.started,
        failure,
        exploration.found_s,
        flaky,
        programs=exploration.programs,
        lock_cycles=exploration.lock_cycles,
        untested=exploration.untested,
    )
    if failure is not None and out is not None:
        result.run_dir = write_run_dir(out, campaign, failure, result.summary())
    return result
