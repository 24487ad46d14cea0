"""Client faults: what happens to a lock client's own process — a stop-the-world pause (at
once, or at a pause point right before a command), a crash, a critical section that outlasts
the TTL. The lock's servers and links are untouched; the client stops, dies or is slow.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from chaos import history as h
from chaos.locks.contract import PAUSE_POINTS
from chaos.nemesis.aiming import FRESH_HOLD_MS, NAMED_OR_EVERY, named_or_holder
from chaos.nemesis.fault import (
    DURATION,
    ON_ITS_OWN,
    Fault,
    Heal,
    Param,
    Target,
    no_heal,
    takes,
    wait_for_holder,
)
from chaos.workload.harness import WorkloadEnv
from chaos.workload.inject import PausePoint

OP = Param(choices=("acquire", "release", "extend"))
COMMAND = Param("text", pattern=r"\*|[A-Z][A-Z_.|-]*",
                shape="a Redis command in capitals (DEL) or *")
NTH = Param("integer", min=1)
# 1: a point is armed on the first replacement of each client it was armed on as well (a
# fresh process after a crash: ``WorkerPool.keep_for_replacements``).
REPLACED = Param("integer", min=0, max=1)


def arm(env: WorkloadEnv, client: str, point: PausePoint, params: dict[str, Any]) -> list[str]:
    """Arm ``point`` on ``client`` (``*``: every one), and on the first replacement of each
    if ``params`` say ``replaced=1``; returns the clients armed now."""
    armed = sorted(env.pool.workers) if client == "*" else [client]
    for cid in armed:
        env.pool.arm(cid, point)
    if params.get("replaced"):
        env.pool.keep_for_replacements(point, armed)
    return armed


class ClientPause(Fault):
    """Without a ``duration_ms`` (the explorer's pause step) the client stays stopped until
    healed."""

    name = "client-pause"
    summary = "GC pause: SIGSTOP the holder's process (watchdog threads too), SIGCONT later"
    effects = frozenset({h.STALLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        duration = params.get("duration_ms")
        env.pool.pause(target.client, duration or None)
        return no_heal if duration else partial(env.pool.resume, target.client)


class ClientPauseAt(Fault):
    """Pause at a pause-injection point: the window between a check and an act. Without a
    ``duration_ms`` (the explorer's arm step) the client stays stopped there until healed.

    It arms the holder by default. ``client=*`` arms every client instead: a point only some
    waiter reaches — 004's GETSET, sent by whichever client first reads an expired value —
    is then reached by whoever gets there, not only by a holder that may never go there.
    ``replaced=1`` arms each armed client's first replacement too: a command a lock sends
    once per process (``lua-loaded-once``'s ``SCRIPT LOAD``) comes again only from a new one."""

    name = "client-pause-at"
    summary = "pause a client right before a command of its release (default: the DEL)"
    effects = frozenset({h.STALLS_CLIENT})
    evidence = h.REPORTED  # a client stopped at the point (its pause-point event)
    client_needs = frozenset({PAUSE_POINTS})
    parameters = takes(
        duration_ms=DURATION, command=COMMAND, op=OP, nth=NTH,
        client=NAMED_OR_EVERY, replaced=REPLACED,
    )

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms),
            "command": "DEL",
            "op": "release",
        }

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        point = PausePoint(
            params["command"],
            action="pause",
            duration_ms=params.get("duration_ms", 0),
            op=params["op"],
            nth=params.get("nth", 1),
            fault=target.fault_id,
        )
        armed = arm(env, target.client, point, params)
        if point.duration_ms:
            return no_heal

        def heal() -> None:
            for client in armed:
                env.pool.resume(client)

        return heal


class ClientCrash(Fault):
    """Half the time a plain SIGKILL of the holder; half the time a crash armed between the
    first and second round trip of an acquire (between SETNX and EXPIRE, where there is one).

    ``client=`` names the client instead of the holder; ``client=*`` arms every client (with
    ``command=``: whoever gets there crashes — a ``SCRIPT LOAD`` only the first client to run
    a script after a flush sends) or kills every one (without it); ``replaced=1`` arms each
    one's first replacement too, as ``client-pause-at``'s does."""

    name = "client-crash"
    summary = "SIGKILL a client, or crash it between the round trips of its acquire"
    effects = frozenset({h.KILLS_CLIENT})
    evidence = h.REPORTED  # a crash at the point, or a kill while the client was at the lock
    parameters = takes(duration_ms=ON_ITS_OWN, command=COMMAND, op=OP, nth=NTH,
                       client=NAMED_OR_EVERY, replaced=REPLACED)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        if rng.random() < 0.5:
            return {"duration_ms": 0}
        return {"duration_ms": 0, "command": "*", "op": "acquire", "nth": 2}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        if params.get("command"):
            point = PausePoint(params["command"], action="crash", op=params["op"],
                               nth=params.get("nth", 1), fault=target.fault_id)
            arm(env, target.client, point, params)
            return no_heal
        for client in sorted(env.pool.workers) if target.client == "*" else [target.client]:
            env.pool.kill(client, target.fault_id)
        return no_heal


class SlowWork(Fault):
    name = "slow-work"
    summary = "a critical section longer than the TTL (the expiry race)"
    effects = frozenset({h.STALLS_CLIENT})
    evidence = h.REPORTED  # the slow critical section began (the client's effect event)
    parameters = takes(duration_ms=ON_ITS_OWN, work_ms=Param(above=0))

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": 0, "work_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        # A holder that has just acquired, its whole critical section ahead: that section
        # lasts the slow work from its start (``Worker.work``). One whose section is behind
        # it — a holder a pause has just let go, which releases as it wakes — gets it for its
        # next section, which may not come before the run ends (sherlock's audit: a slow-work
        # right after a client-pause of the same holder "had no effect on the lock in any
        # run"). With no fresh holder in time, any holder, else a random client.
        return Target(client=wait_for_holder(env, rng, acquired_within_ms=FRESH_HOLD_MS))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        env.pool.slow_work(target.client, params["work_ms"], fault=target.fault_id)
        return no_heal
