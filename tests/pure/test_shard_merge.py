"""Sharded comparisons: ``--shard K/N`` runs every N-th cell, and what ``lockchaos merge``
refuses (two real shards merged: tests/redis/test_compare.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cli import main
from chaos.errors import UsageError
from chaos.experiments.shard import parse_shard, take_shard


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
