"""The seeds' claims, as verdicts: every cell of ``chaos.run.truth_table`` on a real topology.

Cells that predict a violation stop at the first one; the others run their full (short)
duration. If a cell fails, that is a finding to investigate, not a test to relax.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.run.campaign import Campaign, Outcome, run_campaign
from chaos.run.truth_table import CELLS, Cell

DURATION_S = 10.0  # hard cells stop at the first violation, normally within 1-3 s
QUIET_DURATION_S = 6.0  # cells that predict no hard violation run this long


def run_cell(cell: Cell, duration_s: float, out: Path) -> tuple[Campaign, Outcome]:
    """Run ``cell`` once (seed 1) and check what every cell claims: its judge, no nemesis
    error, the cause of its first violation. Also tests/test_drivers.py's cells."""
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
    assert cell.judge(verdict) is None, (cell.judge(verdict), verdict.explanations[:3])
    assert not outcome.nemesis_errors
    if cell.cause:
        first = next(v for v in verdict.violations if v.kind == cell.stop_on)
        assert cell.cause in first.explanation.lower(), first.explanation
    return campaign, outcome


@pytest.mark.parametrize("cell", CELLS, ids=[cell.name for cell in CELLS])
def test_cell(tmp_path: Path, cell: Cell) -> None:
    duration_s = DURATION_S if cell.stop_on else QUIET_DURATION_S
    campaign, outcome = run_cell(cell, duration_s, tmp_path)
    if cell.expected == "no hard":
        # It was really locking, not failing all along: 20 cycles, or for a cell whose holders
        # work long (a 1.2 s critical section) half the cycles its duration allows.
        cycles = QUIET_DURATION_S * 1000 / campaign.holder_work_ms
        assert outcome.completed_ops > min(20, cycles / 2)
