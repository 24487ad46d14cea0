"""Clock faults: a wall clock that is not true — a server's (``clock-jump``: a key expires
early, Kleppmann's Redlock scenario) or a client's (``client-clock``: expiry judged by a
client's own clock, seed 004). Both move the clock with libfaketime and leave the
history's monotonic clock true; both take an offset of up to a day either way.

``client-clock`` is here, not among the client faults: it neither stops, kills nor slows its
client's process — the client runs on, judging time wrong — and it moves a clock (its effect
is ``moves-clock``, as ``clock-jump``'s), which is what a lock that trusts clocks must
survive.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any, ClassVar

from chaos import history as h
from chaos.errors import UsageError
from chaos.locks.contract import FAKED_CLOCK
from chaos.nemesis.aiming import report_stakes, undermine_grant
from chaos.nemesis.fault import (
    DURATION,
    Fault,
    Heal,
    Param,
    Stepping,
    Target,
    TTLs,
    takes,
    wait_for_holder,
)
from chaos.topology import base
from chaos.workload.clocks import set_offset as set_client_clock
from chaos.workload.harness import WorkloadEnv

DAY_MS = 86_400_000  # libfaketime takes an offset of up to a day either way from these faults
CLOCK_AIM_WAIT_S = 10.0  # client-clock: how long to wait for the (spawned) clients to hold


class ClockJump(Fault):
    """Kleppmann's Redlock scenario: a node's wall clock jumps and the key expires early."""

    name = "clock-jump"
    provider_needs = frozenset({base.CLOCK})
    summary = "jump the wall clock of nodes the holder counted on (libfaketime), then back"
    effects = frozenset({h.MOVES_CLOCK, h.LOSES_KEYS})
    evidence = h.REPORTED  # a node whose clock jumped carried a holder's key
    # An offset of 0 moves nothing; libfaketime takes ±a day at most from this fault.
    parameters = takes(
        duration_ms=DURATION, offset_ms=Param("integer", min=-DAY_MS, max=DAY_MS, nonzero=True)
    )
    stepping = Stepping("nodes", choices={"offset_ms": TTLs((1.5, 3.0, -1.5))})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms),
            "offset_ms": round(rng.uniform(1.5, 3.0) * ttl_ms) * rng.choice([1, 1, 1, -1]),
        }

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        report_stakes(env, target, "when its clock jumped")
        for node in nodes:
            node.set_clock_offset(params["offset_ms"] / 1000)

        def heal() -> None:
            for node in nodes:
                node.set_clock_offset(0.0)

        return heal


class ClientClock(Fault):
    """Seed 004's first flaw of ``wrongGetLock2``: "由于是客户端自己生成过期时间，所以需要强制要求
    分布式下每个客户端的时间必须同步". ``clock-jump`` moves the servers' clocks, which a lock
    that judges expiry by its own clock never reads; this moves one *client's* wall clock.

    Every client of a run with this fault runs under libfaketime from its start, at offset 0
    (``chaos.workload.clocks``; the campaign asks for it because of ``fakes_client_clocks``).
    When the fault fires, ``client`` (default: a client that does not hold the lock, so it is
    the one judging someone else's expiry) jumps ``skew_ms`` ahead (negative: behind) and stays
    skewed until healed. Only the wall clock moves: the history's monotonic clock is true.
    """

    name = "client-clock"
    summary = ("skew one client's wall clock by skew_ms (libfaketime on its process; seed 004: "
               "expiry judged by client clocks), then heal")
    effects = frozenset({h.MOVES_CLOCK})
    fakes_client_clocks: ClassVar[bool] = True
    # A driver whose binary reads the clock without libc (pure Go) would run on the true
    # clock, a silent pass: refused up front.
    client_needs = frozenset({FAKED_CLOCK})
    parameters = takes(
        duration_ms=DURATION,
        skew_ms=Param("integer", min=-DAY_MS, max=DAY_MS, nonzero=True),
        client=Param("text", pattern=r"c[0-9]+", shape="a client id (c2)"),
    )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(8.0, 16.0) * ttl_ms), "skew_ms": 4 * ttl_ms}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        if "client" in params:
            return Target(client=str(params["client"]))
        # Waits for a holder longer than other faults do: clients with a fakeable clock are
        # spawned, not forked, and take a few seconds to start on a loaded machine.
        holder = wait_for_holder(env, rng, timeout_s=CLOCK_AIM_WAIT_S)
        others = [c for c in sorted(env.pool.workers) if c != holder]
        return Target(client=rng.choice(others or [holder]))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        directory = env.config.client_clocks
        if directory is None:
            raise RuntimeError(
                "client-clock needs clients started under libfaketime "
                "(WorkloadConfig.client_clocks): run it through a campaign"
            )
        if target.client not in env.pool.workers:
            raise UsageError(f"client-clock: no client {target.client!r} in this run")
        set_client_clock(directory, target.client, params["skew_ms"])
        return partial(set_client_clock, directory, target.client, 0.0)
