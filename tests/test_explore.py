"""The explorer's pieces on real processes: a step program replays to the same verdict, the
run directory's ``test_replay.py`` fails under pytest the way the exploration did, an
exploration of a lock that holds exits 0, and bad input is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaos.campaign import Campaign
from chaos.cli import main
from chaos.explore import Program, Step, explore, replay
from chaos.explore.machine import Failure
from chaos.explore.rundir import REPLAY, write_run_dir

# Seed 004's "A releases B's lock", as the explorer shrinks it: c1's key expires while it
# waits, c2 takes the lock, c1's plain DEL removes c2's key, c1 takes the lock again.
A_RELEASES_B = Program(
    lock="del-release",
    ttl_ms=100,
    clients=2,
    topology="standalone",
    nodes=1,
    steps=(
        Step("acquire", "c1"),
        Step("sleep", ttls=1.5),
        Step("acquire", "c2"),
        Step("release", "c1"),
        Step("acquire", "c1"),
    ),
)


def test_a_program_replays_to_the_same_hard_verdict_every_time(tmp_path: Path) -> None:
    for attempt in range(2):
        verdict, outcomes = replay(A_RELEASES_B, history_path=tmp_path / f"h{attempt}.jsonl")
        assert outcomes == ["granted", "", "granted", "returned true", "granted"]
        assert verdict.verdict == "hard"
        assert "c1 released c2's lock" in verdict.explanations[0]


def test_the_same_program_with_the_lua_lock_holds(tmp_path: Path) -> None:
    program = Program(**{**A_RELEASES_B.to_json(), "lock": "lua", "steps": A_RELEASES_B.steps})
    verdict, outcomes = replay(program, history_path=tmp_path / "h.jsonl")
    assert outcomes[3] == "returned false"  # compare-and-delete: not c1's key any more
    assert verdict.hard_violations == 0


def test_the_replay_file_fails_under_pytest_with_the_story(tmp_path: Path) -> None:
    history = tmp_path / "found.jsonl"
    verdict, outcomes = replay(A_RELEASES_B, history_path=history)
    failure = Failure(A_RELEASES_B, outcomes, verdict, history.read_bytes())
    campaign = Campaign(lock="del-release", ttl_ms=100, clients=2)
    run_dir = write_run_dir(tmp_path / "out", campaign, failure, {"steps": 5})
    for name in ("history.jsonl", "verdict.json", "program.json", REPLAY, "report.html"):
        assert (run_dir / name).is_file(), name
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(run_dir / REPLAY)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "del-release broke (hard) under this program" in done.stdout
    assert "4. c1 releases the lock → returned true" in done.stdout
    assert "c1 released c2's lock" in done.stdout


def test_an_exploration_of_a_lock_that_holds_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "explore", "--lock", "lua", "--max-examples", "4", "--steps", "6", "--clients", "2",
        "--out", str(tmp_path),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no violation at or above hard" in out
    assert not list(tmp_path.iterdir())  # no run directory without a failure


def test_explore_finds_a_releases_b_in_del_release() -> None:
    result = explore(
        Campaign(lock="del-release", ttl_ms=100, clients=3, seed=3), max_examples=5, steps=12
    )
    assert result.failure is not None, result.summary()
    assert result.failure.verdict.hard_violations > 0
    assert any("released" in e for e in result.failure.verdict.explanations)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lock", "nope"], "unknown lock 'nope'"),
        (["--lock", "lua", "--max-examples", "0"], "--max-examples must be between"),
        (["--lock", "lua", "--faults", "bogus"], "unknown fault 'bogus'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
