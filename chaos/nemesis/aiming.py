"""Aiming: whom a fault hits in the live run, and what aiming found at stake.

A fault's ``aim`` picks its target when it fires, from the run as it is then: the client a
``--faults`` override names (``named_or_holder``), or the nodes a holder's grant rests on
(``undermine_grant``: learnt from what the holder's own connections wrote, confirmed by
reading Redis — the nemesis may look at Redis; the checker never does). Waiting for a holder
is every fault's default aim (``chaos.nemesis.fault.wait_for_holder``).
"""

from __future__ import annotations

import random
from typing import Any, cast

import redis

from chaos.nemesis.fault import Param, Target, at_work_ms, report_effect, wait_for_holder
from chaos.topology import base
from chaos.topology.base import host_port
from chaos.workload.harness import WorkloadEnv

FRESH_HOLD_MS = 5.0  # "just acquired"
# The ``client`` parameter of a fault that hits the holder unless told: one client, or every.
NAMED_OR_EVERY = Param("text", pattern=r"\*|c[0-9]+", shape="a client id (c2) or * (every one)")


def named_or_holder(env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
    """The client ``params`` names (``client=c2``, or ``*`` for every one), else the holder
    (one at work, for a fault that holds it on after the heal: ``at_work_ms``)."""
    if "client" in params:
        return Target(client=str(params["client"]))
    return Target(client=wait_for_holder(env, rng, held_for_ms=at_work_ms(env, params)))


def holder_nodes(env: WorkloadEnv, client: str) -> list[int]:
    """Nodes on which a key that ``client``'s current acquire wrote still holds a value that
    acquire sent (a string, or a hash field or value): the nodes its grant rests on, whatever
    the lock names its key and whatever it stores (its own UUID, a prefixed key). Learnt from
    what the client's own connections sent (``WorkerPool.written``), confirmed by direct reads
    (the nemesis may look at Redis; the checker never does)."""
    return sorted(i for i, (keys, values) in written_on(env, client).items()
                  if _still_holds(env.topology.nodes[i], keys, values))


def written_on(env: WorkloadEnv, client: str) -> dict[int, tuple[list[str], set[str]]]:
    """Per node index, the keys and values ``client``'s current acquire wrote there."""
    routes = {host_port(address): i
              for i, address in enumerate(env.topology.client_view(client).nodes)}
    return {routes[address]: (keys, set(values))
            for address, (keys, values) in env.pool.written(client).items()
            if address in routes}


def _still_holds(node: base.ServerNode, keys: list[str], values: set[str]) -> bool:
    try:
        with node.client(socket_timeout=0.2, decode_responses=True) as conn:
            return key_holds(conn, keys, values)
    except redis.RedisError:
        return False


def key_holds(conn: redis.Redis, keys: list[str], values: set[str] | None) -> bool:
    """Whether one of ``keys`` still holds one of ``values`` (a string, or a hash field or
    value); with the values unknown (``None``: a driver's acquire), whether one exists."""
    if values is None:
        return any(conn.exists(key) for key in keys)
    for key in keys:
        kind = conn.type(key)
        if kind == "string" and conn.get(key) in values:
            return True
        if kind == "hash":
            fields = cast(list[str], conn.hkeys(key)) + cast(list[str], conn.hvals(key))
            if values & set(fields):
                return True
    return False


def undermine_grant(env: WorkloadEnv, rng: random.Random) -> Target:
    """The holder and enough of the nodes it counted on that what remains of its grant is no
    longer a majority — so another client can win one (Kleppmann's Redlock scenarios).
    The holder is caught just after it acquired, with its whole critical section ahead."""
    client = wait_for_holder(env, rng, acquired_within_ms=FRESH_HOLD_MS)
    n, quorum = len(env.topology.nodes), len(env.topology.nodes) // 2 + 1
    carried = holder_nodes(env, client)
    held = carried or list(range(n))
    count = max(1, len(held) - quorum + 1)
    nodes = sorted(rng.sample(held, min(count, len(held))))
    named = ", ".join(f"n{i}" for i in nodes)
    stakes = ""
    if carried:
        stakes = f"{named} carried {client}'s key"
    elif client in env.pool.holders():  # a grant it cannot see (a driver's): by counting,
        # n - quorum + 1 of the n nodes include one of the quorum the grant rests on
        stakes = f"{named} ({count} of {n}) carried {client}'s key on at least one"
    return Target(client=client, nodes=nodes, stakes=stakes)


def report_stakes(env: WorkloadEnv, target: Target, when: str) -> None:
    """Report the firing's effect if aiming found what it puts at stake ("n2 carried c1's key
    when it was killed"): a server fault that meets no grant does nothing to the lock. Learnt
    while aiming, so acting on it costs no round trip (the holder's window is short)."""
    if target.stakes:
        report_effect(env, target, f"{target.stakes} {when}")
