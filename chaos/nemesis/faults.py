"""The fault catalog: how production breaks locks, one small class per fault.

A fault is applied in three steps so the history can say exactly what happened and when:
``params`` draws its parameters from the schedule's seeded RNG, ``aim`` picks a target in the
live run (the current holder, a node the holder counted on, …), ``apply`` breaks something
and returns the function that heals it. The nemesis writes the start event between ``aim``
and ``apply`` and the stop event after healing.

Everything else about a fault is declared on its class, so adding a fault is one class here
(or in a user's module, through ``register``) and nothing else: its ``effects`` go into its
start event for the checker (which knows no fault by name), ``needs``/``provider_needs``/
``persistence`` say what topology it needs, and ``stepping`` how the explorer switches it
on and off (``None``: not as an on/off step).
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, TypeVar

import redis

from chaos import history as h
from chaos.topology import base
from chaos.topology.base import Topology
from chaos.topology.node import restart_nodes
from chaos.workload.harness import RunEnv
from chaos.workload.inject import PausePoint

Heal = Callable[[], None]
FaultT = TypeVar("FaultT", bound="type[Fault]")
AIM_WAIT_S = 1.0  # how long a fault waits for a holder to aim at before picking anyone
FRESH_HOLD_MS = 5.0  # "just acquired"


def _nothing() -> None:
    """Heal for faults that heal themselves (a crash, a timed pause, a slow section)."""


@dataclass
class Target:
    """Who a fault hits: a client, some nodes, or both. ``describe`` goes into the history."""

    client: str | None = None
    nodes: list[int] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client is not None:
            out["client"] = self.client
        if self.nodes:
            out["nodes"] = [f"n{i}" for i in self.nodes]
        return out


def wait_for_holder(
    env: RunEnv,
    rng: random.Random,
    timeout_s: float = AIM_WAIT_S,
    acquired_within_ms: float | None = None,
) -> str:
    """The current holder (waiting briefly for one, or for one that has just acquired), else
    a random live client."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        holders = env.pool.holders(acquired_within_ms)
        if holders:
            return rng.choice(sorted(holders))
        time.sleep(0.002)
    return rng.choice(sorted(env.pool.workers))


@dataclass(frozen=True)
class TTLs:
    """Parameter values as multiples of the TTL (the explorer draws ``round(f × ttl_ms)``)."""

    factors: tuple[float, ...]


@dataclass(frozen=True)
class Stepping:
    """How the explorer makes a fault an on/off step: ``aims_at`` ``client`` (one client's
    links to some nodes), ``nodes`` or ``master`` (the fault picks it when it fires);
    ``instant`` faults heal themselves at once (a crash followed by a restart) and have no
    off step. ``choices`` are the parameter values it draws from, mildest first (a plain
    tuple, or ``TTLs``), so a shrunk program reads "offset +1.5×TTL"."""

    aims_at: str
    instant: bool = False
    choices: dict[str, tuple[Any, ...] | TTLs] = field(default_factory=dict)


