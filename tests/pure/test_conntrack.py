"""``conntrack.saturated``: a full connection-tracking table is named, an empty or absent one
is not (the table is read from files laid out as /proc/sys/net/netfilter lays them out)."""

from __future__ import annotations

from pathlib import Path

from chaos.topology import conntrack


def _table(root: Path, count: int, most: int) -> Path:
    root.mkdir(exist_ok=True)
    (root / "nf_conntrack_count").write_text(f"{count}\n")
    (root / "nf_conntrack_max").write_text(f"{most}\n")
    return root


def test_a_full_table_is_named_with_what_to_do(tmp_path: Path) -> None:
    said = conntrack.saturated(_table(tmp_path / "full", 262144, 262144))
    assert said is not None
    assert "262144 of 262144" in said and "nf_conntrack_max" in said


def test_a_table_with_room_or_none_at_all_says_nothing(tmp_path: Path) -> None:
    assert conntrack.saturated(_table(tmp_path / "room", 104910, 262144)) is None
    assert conntrack.saturated(tmp_path / "absent") is None
