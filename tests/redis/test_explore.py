"""The explorer on real processes: it finds and shrinks "A releases B's lock", a step program
replays to the same verdict, the run directory's ``test_replay.py`` fails under pytest the way
the exploration did, a wait ends once every lease and key has run out (and not before),
programs never depend on what Redis answered, an exploration of a lock that holds exits 0,
and ``run --search`` tries drawn schedules (bad input: tests/pure/test_explore_input.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import check_file
from chaos.cli import main
from chaos.explore import ExploreResult, Program, Step, explore, replay
from chaos.explore.machine import Failure
from chaos.explore.rundir import PROGRAM, REPLAY, write_run_dir
from chaos.explore.session import ENDED_EARLY
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SetNxPxLock

# Seed 004's "A releases B's lock", as the explorer shrinks it: c1's key expires while it
# waits, c2 takes the lock, c1's plain DEL removes c2's key, c1 takes the lock again.
# 300 ms: c1's stale DEL must land while c2's key still lives, one TTL after c2 took it;
# at 100 ms a loaded machine's scheduling gap let the key expire first, and the replay passed.
A_RELEASES_B = Program(
    lock="del-release",
    ttl_ms=300,
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


def run_pytest(test_file: Path) -> subprocess.CompletedProcess[str]:
    """Run a replay file under pytest in its own process, as a user would."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=test_file.parent, check=False
    )


def test_a_program_replays_to_the_same_hard_verdict_every_time(tmp_path: Path) -> None:
    for attempt in range(2):
        verdict, outcomes = replay(A_RELEASES_B, history_path=tmp_path / f"h{attempt}.jsonl")
        assert outcomes == ["granted", ENDED_EARLY, "granted", "returned true", "granted"]
        assert verdict.verdict == "hard"
        assert "c1 released c2's lock" in verdict.explanations[0]


def test_the_same_program_with_the_lua_lock_holds(tmp_path: Path) -> None:
    program = Program(**{**A_RELEASES_B.to_json(), "lock": "lua", "steps": A_RELEASES_B.steps})
    verdict, outcomes = replay(program, history_path=tmp_path / "h.jsonl")
    assert outcomes[3] == "returned false"  # compare-and-delete: not c1's key any more
    assert verdict.hard_violations == 0


def test_a_wait_ends_once_every_lease_has_run_out_even_one_whose_key_is_gone(
    tmp_path: Path,
) -> None:
    # c1's stale DEL removes c2's key at once, but c2's lease stays valid (by its claim) for
    # a TTL: the wait after it must last that long, and it ends early (not the 1.5×TTL asked;
    # bench/timings.py measures how soon).
    program = A_RELEASES_B.with_steps([*A_RELEASES_B.steps[:4], Step("sleep", ttls=1.5),
                                       Step("acquire", "c2")])
    history = tmp_path / "h.jsonl"
    _, outcomes = replay(program, history_path=history)
    assert outcomes[4] == ENDED_EARLY
    events = h.read_history(history)
    c2_lease = next(e.valid_until for e in events if e.process == "c2" and e.type == h.OK)
    last_ask = [e.t for e in events if e.f == h.ACQUIRE and e.type == h.INVOKE][-1]
    assert c2_lease is not None and c2_lease < last_ask


def test_a_wait_with_a_renewing_holder_lasts_its_full_length(tmp_path: Path) -> None:
    program = A_RELEASES_B.with_steps([Step("acquire", "c1"), Step("sleep", ttls=1.5),
                                       Step("acquire", "c2")])
    program = Program(**{**program.to_json(), "lock": "watchdog", "steps": program.steps})
    history = tmp_path / "h.jsonl"
    _, outcomes = replay(program, history_path=history)
    assert outcomes == ["granted", "", "refused"]  # the watchdog kept c1's lease alive
    asks = [e.t for e in h.read_history(history) if e.f == h.ACQUIRE and e.type == h.INVOKE]
    assert asks[1] - asks[0] >= 150_000_000