class Fault(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    effects: ClassVar[frozenset[str]]  # chaos.history.EFFECTS: what the checker may conclude
    stepping: ClassVar[Stepping | None] = None  # how the explorer steps it (None: it does not)
    needs: ClassVar[str] = "any"  # "any" or "sentinel"
    persistence: ClassVar[str] = "none"  # what the data nodes must be started with
    # What it asks of the topology's provider beyond Toxiproxy (chaos.topology.base):
    # a provider that cannot do it refuses the fault before anything starts.
    provider_needs: ClassVar[frozenset[str]] = frozenset()

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        """Parameters for one occurrence; ``duration_ms`` is how long it stays on."""
        return {"duration_ms": round(rng.uniform(1.0, 2.0) * ttl_ms)}

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(client=wait_for_holder(env, rng))

    @abstractmethod
    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal: ...


# -- client process faults ---------------------------------------------------------------


class ClientPause(Fault):
    """Without a ``duration_ms`` (the explorer's pause step) the client stays stopped until
    healed."""

    name = "client-pause"
    summary = "GC pause: SIGSTOP the holder's process (watchdog threads too), SIGCONT later"
    effects = frozenset({h.STALLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        duration = params.get("duration_ms")
        env.pool.pause(target.client, duration or None)
        return _nothing if duration else partial(env.pool.resume, target.client)


class ClientPauseAt(Fault):
    """Pause at a pause-injection point: the window between a check and an act. Without a
    ``duration_ms`` (the explorer's arm step) the client stays stopped there until healed."""

    name = "client-pause-at"
    summary = "pause a client right before a command of its release (default: the DEL)"
    effects = frozenset({h.STALLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms),
            "command": "DEL",
            "op": "release",
        }

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        point = PausePoint(
            params["command"],
            action="pause",
            duration_ms=params.get("duration_ms", 0),
            op=params["op"],
            nth=params.get("nth", 1),
        )
        env.pool.arm(target.client, point)
        return _nothing if point.duration_ms else partial(env.pool.resume, target.client)


class ClientCrash(Fault):
    """Half the time a plain SIGKILL of the holder; half the time a crash armed between the
    first and second round trip of an acquire (between SETNX and EXPIRE, where there is one)."""

    name = "client-crash"
    summary = "SIGKILL a client, or crash it between the round trips of its acquire"
    effects = frozenset({h.KILLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        if rng.random() < 0.5:
            return {"duration_ms": 0}
        return {"duration_ms": 0, "command": "*", "op": "acquire", "nth": 2}

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        if params.get("command"):
            point = PausePoint(
                params["command"], action="crash", op=params["op"], nth=params.get("nth", 1)
            )
            env.pool.arm(target.client, point)
        else:
            env.pool.kill(target.client)
        return _nothing


class SlowWork(Fault):
    name = "slow-work"
    summary = "a critical section longer than the TTL (the expiry race)"
    effects = frozenset({h.STALLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": 0, "work_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(client=rng.choice(sorted(env.pool.workers)))

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        env.pool.slow_work(target.client, params["work_ms"])
        return _nothing


# -- network faults (Toxiproxy, on one client's own links) -------------------------------------


def toxic_on_client(topology: Topology, client: str, toxic: str, **options: Any) -> Heal:
    """Add one Toxiproxy toxic to every link of ``client``; the heal removes them."""
    api, links = topology.toxiproxy, topology.client_links(client)
    names = [api.add_toxic(link.name, toxic, **options) for link in links]

    def heal() -> None:
        for link, name in zip(links, names, strict=True):
            api.remove_toxic(link.name, name)

    return heal


def cut_client_links(topology: Topology, client: str, nodes: list[int]) -> Heal:
    """Disable ``client``'s links to ``nodes`` (open connections close, new ones are refused);
    the heal enables them again."""
    links = [topology.client_links(client)[i] for i in nodes]
    for link in links:
        topology.toxiproxy.disable(link.name)

    def heal() -> None:
        for link in links:
            topology.toxiproxy.enable(link.name)

    return heal


class Latency(Fault):
    name = "latency"
    summary = "latency and jitter on one client's links (Toxiproxy), up- or downstream"
    effects = frozenset({h.DISTURBS_NETWORK})
    stepping = Stepping(
        "client",
        choices={
            "latency_ms": TTLs((0.6, 1.2)),
            "jitter_ms": (0,),
            "stream": ("downstream", "upstream"),
        },
    )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms),
            "latency_ms": round(rng.uniform(0.3, 0.6) * ttl_ms),
            "jitter_ms": round(0.1 * ttl_ms),
            "stream": rng.choice(["upstream", "downstream"]),
        }

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        return toxic_on_client(
            env.topology,
            target.client,
            "latency",
            stream=params["stream"],
            latency=params["latency_ms"],
            jitter=params["jitter_ms"],
        )


class Partition(Fault):
    name = "partition"
    summary = "cut a client from one node, a minority or a majority of nodes; heal"
    effects = frozenset({h.DISTURBS_NETWORK})
    stepping = Stepping("client")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 5.0) * ttl_ms),
            "scope": rng.choice(["one", "minority", "majority"]),
        }

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        n = len(env.topology.nodes)
        count = {"one": 1, "minority": max(1, (n - 1) // 2), "majority": n // 2 + 1}
        nodes = sorted(rng.sample(range(n), min(n, count[params["scope"]])))
        return Target(client=wait_for_holder(env, rng), nodes=nodes)

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        return cut_client_links(env.topology, target.client, target.nodes)


class Reset(Fault):
    name = "reset"
    summary = "reset one client's connections mid-command (indeterminate outcomes)"
    effects = frozenset({h.DISTURBS_NETWORK})
    stepping = Stepping("client", choices={"toxicity": (1.0,)})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.5, 1.5) * ttl_ms), "toxicity": 0.5}

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        return toxic_on_client(
            env.topology, target.client, "reset_peer", stream="upstream",
            toxicity=params["toxicity"], timeout=0,
        )  # fmt: skip


# -- server faults -------------------------------------------------------------------------


def holder_nodes(env: RunEnv, client: str) -> list[int]:
    """Nodes that hold the lock key with ``client``'s token right now (direct reads: the
    nemesis may look at Redis; the checker never does)."""
    held = []
    for i, node in enumerate(env.topology.nodes):
        try:
            with node.client(socket_timeout=0.2) as conn:
                value = conn.get(env.config.lock_name)
        except redis.RedisError:
            continue
        if value is not None and value.decode(errors="replace").startswith(f"{client}:"):
            held.append(i)
    return held


def undermine_grant(env: RunEnv, rng: random.Random) -> Target:
    """The holder and enough of the nodes it counted on that what remains of its grant is no
    longer a majority — so another client can win one (Kleppmann's Redlock scenarios).
    The holder is caught just after it acquired, with its whole critical section ahead."""
    client = wait_for_holder(env, rng, acquired_within_ms=FRESH_HOLD_MS)
    n = len(env.topology.nodes)
    held = holder_nodes(env, client) or list(range(n))
    count = max(1, len(held) - (n // 2 + 1) + 1)
    return Target(client=client, nodes=sorted(rng.sample(held, min(count, len(held)))))


class ServerPause(Fault):
    name = "server-pause"
    provider_needs = frozenset({base.PAUSE})
    summary = "SIGSTOP a redis-server for less than the TTL, then SIGCONT"
    effects = frozenset({h.STALLS_SERVER})
    stepping = Stepping("nodes")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.2, 0.8) * ttl_ms)}

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[rng.randrange(len(env.topology.nodes))])

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        for node in nodes:
            node.pause()

        def heal() -> None:
            for node in nodes:
                node.resume()

        return heal


