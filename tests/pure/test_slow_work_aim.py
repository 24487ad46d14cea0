"""Whom a fault aims at. Slow-work: a holder with its critical section ahead of it, not one
whose section is behind it (sherlock's audit: slow-work fired as a client-pause of the holder
ended, was aimed at that holder — which woke past its section's end and released — and
"had no effect on the lock in any run"). A fault that holds its holder on after the heal: a
holder at work, not one that has just acquired."""

from __future__ import annotations

import random
import time
from typing import Any, cast

import pytest

from chaos.nemesis import FAULTS
from chaos.nemesis.fault import wait_for_holder
from chaos.workload.harness import WorkloadEnv


class Pool:
    """Holders as the worker pool reports them: ``c1`` has held for a second (a pause just
    let it go), ``c2`` acquires ``fresh_after_s`` from now."""

    def __init__(self, fresh_after_s: float, held_on: frozenset[str] = frozenset()) -> None:
        self.workers = {"c1": None, "c2": None, "c3": None}
        self.fresh_at = time.monotonic() + fresh_after_s
        self.acquired = {"c1": time.monotonic() - 1.0}
        self._held_on = held_on

    def held_on(self, cid: str) -> bool:
        return cid in self._held_on

    def holders(self, acquired_within_ms: float | None = None,
                held_for_ms: float | None = None) -> list[str]:
        if time.monotonic() >= self.fresh_at:
            self.acquired.setdefault("c2", time.monotonic())
        since = 0.0 if acquired_within_ms is None else time.monotonic() - acquired_within_ms / 1e3
        until = time.monotonic() - (held_for_ms or 0.0) / 1e3
        return [cid for cid, at in self.acquired.items() if since <= at <= until]


def env_of(pool: Pool, ttl_ms: int = 1000) -> WorkloadEnv:
    config = type("Config", (), {"ttl_ms": ttl_ms})()
    topology = type("Topology", (), {"nodes": [None]})()  # one node (a partition picks some)
    return cast(WorkloadEnv, type("Env", (), {"pool": pool, "config": config,
                                              "topology": topology})())


def test_slow_work_waits_for_a_holder_with_its_section_ahead() -> None:
    params: dict[str, Any] = {"duration_ms": 0, "work_ms": 3000}
    for seed in range(20):
        env = cast(WorkloadEnv, type("Env", (), {"pool": Pool(fresh_after_s=0.05)})())
        assert FAULTS["slow-work"].aim(env, random.Random(seed), params).client == "c2"


def test_a_holder_an_earlier_fault_holds_on_is_not_aimed_at() -> None:
    """Redisson's holder whose lease a latency had taken, held on after the heal, sent
    nothing: the partition and the reset aimed at it next "had no effect on the lock"."""
    for seed in range(20):
        pool = Pool(fresh_after_s=0.0, held_on=frozenset({"c1"}))
        env = cast(WorkloadEnv, type("Env", (), {"pool": pool})())
        assert FAULTS["reset"].aim(env, random.Random(seed),
                                   {"duration_ms": 250, "toxicity": 1}).client == "c2"
    # held on and the only holder: anyone else, after the wait
    lone = Pool(fresh_after_s=60.0, held_on=frozenset({"c1"}))
    env = cast(WorkloadEnv, type("Env", (), {"pool": lone})())
    picked = wait_for_holder(env, random.Random(1), timeout_s=0.05)
    assert picked in {"c2", "c3"}


@pytest.mark.parametrize("name", ["latency", "partition", "reset", "reply-lost"])
def test_a_fault_that_holds_its_holder_on_hits_one_at_work(name: str) -> None:
    """The audit's failing campaign: the holder a latency had hit, held on after the heal,
    let go, the next took the lock, and the partition that came next caught it at once —
    before its first extend (TTL/3). An extend that loses part of the lease each time it
    succeeds (whole seconds added to a truncated PTTL) then never showed: 2 audits of 2 under
    load. Now it waits for the new holder to have held half a TTL; without ``then_work_ms``
    it takes it at once."""
    ttl_ms = 200
    for seed in range(3):
        pool = Pool(fresh_after_s=0.0, held_on=frozenset({"c1"}))
        params = {"duration_ms": 250, "then_work_ms": 500, "scope": "one"}
        FAULTS[name].aim(env_of(pool, ttl_ms), random.Random(seed), params)
        assert time.monotonic() - pool.acquired["c2"] >= ttl_ms / 2 / 1000
        pool = Pool(fresh_after_s=0.0, held_on=frozenset({"c1"}))
        del params["then_work_ms"]
        assert FAULTS[name].aim(env_of(pool, ttl_ms), random.Random(seed), params).client == "c2"
        assert time.monotonic() - pool.acquired["c2"] < ttl_ms / 2 / 1000
