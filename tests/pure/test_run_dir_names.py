"""A run directory's name fits a file system's 255 bytes whatever the lock's spec: an
``exec:`` lock named by its command and the paths of a deep checkout made one longer (a fresh
clone under /tmp/ci-check.XXXXXX: "File name too long")."""

from __future__ import annotations

from pathlib import Path

from chaos.campaign import Campaign
from chaos.campaign.rundir import run_dir_for


def test_a_long_exec_lock_gets_a_short_distinct_run_directory(tmp_path: Path) -> None:
    deep = "/tmp/ci-check.Lanbrk/lockchaos/chaos/drivers/kits/python" * 4
    names = []
    for tail in ("talks.py", "other.py"):
        lock = f"exec:env PYTHONPATH={deep} python {deep}/{tail}"
        campaign = Campaign(lock, faults=[("client-pause", {})], seed=3)
        path = run_dir_for(tmp_path, campaign)
        assert len(path.name.encode()) <= 255, len(path.name)
        assert path.name.endswith("-client-pause-s3")
        names.append(path.name)
    assert names[0] != names[1]  # the cut part's hash tells them apart
    assert run_dir_for(tmp_path, Campaign("lua", seed=1)).name.endswith("-lua-no-faults-s1")
