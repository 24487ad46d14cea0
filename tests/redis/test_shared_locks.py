"""Locks beyond the mutex, live: a semaphore whose count and add are two round trips grants
more permits than it has, and the checker calls it hard in its own words; one whose permits
never expire leaks a crashed holder's, and the checker calls it leaked permits; the reference
semaphore counts permits, the read-write lock shares reads and lets a writer in alone. (Their
truth-table cells run in tests/redis/test_truth_table.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

from chaos.campaign import Campaign
from chaos.checker import check_file
from chaos.history import EXCLUSIVE, SHARED
from chaos.locks import build_context, lua_semaphore, rwlock
from chaos.locks.contract import LockContext
from chaos.nemesis import ScheduledNemesis, generate
from chaos.nemesis.schedule import Schedule
from chaos.topology import LocalTopology
from chaos.workload import run_workload

LEAK = re.compile(r"^liveness: from .* the live holders took at most [4-7] of the 8 permits, "
                  r"yet \d+ acquires that fitted in the rest failed: permits leaked, held by no "
                  r"live client\. c\d+ crashed at [\d.]+ s holding [12] permits?")
EXCESS = re.compile(r"^hard: (c\d+, )*c\d+ and c\d+ held (\d+) permits of a 2-permit semaphore "
                    r"from ")


def test_a_semaphore_that_counts_then_adds_grants_too_many_permits(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    # What it grants comes from its own declaration (``grants``), the permits from the run.
    config = Campaign("broken_locks:racy_semaphore", ttl_ms=500, work_ms=30, duration_s=4,
                      capacity=2, extend_during_work=False).workload()
    assert (config.capacity, config.modes) == (2, (SHARED,))
    run_workload(single, config, path, clients=10, seed=1)
    verdict = check_file(path)
    excesses = [v for v in verdict.violations
                if v.kind == "hard" and "-permit semaphore" in v.explanation]
    assert excesses, verdict.explanations[:3]
    match = EXCESS.match(excesses[0].explanation)
    assert match and int(match.group(2)) > 2, excesses[0].explanation
    assert verdict.first_hard_violation_s is not None


def test_a_semaphore_whose_permits_never_expire_leaks_them_when_holders_crash(
    single: LocalTopology, tmp_path: Path
) -> None:
    """Two holders killed (SIGKILL) leak at most 4 of the 8 permits: the others go on with
    fewer, and the checker names what leaked."""
    path = tmp_path / "history.jsonl"
    config = Campaign("broken_locks:leaky_semaphore", ttl_ms=200, work_ms=50, duration_s=5,
                      capacity=8, extend_during_work=False).workload()
    drawn = generate([("client-crash", {})], seed=1, duration_s=5, ttl_ms=200)
    kills = tuple(event for event in drawn.events if "command" not in event.params)[:2]
    run_workload(single, config, path, clients=5, seed=1,
                 nemesis=ScheduledNemesis(Schedule(drawn.seed, kills)))
    verdict = check_file(path)
    assert verdict.hard_violations == 0, verdict.explanations[:3]
    leaks = [v for v in verdict.violations if v.cause == "leaked-permits"]
    assert leaks and leaks[0].kind == "liveness", verdict.explanations[:3]
    assert LEAK.match(leaks[0].explanation), leaks[0].explanation


def _ctx(topo: LocalTopology, cid: str, capacity: int | None) -> LockContext:
    return build_context(topo.client_view(cid), lock_name="lock:shared", ttl_ms=2000,
                         capacity=capacity)


def test_the_reference_semaphore_counts_permits(single: LocalTopology) -> None:
    sem = [lua_semaphore.make(_ctx(single, f"c{i}", 3)) for i in (1, 2, 3)]
    two = sem[0].acquire(mode=SHARED, permits=2)
    assert two
    assert not sem[1].acquire(mode=SHARED, permits=2)  # 2 + 2 > 3
    one = sem[1].acquire(mode=SHARED, permits=1)
    assert one
    assert not sem[2].acquire(mode=SHARED, permits=1)  # full
    assert sem[0].release(two) is True
    assert sem[0].release(two) is False  # only our own permits, once
    assert sem[2].acquire(mode=SHARED, permits=2)


def test_the_reference_rwlock_shares_reads_and_excludes_writes(single: LocalTopology) -> None:
    rw = [rwlock.make(_ctx(single, f"c{i}", None)) for i in (1, 2, 3)]
    read1 = rw[0].acquire(mode=SHARED, permits=1)
    read2 = rw[1].acquire(mode=SHARED, permits=1)
    assert read1 and read2
    assert not rw[2].acquire(mode=EXCLUSIVE, permits=1)  # readers hold
    assert not rw[0].acquire(mode=SHARED, permits=1)  # a writer waits: no new reader
    assert rw[0].release(read1) is True and rw[1].release(read2) is True
    write = rw[2].acquire(mode=EXCLUSIVE, permits=1)
    assert write
    assert not rw[0].acquire(mode=SHARED, permits=1)
    assert rw[2].release(write) is True
    assert rw[0].acquire(mode=SHARED, permits=1)
