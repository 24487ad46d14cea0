"""``within_lease``: only a failure the machine outlasted a lease for is run again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lease_span import MachineStalled, machine_stall, within_lease
from test_checker_support import History

pytest_plugins = ["pytester"]


def test_a_failure_within_the_lease_stands() -> None:
    with pytest.raises(AssertionError), within_lease(1000, "a quick span"):
        raise AssertionError("the lock broke")


def test_a_failure_after_the_machine_outlasted_the_lease_is_a_stall() -> None:
    with pytest.raises(MachineStalled, match=r"took .* ms of a 30 ms lease"), \
            within_lease(30, "a slow span"):
        time.sleep(0.03)
        raise AssertionError("the lease lapsed")


def test_a_slow_span_that_holds_is_no_failure() -> None:
    with within_lease(30, "a slow span"):
        time.sleep(0.03)



# -- a whole run the machine stalled ----------------------------------------------------------


def _run(tmp_path: Path, *, stall_ms: float, fault: bool = False, point: bool = False) -> Path:
    """A 200 ms lease's run in which c1 did not run for ``stall_ms`` from 100 ms: while a
    client-pause stopped it (``fault``), after it reached a pause point (``point``), or with
    nothing that stopped it."""
    run = History().acquire("c1", 50).write("c1", 60, "c1:0:1")
    if fault:
        run.fault("f1", "client-pause", 90, 100 + stall_ms + 10, target="c1")
    if point:
        run.pause_point("c1", 95, "release EVAL")
    run.stall("c1", 100, 100 + stall_ms).release("c1", 120 + stall_ms)
    return run.final_read(400, ["c1:0:1"]).save(tmp_path / "history.jsonl")


def test_a_client_the_machine_stopped_for_most_of_a_lease_is_a_machine_stall(
    tmp_path: Path,
) -> None:
    said = machine_stall(_run(tmp_path, stall_ms=150))
    assert said is not None and said.startswith("c1 did not run for 150 ms of a 200 ms lease")


def test_a_short_stall_one_a_fault_or_a_point_made_or_one_beside_a_hard_is_not_the_machines(
    tmp_path: Path,
) -> None:
    assert machine_stall(_run(tmp_path, stall_ms=100)) is None  # under 2/3 of the lease
    assert machine_stall(_run(tmp_path, stall_ms=150, fault=True)) is None
    assert machine_stall(_run(tmp_path, stall_ms=150, point=True)) is None
    hard = History().acquire("c1", 50, lease=300).acquire("c2", 60, lease=300)
    hard.stall("c1", 100, 250).release("c1", 270).release("c2", 280)
    assert hard.check().hard_violations == 1
    assert machine_stall(hard.final_read(400, []).save(tmp_path / "history.jsonl")) is None
    (tmp_path / "history.jsonl").write_text("not a history\n")
    assert machine_stall(tmp_path / "history.jsonl") is None


TEST_ABOUT_A_RUN = """
import shutil
from pathlib import Path

def test_a_verdict(tmp_path):
    shutil.copy({history!r}, tmp_path / "history.jsonl")
    assert False, "the verdict was not what the test expected"
"""


@pytest.mark.parametrize("stall_ms, reruns", [(150, 2), (100, 0)])
def test_a_failed_assertion_about_a_run_the_machine_stalled_runs_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    stall_ms: float, reruns: int,
) -> None:
    """The hook tests/conftest.py takes: twice more when the run's history shows the
    machine's stall (then it fails, still), never when it does not. (A pytest of its own:
    in this one's process, its reruns would be counted in this run's summary.)"""
    history = _run(tmp_path, stall_ms=stall_ms)
    pytester.makepyfile(TEST_ABOUT_A_RUN.format(history=str(history)))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))  # lease_span
    result = pytester.runpytest_subprocess("-p", "lease_span", "--reruns", "2", "--only-rerun",
                                "MachineStalled", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("rerun", 0) == reruns and outcomes["failed"] == 1, outcomes
    if reruns:
        result.stdout.fnmatch_lines(["*MachineStalled: c1 did not run for 150 ms*"])