def test_a_campaign_that_holds_a_users_lock_to_renewing_explores_it_so(tmp_path: Path) -> None:
    """``--renews`` (the audit's explore phase sets it once its warm-up saw a user's lock
    renew) reaches the clients of every program explored, and of its replay: their start
    event declares it, so the checker judges the lock's lapses. Programs once dropped it."""
    lock = "chaos.locks.watchdog:make"  # the bundled watchdog as a user's: it declares nothing
    for renews in (True, False):
        campaign = Campaign(lock, renews=renews, clients=2, ttl_ms=100)
        result = explore(campaign, max_examples=2, steps=3)
        assert result.programs and all(p.renews is renews for p in result.programs)
        history = tmp_path / f"renews-{renews}.jsonl"
        replay(result.programs[0], history_path=history)
        start = next(e for e in h.read_history(history) if e.f == h.START)
        assert start.value.get("renews", False) is renews, start.value


def test_the_replay_file_fails_under_pytest_with_the_story(tmp_path: Path) -> None:
    history = tmp_path / "found.jsonl"
    verdict, outcomes = replay(A_RELEASES_B, history_path=history)
    failure = Failure(A_RELEASES_B, outcomes, verdict, history.read_bytes())
    campaign = Campaign(lock="del-release", ttl_ms=A_RELEASES_B.ttl_ms, clients=2)
    run_dir = write_run_dir(tmp_path / "out", campaign, failure, {"steps": 5})
    for name in ("history.jsonl", "verdict.json", "program.json", REPLAY, "report.html"):
        assert (run_dir / name).is_file(), name
    done = run_pytest(run_dir / REPLAY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "del-release broke (hard) under this program" in done.stdout
    assert "4. c1 releases the lock → returned true" in done.stdout
    assert "c1 released c2's lock" in done.stdout


# A user's lock whose release is GET, compare, then {delete}: DEL as 004's wrongReleaseLock2,
# or UNLINK — just as wrong, and a program stopping its clients before DEL never stops them.
USERS_LOCK = """
from chaos.locks.parts import SetNxPxLock


class Lock(SetNxPxLock):
    def release(self, lease):
        if self.redis.get(self.key) == lease.token:
            return bool(self.redis.{delete}(self.key))
        return False


def make_lock(ctx):
    return Lock(ctx)
"""
# The story explore shrinks GET-then-DEL to: c1 stops before its DEL, its key expires, c2
# takes the lock, c1's DEL removes c2's key, c1 takes the lock too.
STOPPED_BEFORE_DEL = Program(
    lock="mylock:make_lock", ttl_ms=300, clients=2, topology="standalone", nodes=1,
    steps=(
        Step("contend", params={"order": ["c1", "c2"]}),
        Step("release", "c1", ref="f1", params={"command": "DEL", "op": "release"}),
        Step("sleep", ttls=1.5),
        Step("contend", params={"order": ["c2", "c1"]}),
    ),
)


def test_a_replay_finds_its_lock_anywhere_and_never_passes_on_a_point_not_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """test_replay.py of a user's ``mylock:make_lock`` (found in the directory explore ran
    in) runs from another directory and fails as the lock broke; once the release is
    GET-then-UNLINK the program's pause point before DEL is never reached, and the replay
    fails as inconclusive, saying what the lock sends now, instead of passing on nothing."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "mylock.py").write_text(USERS_LOCK.format(delete="delete"))
    monkeypatch.chdir(project)
    history = tmp_path / "found.jsonl"
    verdict, outcomes = replay(STOPPED_BEFORE_DEL, history_path=history)
    assert verdict.verdict == "hard", (outcomes, verdict.explanations)
    failure = Failure(STOPPED_BEFORE_DEL, outcomes, verdict, history.read_bytes())
    campaign = Campaign(lock="mylock:make_lock", ttl_ms=300, clients=2)
    run_dir = write_run_dir(tmp_path / "out", campaign, failure, {"steps": 4})
    monkeypatch.chdir(tmp_path)
    text = (run_dir / REPLAY).read_text()
    assert f"ROOT = {str(project)!r}" in text and "EFFECTIVE = ['f1']" in text

    done = run_pytest(run_dir / REPLAY)  # from the run directory: not where the lock is
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mylock:make_lock broke (hard) under this program" in done.stdout

    (project / "mylock.py").write_text(USERS_LOCK.format(delete="unlink"))
    done = run_pytest(run_dir / REPLAY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "inconclusive: this replay did not test mylock:make_lock" in done.stdout
    assert "client-pause-at:command=DEL never reached" in done.stdout
    assert "try command=UNLINK" in done.stdout


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


def test_an_exploration_that_never_exercised_the_lock_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock whose acquire always raises: no program breaks it, and none tested it either.
    explore said "no violation" and exited 0; now it says why it tested nothing, exit 3."""
    lock = f"{Path(__file__).resolve().parent / 'broken_locks.py'}:acquire_raises"
    code = main(["explore", "--lock", lock, "--max-examples", "3", "--steps", "4",
                 "--out", str(tmp_path)])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 3, out
    assert "inconclusive — did not test the lock" in out
    assert "the lock was never acquired: every acquire raised RuntimeError: boom" in out


@pytest.fixture(scope="module")
def del_release(tmp_path_factory: pytest.TempPathFactory) -> ExploreResult:
    """``explore --lock del-release`` (seed 1), once for this module. A 500 ms TTL: at 100 ms,
    and at 200 ms on a slower machine of the same kind (steps of ~50 ms each under the suite's
    load), a step held up let leases run out on their own, and the program found, shrunk and
    replayed was one of timing (7-12 steps, another cause, or a replay that passed or did not
    reach its pause point). Under three busy loops: 200 ms failed, 500 ms passed 3 of 3."""
    out = tmp_path_factory.mktemp("explore")
    return explore(Campaign(lock="del-release", ttl_ms=500, clients=2, seed=1), out=out)


def test_explore_finds_a_releases_b_and_shrinks_it(del_release: ExploreResult) -> None:
    found = del_release.failure
    assert found is not None, del_release.summary()
    assert len(found.program.steps) <= 6, found.program.numbered(found.outcomes)
    first = found.verdict.violations[0]
    assert (first.kind, first.cause) == ("hard", "foreign-release")
    assert {"sleep", "release"} <= {step.kind for step in found.program.steps}
    assert del_release.run_dir is not None
    on_disk = json.loads((del_release.run_dir / PROGRAM).read_text())
    assert Program.from_json(on_disk) == found.program
    assert on_disk["outcomes"] == found.outcomes
    assert check_file(del_release.run_dir / "history.jsonl").verdict == "hard"


def test_its_replay_file_fails_under_pytest(del_release: ExploreResult) -> None:
    assert del_release.run_dir is not None
    done = run_pytest(del_release.run_dir / REPLAY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "del-release broke (hard) under this program" in done.stdout
    assert "released" in done.stdout


# A lock that asks Redis and refuses every time: the opposite of lua's answers.
REFUSING = f"{Path(__file__).resolve()}:refusing_lock"


class RefusingLock(SetNxPxLock):
    def acquire(self) -> Lease | None:
        self.redis.get(self.key)
        return None

    def release(self, lease: Lease) -> bool:
        return False


def refusing_lock(ctx: LockContext) -> RefusingLock:
    return RefusingLock(ctx)


def test_programs_never_depend_on_what_redis_answered() -> None:
    """Same seed, a lock granting every free lock against one refusing everything: the same
    programs, step for step — the rule draws from the in-memory model, never from Redis."""
    runs = [
        explore(Campaign(lock=lock, ttl_ms=100, clients=2, seed=5), max_examples=6, steps=8)
        for lock in ("lua", REFUSING)
    ]
    assert not any(run.failed for run in runs)
    granted, refused = ([program.steps for program in run.programs] for run in runs)
    assert len(granted) >= 6 and sum(map(len, granted)) > 20
    assert granted == refused


def test_run_search_tries_drawn_schedules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "run", "--lock", "lua", "--faults", "latency", "--search", "1", "--duration", "1",
        "--clients", "2", "--out", str(tmp_path), "--json",
    ])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["search"] == "search: 1 schedules tried, none broke the lock"
    assert json.loads((Path(out["run_dir"]) / "schedule.json").read_text())["events"]
