"""Sharded comparisons: ``--shard K/N`` runs every N-th cell, and what ``lockchaos merge``
refuses (two real shards merged: tests/redis/test_compare.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cli import main
from chaos.errors import UsageError
from chaos.experiments.shard import RUNS, merge, parse_shard, take_shard
from chaos.report.matrix import CellEntry, MatrixFile, RunEntry, save_matrix


def test_shards_partition_the_plan() -> None:
    items = list(range(7))
    shards = [take_shard(items, (k, 3)) for k in (1, 2, 3)]
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(x for shard in shards for x in shard) == items
    assert take_shard(items, None) == items


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_bad_shard_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--shard must look like K/N"):
        parse_shard(text)


def test_merge_refuses_a_directory_without_a_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["merge", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no matrix.json" in capsys.readouterr().err


def test_runs_of_the_same_name_from_two_shards_are_both_kept(tmp_path: Path) -> None:
    """Two shards (machines, or ``--jobs``) name their runs by lock, faults and the second
    they began: two can coincide. Merged, the second is renamed and its cell points at it."""
    name = "20261125-085814-lua-failover-s1"
    shards = []
    for k in (1, 2):
        directory = tmp_path / f"shard{k}"
        run = directory / RUNS / name
        run.mkdir(parents=True)
        (run / "report.html").write_text(f"shard {k}")
        entry = RunEntry(seed=1, verdict="hard", lock="lua", ttl_ms=200, duration_s=1.0,
                         hard_violations=1, soft_violations=0, liveness_violations=0,
                         lost_writes=None, stale_writes_rejected=0, first_hard_violation_s=0.5,
                         explanations=[], counts={}, notes=[], run_dir=f"{RUNS}/{name}",
                         report=f"{RUNS}/{name}/report.html", wall_s=1.0)  # fmt: skip
        cell = CellEntry(lock="lua", faults=f"failover{k}", label="failover", duration_s=1.0,
                         stop_on="hard", status="done", reason=None, verdict="hard", hard=1,
                         soft=0, liveness=0, lost_writes=None, first_hard_s=0.5, hard_runs=1,
                         report=entry.report, why=None, runs=[entry], expected=None)  # fmt: skip
        save_matrix(directory, MatrixFile(title="t", seeds=1, locks=["lua"], columns=[],
                                          started="", wall_s=1.0, cells=[cell], shard=[k, 2]))
        shards.append(directory)
    target, merged = merge(shards, tmp_path / "out")
    reports = [cell.report for cell in merged.cells]
    assert reports == [f"{RUNS}/{name}/report.html", f"{RUNS}/{name}-2/report.html"]
    assert [(target / r).read_text() for r in reports if r] == ["shard 1", "shard 2"]
    assert merged.cells[1].runs[0].run_dir == f"{RUNS}/{name}-2"


def test_merged_rows_are_in_plan_order_whichever_shard_ran_them(tmp_path: Path) -> None:
    """``compare --servers a,b,c,d --jobs 2``: shard 1 ran the rows of a and c, shard 2 of b
    and d; the merged matrix lists them a, b, c, d, as the comparison run whole does."""
    rows = [f"lua @ {server}" for server in ("redis-7.0", "redis-8.0", "valkey-8.1", "valkey-9.1")]
    directories = []
    for k in (1, 2):
        mine = take_shard(rows, (k, 2))
        cells = [CellEntry(lock=row, faults="failover", label="failover", duration_s=1.0,
                           stop_on="hard", status="pending", reason=None, verdict=None, hard=0,
                           soft=0, liveness=0, lost_writes=None, first_hard_s=None, hard_runs=0,
                           report=None, why=None, runs=[], expected=None) for row in mine]
        directory = tmp_path / f"shard{k}"
        directory.mkdir()
        save_matrix(directory, MatrixFile(title="t", seeds=1, locks=mine, columns=[],
                                          started="", wall_s=1.0, cells=cells, shard=[k, 2]))
        directories.append(directory)
    _, merged = merge(directories, tmp_path / "out")
    assert [cell.lock for cell in merged.cells] == rows
    assert merged.locks == rows
