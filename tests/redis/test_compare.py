"""``lockchaos compare`` on real topologies, whole and in shards merged back (its plan, the
demo's, and its bad input: tests/pure/test_compare_plan.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from junitparser import Failure, JUnitXml, Skipped

from chaos.checker import Verdict
from chaos.checker.verdict import RANK
from chaos.cli import main
from chaos.experiments.truth_table import CELLS
from chaos.report.matrix import exit_status, load_matrix
from chaos.topology.node import wait_until
from chaos.topology.processes import alive


def test_two_locks_by_two_faults_match_the_truth_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lua × slow-work (soft, lost writes) and lua × failover (hard) are truth-table cells;
    redlock × failover cannot run (Sentinel against independent masters): n/a, no crash.
    6 s: long enough for lua × slow-work's claim (20/20 at 6 s in docs/results.md);
    lua × failover stops at its first hard violation."""
    code = main(["compare", "--locks", "lua,redlock", "--faults", "slow-work,failover",
                 "--duration", "6", "--out", str(tmp_path)])
    assert code == 1  # lua × failover is hard: a CI step running this fails
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
            assert cell.check(verdict) is None, (cell.name, cell.check(verdict),
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


def test_an_inconclusive_cell_says_why_everywhere_and_fails_the_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lua × client-pause-at: the fault's default point, before a DEL, is never reached (lua
    releases with EVAL). The cell says so, with what would reach the lock, in the table,
    index.html, matrix.json and junit.xml, and compare exits 3: a comparison that tested
    nothing must not pass a CI step (it exited 0, with "why": null)."""
    code = main(["compare", "--locks", "lua", "--faults", "client-pause-at", "--duration", "3",
                 "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 3, out
    said = "client-pause-at:command=DEL never reached"
    assert said in out and "try command=EVAL" in " ".join(out.split())
    (directory,) = tmp_path.iterdir()
    (cell,) = load_matrix(directory / "matrix.json").cells
    # Nothing else found, it is inconclusive, and that is its why; a loaded machine can let a
    # lease lapse mid-work (soft) beside it, and the writes of that hold be lost (data): the
    # cell's verdict and why are the worst it found, and it still says what it did not test.
    assert cell.verdict in ("inconclusive", "soft", "data") and cell.untested
    assert said in cell.untested
    assert said in cell.runs[0].inconclusive_reasons[0]
    if cell.verdict == "inconclusive":
        assert cell.why == cell.untested
    assert said in (directory / "index.html").read_text()
    (suite,) = list(JUnitXml.fromfile(str(directory / "junit.xml")))
    (case,) = list(suite)
    (failure,) = [result for result in case.result if isinstance(result, Failure)]
    assert failure.type == "inconclusive" and said in (failure.text or "")
    assert main(["compare", "--locks", "lua", "--faults", "client-pause-at", "--duration", "3",
                 "--allow-inconclusive", "--out", str(tmp_path / "allowed")]) == 0


SHARD_ARGS = ["compare", "--locks", "del-release,lua", "--faults", "slow-work,latency",
              "--duration", "2"]


def test_two_shards_merge_into_the_whole_comparison(tmp_path: Path) -> None:
    shard_dirs = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        code = main([*SHARD_ARGS, "--shard", f"{k}/2", "--out", str(out)])
        (directory,) = out.iterdir()
        shard = load_matrix(directory / "matrix.json")
        assert shard.shard == [k, 2] and code == exit_status(shard)
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


def test_two_jobs_run_the_shards_at_once_and_merge_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--jobs 2``: each job a process running one shard, every finished cell printed as it
    comes, one merged directory in plan order, and nothing of the jobs left running."""
    started = time.monotonic()
    code = main([*SHARD_ARGS, "--jobs", "2", "--out", str(tmp_path)])
    wall_s = time.monotonic() - started
    (merged,) = tmp_path.iterdir()
    matrix = load_matrix(merged / "matrix.json")
    # The merged whole's status, whatever the cells found: in a 2 s run del-release ×
    # slow-work is hard only when a third client's acquire lands between a late DEL and the
    # next holder's expiry, which a slower machine missed (data and soft, exit 0).
    assert code == exit_status(matrix)
    assert [(c.lock, c.faults) for c in matrix.cells] == [
        ("del-release", "slow-work"), ("del-release", "latency"),
        ("lua", "slow-work"), ("lua", "latency"),
    ]
    assert all(cell.status == "done" for cell in matrix.cells) and matrix.shard is None
    assert matrix.wall_s <= wall_s + 0.05  # the whole's time (to a tenth), not the shards' sum
    assert JUnitXml.fromfile(str(merged / "junit.xml")).tests == 4
    assert (merged / "index.html").is_file()
    shown = capsys.readouterr()
    assert all(f"{lock} × {faults}" in shown.err for lock, faults in (
        ("del-release", "slow-work"), ("lua", "latency")))  # fmt: skip
    assert not _jobs_running()


def test_jobs_and_a_shard_together_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SHARD_ARGS, "--jobs", "2", "--shard", "1/2", "--out", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err


def _jobs_running() -> list[str]:
    """Processes of ``chaos.experiments.jobs`` still alive (their pids)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"chaos.experiments.jobs" in (proc / "cmdline").read_bytes():
                found.append(proc.name)
        except OSError:
            continue  # it ended while we looked
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_nothing_of_the_jobs_outlives_a_killed_compare(tmp_path: Path, sig: signal.Signals
                                                       ) -> None:
    """The jobs die with the runner (SIGTERM: it stops them; SIGKILL: the kernel tells them),
    and each tears its own topology down: no worker, node or proxy of theirs is left."""
    runner = subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", "compare", "--locks", "lua,del-release",
         "--faults", "latency", "--duration", "60", "--full", "--jobs", "2",
         "--out", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: len([p for p in tmp_path.glob("**/history.jsonl")
                         if p.stat().st_size > 10_000]) == 2,
            "both jobs' runs to be under way", timeout_s=60,
        )  # fmt: skip
        descendants = _descendants(runner.pid)
        assert len(descendants) >= 2 * (5 + 3)  # per job: workers, nodes, proxy, reaper
    finally:
        runner.send_signal(sig)
        runner.wait(timeout=60)
    wait_until(lambda: not any(alive(pid) for pid in descendants), "the jobs' processes to die",
               timeout_s=30)  # fmt: skip
    assert not _jobs_running()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, …)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found
