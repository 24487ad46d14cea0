"""Whom slow-work aims at: a holder with its critical section ahead of it, not one whose
section is behind it (sherlock's audit: slow-work fired as a client-pause of the holder
ended, was aimed at that holder — which woke past its section's end and released — and
"had no effect on the lock in any run")."""

from __future__ import annotations

import random
import time
from typing import Any, cast

from chaos.nemesis import FAULTS
from chaos.workload.harness import WorkloadEnv


class Pool:
    """Holders as the worker pool reports them: ``c1`` has held for a second (a pause just
    let it go), ``c2`` acquires ``fresh_after_s`` from now."""

    def __init__(self, fresh_after_s: float) -> None:
        self.workers = {"c1": None, "c2": None, "c3": None}
        self.fresh_at = time.monotonic() + fresh_after_s
        self.acquired = {"c1": time.monotonic() - 1.0}

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
