"""The explorer beyond the mutex, live: its steps ask a semaphore for permits and a read-write
lock for a mode, the reference locks hold, the semaphore whose count and add are a round trip
apart (``broken_locks:racy_semaphore``, which declares what it grants) is found and shrunk, and
a program with asks replays to its verdict (bad input, ``--capacity`` included:
tests/pure/test_explore_input.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chaos.campaign import Campaign
from chaos.explore import Program, Step, explore, replay
from chaos.explore.rundir import PROGRAM
from chaos.history import EXCLUSIVE, SHARED

RACY = "broken_locks:racy_semaphore"
# Seed 3 finds it in its 9th program (8 s at a 1 s TTL; 10.5 s beside four busy loops);
# shrinking comes after. Which programs come depends on what the steps before answered: a
# lease that lapsed between two steps sends the walk elsewhere, where this story is 1 in
# 10-100 programs (seeds 1-8 at 200 ms: 8 to 96 programs) — 40 programs in 40 s of a fresh
# clone's CI at 200 ms found none.
FIND_BUDGET_S = 60.0

# The racy semaphore's story, as the explorer shrinks it: c2 counts room for its permit and
# stops before adding it; c1 takes all three; c2 resumes and adds its own: four of three.
COUNT_THEN_ADD = Program(
    lock=RACY,
    ttl_ms=1000,  # no lease runs out between two steps, however loaded the machine
    clients=2,
    topology="standalone",
    nodes=1,
    capacity=3,
    steps=(
        Step("acquire", "c2", mode=SHARED, permits=1, ref="f1",
             params={"command": "*", "nth": 4, "op": "acquire"}),
        Step("acquire", "c1", mode=SHARED, permits=3),
        Step("release", "c2"),
    ),
)


def asks(result_programs: list[Program]) -> set[tuple[str | None, int | None]]:
    return {(step.mode, step.permits) for program in result_programs for step in program.steps
            if step.kind in ("acquire", "contend")}


def test_a_program_with_asks_replays_to_the_same_verdict(tmp_path: Path) -> None:
    verdict, outcomes = replay(COUNT_THEN_ADD, history_path=tmp_path / "racy.jsonl")
    assert outcomes[:2] == ["stopped at its pause point", "granted"]
    assert outcomes[2].startswith("resumed (acquire granted)"), outcomes
    assert verdict.verdict == "hard"
    assert "4 permits of a 3-permit semaphore" in verdict.explanations[0]


def test_the_same_program_with_the_reference_semaphore_holds(tmp_path: Path) -> None:
    program = Program(**{**COUNT_THEN_ADD.to_json(), "lock": "lua-semaphore",
                         "steps": COUNT_THEN_ADD.steps})
    verdict, outcomes = replay(program, history_path=tmp_path / "lua.jsonl")
    # One script: its acquire has no 4th command to stop before, and the room it counted
    # is the room it takes; c1's three permits do not fit beside c2's one.
    assert outcomes[:2] == ["granted", "refused"]
    assert verdict.hard_violations == 0


@pytest.mark.parametrize("lock", ["lua-semaphore", "rwlock"])
def test_the_reference_locks_hold_under_asks_of_every_kind(lock: str) -> None:
    result = explore(Campaign(lock=lock, ttl_ms=50, clients=2, seed=2), max_examples=15,
                     steps=12)
    assert not result.failed, result.failure and result.failure.program.numbered()
    asked = asks(result.programs)
    if lock == "rwlock":
        assert asked == {(SHARED, 1), (EXCLUSIVE, 1)}
    else:
        assert {permits for _, permits in asked} == {1, 2, 3}
        assert {mode for mode, _ in asked} == {SHARED}


def test_explore_finds_the_racy_semaphore_and_shrinks_it(tmp_path: Path) -> None:
    # 1 s, as COUNT_THEN_ADD's: no lease lapses between two steps on a loaded machine, so
    # the programs drawn are the ones drawn unloaded (at 50 ms the shrunk program also kept
    # a fifth step)
    campaign = Campaign(lock=RACY, ttl_ms=1000, clients=2, seed=3)
    result = explore(campaign, max_examples=1000, out=tmp_path,
                     until=time.monotonic() + FIND_BUDGET_S)
    found = result.failure
    assert found is not None, result.summary()
    assert len(found.program.steps) <= 4, found.program.numbered(found.outcomes)
    assert found.verdict.verdict == "hard"
    assert "-permit semaphore" in found.verdict.explanations[0]
    assert result.run_dir is not None
    on_disk = json.loads((result.run_dir / PROGRAM).read_text())
    assert on_disk["capacity"] == 3
    assert Program.from_json(on_disk) == found.program


def test_explore_asks_within_the_runs_capacity() -> None:
    result = explore(Campaign(lock="lua-semaphore", capacity=2, ttl_ms=50, clients=2, seed=3),
                     max_examples=6, steps=10)
    assert not result.failed
    assert {program.capacity for program in result.programs} == {2}
    assert {permits for _, permits in asks(result.programs)} == {1, 2}
