"""Whom slow-work aims at: a holder with its critical section ahead of it, not one whose
section is behind it (sherlock's audit: slow-work fired as a client-pause of the holder
ended, was aimed at that holder — which woke past its section's end and released — and
"had no effect on the lock in any run")."""

from __future__ import annotations

import random
import time
from typing import Any, cast

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

    def holders(self, acquired_within_ms: float | None = None) -> list[str]:
        if time.monotonic() >= self.fresh_at:
            self.acquired.setdefault("c2", time.monotonic())
        since = 0.0 if acquired_within_ms is None else time.monotonic() - acquired_within_ms / 1e3
        return [cid for cid, at in self.acquired.items() if at >= since]


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
