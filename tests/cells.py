"""The seeds' claims run as tests: one truth-table cell (``chaos.experiments.truth_table``)
on a real topology, judged as every cell claims (its judge, no nemesis error, the cause of its first
violation). tests/redis/test_truth_table.py runs every Python lock's cell,
tests/drivers/test_drivers.py the drivers'; the ``cell_runs`` fixture (tests/conftest.py) runs
each cell once a session, so a test that needs a cell's run (its report, its verdict) takes
that one instead of running the same cell again.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from seeds import SEEDS

from chaos.campaign import Campaign
from chaos.checker import Verdict
from chaos.checker.verdict import reaches
from chaos.experiments.execute import Outcome, run_campaign
from chaos.experiments.truth_table import CELLS, Cell, Unproven

# Hard cells stop at their first violation, most within 1-3 s: the cap matters only where a
# claim fails, and leaves the Redlock crash-restart cells (up to 9 s) room on a loaded machine.
DURATION_S = 20.0
QUIET_DURATION_S = 3.5  # cells that predict no hard violation run this long, as in the demo
# … and a second more for each fault beyond the first: the schedule fits every fault's first
# turn into the run, but a fault that takes its time (a node restarted, a partition healed)
# on a loaded machine pushes the next one's turn back, past the end of a 3.5 s run.
EXTRA_FAULT_S = 1.0


def quiet_duration_s(cell: Cell, base_s: float = QUIET_DURATION_S) -> float:
    """How long a cell that does not stop at its first violation runs."""
    return base_s + EXTRA_FAULT_S * max(0, len(cell.fault_names) - 1)


# A cell may take each of tests/seeds.py's SEEDS to test its claim. A seed does not replay the
# same timing, and a machine loaded by other work (two pytest workers on two cores) can starve
# one run: a run that did not test the claim (inconclusive, a fault without effect, too few lock
# cycles) or did not find what the claim says is there (a hard violation of its cause, a
# deadlock, a stale write the fence rejected: the judge's ``Unproven``) tells nothing, so the
# next seed runs. A run that contradicts the claim of a cell that runs to its end (a hard
# violation where it says "no hard", lost writes behind a fence) fails at once: no seed can
# take that back. A cell that stops at its first violation takes the next seed whatever its
# judge said, as before: under two workers a JVM driver's watchdog once went 578 ms without
# renewing while nothing the harness can see stopped it (redisson × client-pause, in a fresh
# clone), a hard the renewals rule cannot tell from a broken watchdog.


def run_cell(cell: Cell, duration_s: float, out: Path) -> tuple[Campaign, Outcome]:
    """Run ``cell`` (seed 1, then the next of ``SEEDS`` while a run says nothing of the claim)
    and check what every cell claims: its verdict, a run that tested what the claim is about
    (``Cell.check``: not inconclusive, every fault of the cell had an effect on the lock, a
    reentrancy claim saw nested grants), enough lock cycles for a "no hard" claim, no nemesis
    error, the cause of its first violation. A seed that was not enough is said as a warning."""
    untested: list[str] = []
    for seed in SEEDS:
        campaign = Campaign.from_options(
            cell.lock,
            cell.faults,
            duration_s=duration_s,
            seed=seed,
            stop_on_first=cell.stop_on is not None,
            fail_on=cell.stop_on or "hard",
            **cell.campaign_options,
        )
        outcome = run_campaign(campaign, out / f"seed-{seed}")
        assert not outcome.nemesis_errors, outcome.nemesis_errors
        verdict = outcome.verdict
        contradiction = cell.judge(verdict)
        if cell.stop_on is None and not isinstance(contradiction, Unproven):
            assert contradiction is None, (contradiction, verdict.explanations[:3])
        problem = (
            cell.check(verdict) or _too_few_cycles(cell, campaign, outcome) or _cause(cell, verdict)
        )
        if problem is None:
            if untested:
                warnings.warn(
                    f"{cell.name}: {'; '.join(untested)}; seed {seed} tested it", stacklevel=2
                )
            return campaign, outcome
        untested.append(f"seed {seed}: {problem}")
    raise AssertionError(f"{cell.name}: no seed tested the claim: {'; '.join(untested)}")


def _too_few_cycles(cell: Cell, campaign: Campaign, outcome: Outcome) -> str | None:
    """A "no hard" claim needs a run that was really locking, not failing all along: 20
    cycles, or for a cell whose holders work long (a 1.2 s critical section) half the cycles
    its duration allows."""
    if cell.expected != "no hard":
        return None
    cycles = campaign.duration_s * 1000 / campaign.holder_work_ms
    enough = min(20, cycles / 2)
    if outcome.completed_ops > enough:
        return None
    return f"{outcome.completed_ops} lock cycles, more than {enough:g} needed"


def _cause(cell: Cell, verdict: Verdict) -> str | None:
    """The word the first violation that settled the cell (one that fails its ``stop_on``
    gate: a hard one, or a lock wedged for good) must explain itself with (``Cell.cause``)."""
    if not cell.cause or cell.stop_on is None:
        return None
    first = next(v for v in verdict.violations
                 if reaches(v.kind, cell.stop_on, wedged=v.wedged))
    if cell.cause in first.explanation.lower():
        return None
    return f"the first {cell.stop_on} violation is not of cause {cell.cause!r}: {first.explanation}"


class CellRuns:
    """Each Python lock's cell run at most once: the first test that asks runs it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._done: dict[str, tuple[Campaign, Outcome]] = {}

    def __call__(self, name: str) -> tuple[Campaign, Outcome]:
        if name not in self._done:
            (cell,) = [cell for cell in CELLS if cell.name == name]
            duration_s = DURATION_S if cell.stop_on else quiet_duration_s(cell)
            self._done[name] = run_cell(cell, duration_s, self._tmp.mktemp("cell"))
        return self._done[name]
