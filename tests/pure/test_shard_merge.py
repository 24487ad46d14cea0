"""Sharded comparisons: ``--shard K/N`` runs every N-th cell, ``lockchaos merge`` joins the
shards back into one matrix (plan order, every run's directory, one index and junit.xml)."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import JUnitXml

from chaos.cli import main
from chaos.errors import UsageError
from chaos.report.matrix import load_matrix
from chaos.run.shard import parse_shard, take_shard

ARGS = ["compare", "--locks", "del-release,lua", "--faults", "slow-work,latency",
        "--duration", "2"]


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


def test_two_shards_merge_into_the_whole_comparison(tmp_path: Path) -> None:
    shard_dirs = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        assert main([*ARGS, "--shard", f"{k}/2", "--out", str(out)]) == 0
        (directory,) = out.iterdir()
        assert load_matrix(directory / "matrix.json").shard == [k, 2]
        shard_dirs.append(directory)
    assert main(["merge", *map(str, reversed(shard_dirs)), "--out", str(tmp_path / "all")]) == 0
    (merged,) = (tmp_path / "all").iterdir()
    matrix = load_matrix(merged / "matrix.json")
    assert [(c.lock, c.faults) for c in matrix.cells] == [
        ("del-release", "slow-work"), ("del-release", "latency"),
        ("lua", "slow-work"), ("lua", "latency"),
    ]  # plan order, though the shards were given last first
    assert all(cell.status == "done" for cell in matrix.cells)
    for cell in matrix.cells:
        assert cell.report is not None and (merged / cell.report).is_file()
    assert JUnitXml.fromfile(str(merged / "junit.xml")).tests == 4
    assert (merged / "index.html").is_file()


def test_merge_refuses_a_directory_without_a_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["merge", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no matrix.json" in capsys.readouterr().err
