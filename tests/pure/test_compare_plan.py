"""What ``lockchaos compare`` plans (the demo's cells, combined columns) and refuses (bad
input, a matrix that is not one), in one line and exit 2, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import lockspec
from chaos.campaign import Campaign
from chaos.cli import main
from chaos.commands.demo import demo_plans
from chaos.drivers.catalog import INFOS as DRIVER_INFOS
from chaos.experiments.compare import CellPlan, claim_for, plan_matrix
from chaos.experiments.truth_table import CELLS, DRIVER_CELLS, SERVER_CELLS


def test_a_matrix_that_is_not_one_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "matrix.json").write_text('{"title": "x", "cells": [{"lock": 1}]}\n')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a lockchaos matrix" in err


def test_the_demo_runs_every_bundled_lock_and_every_truth_table_cell() -> None:
    """Every bundled lock the local provider's Redis runs: those that need another server
    (their claims are SERVER_CELLS, run on the docker provider) are left out, and so is the
    corpus of third-party libraries (an optional install, judged by its own scoreboard)."""
    corpus = {info.name for info in lockspec.catalog() if info.extra}
    local = set(lockspec.BUNDLED) - {cell.lock for cell in SERVER_CELLS} - corpus
    python_only = demo_plans(10.0, 5.0)
    assert {plan.lock for plan in python_only} == local - set(DRIVER_INFOS)
    plans = demo_plans(10.0, 5.0, drivers=True)
    assert {plan.lock for plan in plans} == local
    cells = [*CELLS, *DRIVER_CELLS]
    assert {(c.lock, c.faults, c.options) for c in cells} <= {
        (p.lock, p.column, p.options) for p in plans
    }
    for plan in plans:
        claim = claim_for(plan)
        assert plan.stop_on == (claim.stop_on if claim else "hard")  # as the tests stop
        plan.campaign(1).validate()


def test_compare_finds_the_claims_of_the_cells_that_need_a_server() -> None:
    """``compare --provider docker --servers valkey-9.1`` checks delifeq against its claims,
    in a row named as the cell names it (``delifeq @ valkey-9.1``)."""
    for cell in SERVER_CELLS:
        plan = CellPlan(cell.lock, cell.faults, 6.0, cell.stop_on, "docker",
                        options=cell.options, server=cell.server)
        assert claim_for(plan) is cell and plan.row == cell.row
        assert plan.campaign(1) == Campaign.from_options(cell.lock, cell.faults, duration_s=6.0,
                                                         stop_on_first=False,
                                                         **cell.campaign_options)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--locks", "nope", "--faults", "slow-work"], "unknown lock"),
        (["--locks", "lua", "--faults", "slow-work,bogus"], "unknown fault"),
        (["--locks", "lua", "--faults", ","], "--faults is empty"),
        (["--locks", "lua", "--faults", "slow-work", "--seeds", "0"], "--seeds"),
        (["--locks", "lua", "--faults", "slow-work", "--duration", "-1"], "--duration"),
        (["--locks", "lua,rwlock", "--faults", "slow-work", "--capacity", "2"],
         "none of lua, rwlock counts permits"),
        (["--locks", "lua-semaphore", "--faults", "slow-work", "--capacity", "0"],
         "--capacity must be between 1 and 1000"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert main(["compare", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing was written


def test_a_column_may_combine_faults() -> None:
    (plan,) = plan_matrix(["lua"], ["latency+partition"], 5.0)
    assert plan.column == "latency,partition" and plan.name == "lua × latency + partition"


def test_capacity_sets_each_semaphores_permits_in_a_row_of_its_own() -> None:
    """``compare --capacity`` as ``run`` takes it, for the semaphores among the locks: the
    mutex and the read-write lock keep theirs, and at a lock's own capacity the row (and the
    truth table's claim about it) is the lock's own."""
    plans = plan_matrix(["lua", "lua-semaphore", "book-semaphore", "rwlock"], ["client-pause"],
                        5.0, capacity=5)
    rows = {plan.lock: plan.row for plan in plans}
    assert rows == {"lua": "lua", "lua-semaphore": "lua-semaphore (capacity=5)",
                    "book-semaphore": "book-semaphore (capacity=5)", "rwlock": "rwlock"}
    for plan in plans:
        campaign = plan.campaign(1)
        campaign.validate()
        assert campaign.capacity == (5 if "semaphore" in plan.lock else None)
    (own,) = plan_matrix(["lua-semaphore"], ["client-pause"], 5.0, capacity=3)
    assert own.options == () and claim_for(own) is not None
