"""The seeds' claims, as verdicts: every cell of ``chaos.experiments.truth_table`` on a real
topology.

Cells that predict a violation stop at the first one; the others run their full (short)
duration. A run that said nothing of the claim (untested, or a claimed violation not found) is
followed by the next seed, up to three (tests/cells.py); a run that contradicts a claim of absence
fails at once. If a cell fails, that is a finding to investigate, not a test to relax. Each cell
runs once a session (tests/cells.py): the tests that read a cell's report or verdict share it.
"""

from __future__ import annotations

import pytest
from cells import CellRuns

from chaos.experiments.truth_table import CELLS, Cell


@pytest.mark.parametrize("cell", CELLS, ids=[cell.name for cell in CELLS])
def test_cell(cell_runs: CellRuns, cell: Cell) -> None:
    """Borne out as ``tests/cells.py``'s ``run_cell`` judges (a "no hard" cell: with enough
    lock cycles); the cell's run is the one the other tests of a cell's report share."""
    cell_runs(cell.name)
