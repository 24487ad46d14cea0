"""The seeds' claims run as tests: one truth-table cell (``chaos.experiments.truth_table``)
on a real topology, judged as every cell claims (its judge, no nemesis error, the cause of its first
violation). tests/redis/test_truth_table.py runs every Python lock's cell,
tests/drivers/test_drivers.py the drivers'; the ``cell_runs`` fixture (tests/conftest.py) runs
each cell once a session, so a test that needs a cell's run (its report, its verdict) takes
that one instead of running the same cell again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.campaign import Campaign
from chaos.experiments.execute import Outcome, run_campaign
from chaos.experiments.truth_table import CELLS, Cell

# Hard cells stop at their first violation, most within 1-3 s: the cap matters only where a
# claim fails, and leaves the Redlock crash-restart cells (up to 9 s) room on a loaded machine.
DURATION_S = 20.0
QUIET_DURATION_S = 4.5  # cells that predict no hard violation run this long (the demo: 3.5 s)


def run_cell(cell: Cell, duration_s: float, out: Path) -> tuple[Campaign, Outcome]:
    """Run ``cell`` once (seed 1) and check what every cell claims: its verdict, a run that
    tested what the claim is about (``Cell.check``: not inconclusive, every fault of the cell
    had an effect on the lock, a reentrancy claim saw nested grants), no nemesis error."""
    campaign = Campaign.from_options(
        cell.lock,
        cell.faults,
        duration_s=duration_s,
        seed=1,
        stop_on_first=cell.stop_on is not None,
        fail_on=cell.stop_on or "hard",
        **cell.campaign_options,
    )
    outcome = run_campaign(campaign, out)
    verdict = outcome.verdict
    assert cell.check(verdict) is None, (cell.check(verdict), verdict.explanations[:3])
    assert not outcome.nemesis_errors
    if cell.cause:
        first = next(v for v in verdict.violations if v.kind == cell.stop_on)
        assert cell.cause in first.explanation.lower(), first.explanation
    return campaign, outcome


class CellRuns:
    """Each Python lock's cell run at most once: the first test that asks runs it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._done: dict[str, tuple[Campaign, Outcome]] = {}

    def __call__(self, name: str) -> tuple[Campaign, Outcome]:
        if name not in self._done:
            (cell,) = [cell for cell in CELLS if cell.name == name]
            duration_s = DURATION_S if cell.stop_on else QUIET_DURATION_S
            self._done[name] = run_cell(cell, duration_s, self._tmp.mktemp("cell"))
        return self._done[name]
