"""The corpus's Go and Node drivers (issue 35), on real Redis: ``bsm-redislock``
(github.com/bsm/redislock v0.9.4 on the Go kit), ``node-redis-lock`` (npm redis-lock 1.0.0 on
node-redis v4) and ``sesame-redlock`` (@sesamecare-oss/redlock 1.4.0 on ioredis, N masters),
each judged as its source predicts: the two sound ones never hard, redis-lock hard where its
release's plain DEL runs late. (docs/driver-protocol.md's table says what each runs.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cells import QUIET_DURATION_S, quiet_duration_s, run_cell
from prerequisites import driver_gap, need

from chaos import history as h
from chaos.campaign import Campaign
from chaos.experiments.execute import run_campaign
from chaos.experiments.truth_table import Cell, _hard, _no_hard
from chaos.locks.context import build_context
from chaos.lockspec import resolve
from chaos.topology import LocalTopology

CORPUS = ["bsm-redislock", "node-redis-lock", "sesame-redlock"]
TTL_MS = 200


@pytest.mark.parametrize("name", CORPUS)
def test_a_corpus_driver_without_faults_passes(tmp_path: Path, name: str) -> None:
    """Lock cycles on the topology it declares (sesame-redlock: three masters), every grant
    the driver's own token, and extends granted for a lock that has one (not every one: on a
    loaded machine a holder may be late enough for its lease to have ended)."""
    need(driver_gap(name))
    # At a 1 s TTL, as the truth table's no-violation claims: redis-lock's own flaw (a plain
    # DEL behind a clock check) needs no fault, only a holder stalled across its lease's end,
    # and at 200 ms a loaded CI's stalls did that (hard: two leases valid at once for 76 ms).
    outcome = run_campaign(Campaign.from_options(name, "", duration_s=3.0, ttl_ms=1000),
                           tmp_path)
    assert outcome.exit_status == 0, outcome.verdict.explanations[:3]
    events = h.read_history(outcome.run_dir / "history.jsonl")
    acquired = [e for e in events if e.f == h.ACQUIRE and e.type == h.OK]
    assert len(acquired) >= 5
    assert all(str(e.token).startswith(f"{e.process}:") for e in acquired)
    extended = [e for e in events if e.f == h.EXTEND and e.type == h.OK]
    assert bool(extended) is (name != "node-redis-lock")


def test_redis_lock_releases_the_next_holders_lock_when_its_del_runs_late(tmp_path: Path) -> None:
    """errorception/redis-lock#29: ``done()`` checks its own clock, then sends a plain DEL. A
    holder stopped after the check, before its DEL, deletes the lock another client took
    meanwhile, and a third gets it while the second still holds it."""
    need(driver_gap("node-redis-lock"))
    cell = Cell("node-redis-lock", "client-pause-at:op=release:command=DEL", "hard", _hard,
                "errorception/redis-lock#29", "hard", "released")  # fmt: skip
    run_cell(cell, 20.0, tmp_path)


def test_sesame_redlock_on_five_masters_holds_under_pauses_and_minority_partitions(
    tmp_path: Path,
) -> None:
    """A sound Redlock: pauses past the TTL give soft violations at worst, and a partition of
    a minority of the masters takes nothing from a quorum's grant."""
    need(driver_gap("sesame-redlock"))
    cell = Cell("sesame-redlock", "client-pause,partition:scope=minority", "no hard", _no_hard,
                "Redlock (003)", options=(("nodes", 5),))  # fmt: skip
    run_cell(cell, quiet_duration_s(cell, QUIET_DURATION_S), tmp_path)


def test_redis_lock_tries_once_per_acquire(single: LocalTopology) -> None:
    """The package retries a refused SET every 50 ms, for ever: the driver hands it a client
    whose retries are never sent, so once the holder's key is gone nobody takes it back in
    the background. Its ``done()`` after its own clock says the lease ended sends nothing:
    a definite failure, the key left to expire."""
    need(driver_gap("node-redis-lock"))
    ttl_ms = 1000  # a retry's key would outlive the wait below
    ctx = build_context(single.client_view("c1"), lock_name="k", ttl_ms=ttl_ms)
    lock = resolve("node-redis-lock").factory(ctx)
    key = "lock.k"
    try:
        with single.nodes[0].client() as conn:
            conn.set(key, "someone else's", px=5000)
            assert lock.acquire() is None
            conn.delete(key)
            time.sleep(0.3)  # six of the package's retry delays
            assert conn.exists(key) == 0
            lease = lock.acquire()
            assert lease is not None and lease.validity_ms == ttl_ms
            assert conn.pttl(key) > 0
            time.sleep(ttl_ms / 1000 + 0.05)
            assert lock.release(lease) is False  # not sent: its clock said the lease was over
    finally:
        lock.close()  # type: ignore[attr-defined]
        ctx.close()


def test_sesame_redlock_grants_a_lease_the_acquire_spent_as_the_library_computed_it(
    standalone: LocalTopology,
) -> None:
    """@sesamecare-oss/redlock never checks the time an acquire took against the TTL: writes
    paused on every master for longer than the TTL, its acquire still grants. The driver
    answers ok with the package's validity (TTL less its drift, 1 % + 2 ms, from the
    request), not raised and not turned into a refusal: it ended before the answer came."""
    need(driver_gap("sesame-redlock"))
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=TTL_MS)
    lock = resolve("sesame-redlock").factory(ctx)
    validity = TTL_MS - (round(0.01 * TTL_MS) + 2)
    try:
        lease = lock.acquire()
        assert lease is not None and lease.validity_ms == validity
        assert lock.release(lease) is True
        for node in standalone.nodes:
            with node.client() as conn:
                conn.execute_command("CLIENT", "PAUSE", 300, "WRITE")
        started = time.monotonic()
        lease = lock.acquire()
        took_ms = (time.monotonic() - started) * 1000
        assert lease is not None and lease.validity_ms == validity < took_ms
    finally:
        lock.close()  # type: ignore[attr-defined]
        ctx.close()
