"""``lockchaos compare`` on real topologies, the demo's plan, and compare's bad input."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from junitparser import Failure, JUnitXml, Skipped

from chaos import locks
from chaos.checker import Verdict
from chaos.checker.verdict import RANK
from chaos.cli import main
from chaos.commands.demo import demo_plans
from chaos.locks.driver import INFOS as DRIVER_INFOS
from chaos.report.matrix import load_matrix
from chaos.run.compare import claim_for, plan_matrix
from chaos.run.truth_table import CELLS, DRIVER_CELLS


def test_two_locks_by_two_faults_match_the_truth_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lua × slow-work (soft, lost writes) and lua × failover (hard) are truth-table cells;
    redlock × failover cannot run (Sentinel against independent masters): n/a, no crash."""
    code = main(["compare", "--locks", "lua,redlock", "--faults", "slow-work,failover",
                 "--duration", "8", "--out", str(tmp_path)])
    assert code == 0
    index = Path(capsys.readouterr().out.strip().splitlines()[-1])
    (directory,) = tmp_path.iterdir()
    assert index == (directory / "index.html").resolve() and index.is_file()
    matrix = load_matrix(directory / "matrix.json")
    cells = {(c.lock, c.faults): c for c in matrix.cells}
    assert set(cells) == {(lock, fault) for lock in ("lua", "redlock")
                          for fault in ("slow-work", "failover")}

    na = cells["redlock", "failover"]
    assert na.status == "n/a" and na.reason and "sentinel" in na.reason and na.runs == []

    judged = 0
    for cell in CELLS:
        if (cell.lock, cell.faults) in cells and not cell.options:  # the plain cells
            result = cells[cell.lock, cell.faults]
            (run,) = result.runs
            verdict = msgspec.json.decode((directory / run.run_dir / "verdict.json").read_bytes(),
                                          type=Verdict)
            assert cell.judge(verdict) is None, (cell.name, cell.judge(verdict),
                                                 verdict.explanations)
            assert run.truth_problem is None and run.verdict == verdict.verdict
            assert result.expected and result.expected.matched == 1 and result.claim_held
            judged += 1
    assert judged == 2
    assert cells["lua", "failover"].verdict == "hard"
    assert cells["lua", "failover"].first_hard_s is not None
    assert cells["lua", "slow-work"].lost_writes

    page = index.read_text()
    for entry in cells.values():
        if entry.status == "done":
            assert entry.report and (directory / entry.report).is_file()  # links to its report
            assert f'href="{entry.report}"' in page
    assert "n/a" in page and na.reason in page

    xml = JUnitXml.fromfile(str(directory / "junit.xml"))
    (suite,) = list(xml)
    results = {case.name: case.result for case in suite}
    assert suite.tests == 4
    failed = {name for name, result in results.items()
              if any(isinstance(r, Failure) for r in result)}
    skipped = {name for name, result in results.items()
               if any(isinstance(r, Skipped) for r in result)}
    assert failed == {c.name for c in cells.values()
                      if c.verdict and RANK[c.verdict] >= RANK["hard"]}
    assert "lua × failover" in failed and skipped == {"redlock × failover"}
    assert suite.failures == len(failed)

    # `lockchaos report` rebuilds both pages from matrix.json alone, byte for byte.
    pages = {name: (directory / name).read_bytes() for name in ("index.html", "junit.xml")}
    for name in pages:
        (directory / name).unlink()
    capsys.readouterr()
    assert main(["report", str(directory)]) == 0
    assert capsys.readouterr().out.strip() == str(directory / "index.html")
    assert {name: (directory / name).read_bytes() for name in pages} == pages


def test_a_matrix_that_is_not_one_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "matrix.json").write_text('{"title": "x", "cells": [{"lock": 1}]}\n')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a lockchaos matrix" in err


def test_the_demo_runs_every_bundled_lock_and_every_truth_table_cell() -> None:
    python_only = demo_plans(10.0, 5.0)
    assert {plan.lock for plan in python_only} == set(locks.BUNDLED) - set(DRIVER_INFOS)
    plans = demo_plans(10.0, 5.0, drivers=True)
    assert {plan.lock for plan in plans} == set(locks.BUNDLED)
    cells = [*CELLS, *DRIVER_CELLS]
    assert {(c.lock, c.faults, c.options) for c in cells} <= {
        (p.lock, p.faults, p.options) for p in plans
    }
    for plan in plans:
        claim = claim_for(plan)
        assert plan.stop_on == ((claim.stop_on if claim else None) or "hard")
        plan.campaign(1).validate()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--locks", "nope", "--faults", "slow-work"], "unknown lock"),
        (["--locks", "lua", "--faults", "slow-work,bogus"], "unknown fault"),
        (["--locks", "lua", "--faults", ","], "--faults is empty"),
        (["--locks", "lua", "--faults", "slow-work", "--seeds", "0"], "--seeds"),
        (["--locks", "lua", "--faults", "slow-work", "--duration", "-1"], "--duration"),
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
    assert plan.faults == "latency,partition" and plan.name == "lua × latency + partition"