class CrashRestart(Fault):
    """kill -9 a node the holder counted on and restart it empty at once: the grant is gone."""

    name = "crash-restart"
    provider_needs = frozenset({base.RESTART})
    summary = "kill -9 nodes the holder counted on, restart them empty at once"
    effects = frozenset({h.RESTARTS_SERVER, h.LOSES_KEYS})
    stepping = Stepping("nodes", instant=True)
    delay_ttls: ClassVar[float] = 0.0  # restart after this many TTLs (0: at once)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(self.delay_ttls * ttl_ms * rng.uniform(1.5, 2.0))}

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        empty = self.persistence == "none"
        for node in nodes:
            node.kill()

        def heal() -> None:
            restart_nodes(nodes, empty=empty)

        if not params.get("duration_ms", self.delay_ttls):  # the explorer heals on its step
            heal()
            return _nothing
        return heal


class CrashRestartDelayed(CrashRestart):
    name = "crash-restart-delayed"
    summary = "kill -9 a node, restart it empty after more than the TTL (as the Redis docs advise)"
    stepping = Stepping("nodes")
    delay_ttls = 1.0


class CrashRestartAof(CrashRestart):
    name = "crash-restart-aof"
    summary = "kill -9 a node running appendfsync always, restart it with its data at once"
    effects = frozenset({h.RESTARTS_SERVER})  # appendfsync always: the keys come back
    persistence = "aof-always"


