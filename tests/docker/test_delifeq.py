"""The ``delifeq`` lock (Valkey 9's DELIFEQ, 8.1's SET IFEQ) on the servers that have them, and
its one-line refusal on one that does not (on the local provider's Redis 7.0:
tests/redis/test_inconclusive_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cells import quiet_duration_s, run_cell

from chaos.cli import main
from chaos.experiments.truth_table import SERVER_CELLS, Cell
from chaos.topology import images


@pytest.mark.parametrize(
    "cell",
    [pytest.param(cell, marks=pytest.mark.images(cell.server or "", "toxiproxy"))
     for cell in SERVER_CELLS],
    ids=[cell.name for cell in SERVER_CELLS],
)  # fmt: skip
def test_server_cell(cell: Cell, tmp_path: Path) -> None:
    """As tests/redis/test_truth_table.py's cells: its judge, every fault had an effect (the
    pause point before DELIFEQ was reached), and not inconclusive (where the holders were
    asked to extend, SET IFEQ extended), no nemesis error."""
    _, outcome = run_cell(cell, quiet_duration_s(cell), tmp_path)
    if dict(cell.options).get("extend_during_work", True):
        assert outcome.verdict.counts["extend_ok"] > 0  # SET IFEQ extended the holders' leases


@pytest.mark.images("redis-8.0", "toxiproxy")
def test_a_server_without_delifeq_is_refused_in_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Redis 8.0 has neither DELIFEQ nor SET IFEQ: every client's factory refuses, the run
    stops with that line and exit status 2, naming the server to run instead."""
    code = main(["run", "--lock", "delifeq", "--provider", "docker", "--server", "redis-8.0",
                 "--duration", "3", "--out", str(tmp_path)])
    [line] = capfd.readouterr().err.strip().splitlines()
    assert code == 2
    assert line.startswith(
        "lockchaos: the lock factory failed in every client: lock 'delifeq' needs DELIFEQ "
        "(Valkey ≥ 9.0): this server is redis 8.0."
    ), line
    hint = "run it with --provider docker --server valkey-9.1 (lock delifeq; run directory "
    assert hint in line and "valkey-9.1" in images.SERVERS
