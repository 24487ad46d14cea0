"""`compare --servers`: the same cells on every server image lockchaos builds (Redis 7.0 and
8.0, Valkey 8.1 and 9.1), one matrix, run as two jobs (each a shard of the servers, merged
back in plan order). A file of its own: at about a minute it is still one of the docker
group's longest, and two pytest workers share files better in smaller pieces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.report.matrix import exit_status, load_matrix
from chaos.topology import images


@pytest.mark.slow  # a sweep over every server: `make test-long`
# Eight failover runs on two jobs: each a Sentinel topology in containers, 10-15 s on a good
# day and 30-35 s on a slow one (140 s in all, past the suite's 120 s bound on tests).
@pytest.mark.timeout(360)
@pytest.mark.images(*images.SERVERS, "toxiproxy")
@pytest.mark.parametrize(("locks", "column", "seeds"), [("del-release,lua", "slow-work", 1),
                                                        ("lua", "failover", 2)])
def test_compare_across_servers_matches_the_truth_table_on_each(
    locks: str, column: str, seeds: int, docker_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare --servers … --jobs 2`: one matrix whose rows are `lock @ server` in plan
    order, every cell as the truth table claims on every server (split in two columns to
    keep each test near half a minute; del-release × failover has no claim). A failover's
    4 s run once found no double grant on one server (a fresh clone's CI): a seed that found
    none says nothing, so that column runs two, and a cell must match in one of them."""
    servers = list(images.SERVERS)
    args = ["compare", "--provider", "docker", "--servers", ",".join(servers), "--locks",
            locks, "--faults", column, "--duration", "4", "--jobs", "2", "--seeds", str(seeds),
            "--out", str(docker_out)]
    code = main(args)
    index = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == exit_status(load_matrix(index.parent / "matrix.json"))  # 1: a hard cell
    matrix = json.loads((index.parent / "matrix.json").read_text())
    rows = [f"{lock} @ {server}" for lock in locks.split(",") for server in servers]
    assert matrix["locks"] == rows
    assert [cell["server"] for cell in matrix["cells"]] == servers * len(locks.split(","))
    for cell in matrix["cells"]:
        assert cell["status"] == "done" and cell["expected"] is not None, cell["lock"]
        assert cell["expected"]["matched"] >= 1, (cell["lock"], cell["runs"][0]["truth_problem"])
        run_dir = index.parent / cell["runs"][0]["run_dir"]
        recorded = json.loads((run_dir / "campaign.json").read_text())
        assert recorded["server"] == cell["server"]
        assert images.image_for(cell["server"]) in recorded["images"]
    page = index.read_text()
    assert f"servers {', '.join(servers)}" in page
    assert all(row in page for row in rows)