class ClockJump(Fault):
    """Kleppmann's Redlock scenario: a node's wall clock jumps and the key expires early."""

    name = "clock-jump"
    provider_needs = frozenset({base.CLOCK})
    summary = "jump the wall clock of nodes the holder counted on (libfaketime), then back"
    effects = frozenset({h.MOVES_CLOCK, h.LOSES_KEYS})
    stepping = Stepping("nodes", choices={"offset_ms": TTLs((1.5, 3.0, -1.5))})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms),
            "offset_ms": round(rng.uniform(1.5, 3.0) * ttl_ms) * rng.choice([1, 1, 1, -1]),
        }

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        for node in nodes:
            node.set_clock_offset(params["offset_ms"] / 1000)

        def heal() -> None:
            for node in nodes:
                node.set_clock_offset(0.0)

        return heal


class Failover(Fault):
    """Seed 003's cluster problem: the master is lost before the lock reached any replica.

    Cutting the master's cluster link stops replication and hides it from Sentinel at once,
    while clients still reach it through their own links and keep locking it. Once Sentinel
    has promoted a replica (which never got the key), every client but the current holder
    loses its connection to the old master — as clients do when a master goes away — and
    rediscovers the new one through Sentinel: the holder still locks the old master, the
    others the new one. Healing rejoins the old master, which Sentinel later demotes.
    """

    name = "failover"
    summary = "cut replication from the master, let Sentinel promote a replica, split clients"
    effects = frozenset({h.LOSES_KEYS, h.SPLITS_MASTER})
    stepping = Stepping("master", choices={"promote_timeout_ms": (8000,)})
    needs = "sentinel"
    provider_needs = frozenset({base.CLUSTER_LINKS})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(3.0, 5.0) * ttl_ms), "promote_timeout_ms": 8000}

    def aim(self, env: RunEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[env.topology.master_index()])

    def apply(self, env: RunEnv, target: Target, params: dict[str, Any]) -> Heal:
        (old,) = target.nodes
        api, link = env.topology.toxiproxy, env.topology.internal[old].name
        api.disable(link)
        deadline = time.monotonic() + params["promote_timeout_ms"] / 1000
        while time.monotonic() < deadline and env.topology.master_index() == old:
            time.sleep(0.02)
        keep = wait_for_holder(env, random.Random(params.get("seed", 0)))
        target.client = keep
        for client in sorted(env.pool.workers):
            if client != keep:
                name = env.topology.client_links(client)[old].name
                api.disable(name)  # closes the client's connections to the old master
                api.enable(name)

        def heal() -> None:
            api.enable(link)  # the old master rejoins; Sentinel demotes it to a replica

        return heal


FAULTS: dict[str, Fault] = {}


def register(cls: FaultT) -> FaultT:
    """Add a fault class to the catalog (``--faults``, ``lockchaos list``, the explorer):
    the bundled ones below, and any a user or a test defines."""
    if not getattr(cls, "effects", None) or not all(e in h.EFFECTS for e in cls.effects):
        raise ValueError(f"{cls.__name__} must declare effects from chaos.history.EFFECTS")
    FAULTS[cls.name] = cls()
    return cls


for _fault in (
    ClientPause,
    ClientPauseAt,
    ClientCrash,
    SlowWork,
    Latency,
    Partition,
    Reset,
    ServerPause,
    CrashRestart,
    CrashRestartDelayed,
    CrashRestartAof,
    ClockJump,
    Failover,
):
    register(_fault)
