"""Server faults: what happens to the Redis servers the lock stands on — a server stopped,
killed and restarted (empty, later, or with its data), its memory full enough to evict, its
script cache emptied, its master lost to a failover.
"""

from __future__ import annotations

import random
import time
from typing import Any, ClassVar, cast

import redis

from chaos import history as h
from chaos.nemesis.aiming import key_holds, report_stakes, undermine_grant, written_on
from chaos.nemesis.fault import (
    DURATION,
    ON_ITS_OWN,
    Fault,
    Heal,
    Param,
    Stepping,
    Target,
    no_heal,
    report_effect,
    takes,
    wait_for_holder,
)
from chaos.topology import base
from chaos.topology.node import restart_nodes
from chaos.workload.harness import WorkloadEnv


class ServerPause(Fault):
    name = "server-pause"
    provider_needs = frozenset({base.PAUSE})
    summary = "SIGSTOP a redis-server for less than the TTL, then SIGCONT"
    effects = frozenset({h.STALLS_SERVER})
    stepping = Stepping("nodes")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.2, 0.8) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[rng.randrange(len(env.topology.nodes))])

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
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
    evidence = h.REPORTED  # a killed node carried a holder's key
    parameters = takes(duration_ms=ON_ITS_OWN)  # how long the node stays down (0: at once)
    stepping = Stepping("nodes", instant=True)
    delay_ttls: ClassVar[float] = 0.0  # restart after this many TTLs (0: at once)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(self.delay_ttls * ttl_ms * rng.uniform(1.5, 2.0))}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        empty = self.persistence == "none"
        report_stakes(env, target, "when killed")
        for node in nodes:
            node.kill()

        def heal() -> None:
            restart_nodes(nodes, empty=empty)

        if not params.get("duration_ms", self.delay_ttls):  # the explorer heals on its step
            heal()
            return no_heal
        return heal


class CrashRestartDelayed(CrashRestart):
    name = "crash-restart-delayed"
    summary = "kill -9 a node, restart it empty after more than the TTL (as the Redis docs advise)"
    parameters = takes(duration_ms=DURATION)
    stepping = Stepping("nodes")
    delay_ttls = 1.0


class CrashRestartAof(CrashRestart):
    name = "crash-restart-aof"
    summary = "kill -9 a node running appendfsync always, restart it with its data at once"
    effects = frozenset({h.RESTARTS_SERVER})  # appendfsync always: the keys come back
    persistence = "aof-always"


FILLER_BYTES = 32 * 1024  # evict: the size of one filler value
FILLER_HEADROOM = 4  # evict: maxmemory is used memory plus this many filler values
FILL_LIMIT = 512  # evict: at most this many filler keys per node and firing…
FILL_TIME_S = 0.5  # …written within this long
EVICTION_POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random",
                     "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")


def _slot_tag(key: str) -> str:
    """A hash tag that puts a filler key in ``key``'s cluster slot (and on its node)."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1:end] if start >= 0 and end > start + 1 else key


class Evict(Fault):
    """Memory pressure on a Redis that evicts (a cache-sized instance the lock shares): a
    key the lock relies on is evicted before it expires, and another client acquires.

    On the nodes the holder counted on, ``maxmemory`` is set just above the memory in use
    and ``maxmemory-policy`` to ``policy``; filler keys (with a long TTL, so every policy,
    ``volatile-*`` too, may evict them) are written until the holder's key is gone, at most
    ``FILL_LIMIT`` of them within ``FILL_TIME_S``. The firing's effect is reported only when
    the holder's key was really evicted while it still held the lock. Healing restores both
    settings and deletes the filler. ``noeviction`` (Redis's default) is not a policy this
    fault takes: under it nothing is evicted (writes fail with OOM instead)."""

    name = "evict"
    summary = ("maxmemory just above used memory with an eviction policy, filler keys until "
               "the holder's key is evicted")
    effects = frozenset({h.LOSES_KEYS})
    evidence = h.REPORTED  # the holder's key was evicted while it held the lock
    parameters = takes(duration_ms=DURATION, policy=Param(choices=EVICTION_POLICIES))

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.0, 2.0) * ttl_ms), "policy": "allkeys-lru"}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        written = written_on(env, target.client)
        fillers: dict[int, list[str]] = {}
        restore: dict[int, dict[str, str]] = {}
        evicted: list[str] = []
        for i in target.nodes:
            node = env.topology.nodes[i]
            keys, values = written.get(i, ([env.config.lock_name], None))
            with node.client(socket_timeout=1.0, decode_responses=True) as conn:
                restore[i] = {name: conn.config_get(name)[name]
                              for name in ("maxmemory", "maxmemory-policy")}
                conn.config_set("maxmemory-policy", params["policy"])
                used = int(conn.info("memory")["used_memory"])
                conn.config_set("maxmemory", used + FILLER_HEADROOM * FILLER_BYTES)
                fillers[i], gone = _fill_until_gone(conn, keys, values)
            if gone and target.client in env.pool.holders():
                evicted.append(f"n{i}")
        if evicted:
            report_effect(env, target, f"{', '.join(evicted)} evicted {target.client}'s key "
                                       "while it held the lock")

        def heal() -> None:
            for i, settings in restore.items():
                with env.topology.nodes[i].client(socket_timeout=1.0) as conn:
                    conn.config_set("maxmemory", settings["maxmemory"])
                    conn.config_set("maxmemory-policy", settings["maxmemory-policy"])
                    if fillers[i]:
                        conn.unlink(*fillers[i])

        return heal


def _fill_until_gone(
    conn: redis.Redis, keys: list[str], values: set[str] | None
) -> tuple[list[str], bool]:
    """Write filler keys until none of ``keys`` holds one of ``values`` (``key_holds``);
    the fillers written, and whether the keys went. Keys already gone (or never there: a
    driver that prefixes the lock's name) are not the filler's doing: nothing is written."""
    if not key_holds(conn, keys, values):
        return [], False
    tag = _slot_tag(keys[0])
    blob = "x" * FILLER_BYTES
    names: list[str] = []
    deadline = time.monotonic() + FILL_TIME_S
    while len(names) < FILL_LIMIT and time.monotonic() < deadline:
        if names and not key_holds(conn, keys, values):
            return names, True
        names.append(f"{{{tag}}}:lockchaos-filler:{len(names)}")
        try:
            conn.set(names[-1], blob, px=3_600_000)
        except redis.ResponseError:  # OOM: nothing left this policy may evict
            return names, not key_holds(conn, keys, values)
    return names, not key_holds(conn, keys, values)


class ScriptFlush(Fault):
    """A node forgets its cached scripts — a restart or a failover to a replica does it, and
    so does ``SCRIPT FLUSH`` — and the lock keeps its keys. A lock that sends ``EVALSHA``
    must answer ``NOSCRIPT`` by loading the script again (redis-py's ``Script`` does); one
    that loaded its scripts once (redlock-rb #148, resque-scheduler #298) cannot acquire or
    release any more. The firing's effect is reported when a node answered ``NOSCRIPT``
    between the flush and the heal (``INFO errorstats``, Redis ≥ 6.2): a lock that sends
    ``EVAL`` never notices a flush, and a run of it is inconclusive, as it should be."""

    name = "script-flush"
    summary = "SCRIPT FLUSH every node (as a restart does): a cached EVALSHA gets NOSCRIPT"
    effects = frozenset({h.FORGETS_SCRIPTS})
    evidence = h.REPORTED  # a node answered NOSCRIPT after the flush

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=list(range(len(env.topology.nodes))))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = {i: env.topology.nodes[i] for i in target.nodes}
        before = {}
        for i, node in nodes.items():
            with node.client(socket_timeout=1.0) as conn:
                before[i] = _noscript_errors(conn)
                conn.script_flush()

        def heal() -> None:
            answered = []
            for i, node in nodes.items():
                with node.client(socket_timeout=1.0) as conn:
                    if (grew := _noscript_errors(conn) - before[i]) > 0:
                        answered.append(f"n{i} {grew}×")
            if answered:
                report_effect(env, target, "NOSCRIPT after the flush: " + ", ".join(answered))

        return heal


def _noscript_errors(conn: redis.Redis) -> int:
    """How many NOSCRIPT errors the node has answered since it started (0 before 6.2)."""
    stats = cast(dict[str, Any], conn.info("errorstats")).get("errorstat_NOSCRIPT", {})
    return int(stats.get("count", 0)) if isinstance(stats, dict) else 0



class Failover(Fault):
    """Seed 003's cluster problem: the master is lost before the lock reached any replica.

    Cutting the master's cluster links (``Topology.cluster_links``: replication and
    Sentinel's view, or in a Redis Cluster replication and its and its replicas' cluster bus)
    stops replication and hides it from whoever elects a new master, and the new master from
    it, while clients still reach it through their own links and keep locking it. Once a
    replica (which never got the key) is promoted — by Sentinel, or by its own takeover in a
    cluster — every client but the current holder loses its links to the old master until
    healed, as clients on the majority's side of a partition do, and finds the new one
    (through Sentinel, or the cluster's slot map: with its link only closed and opened again
    a cluster client could reconnect to the old master, which still claims the slots, and
    lock it in turn with the holder, no split): the holder still locks the old master, the
    others the new one. Healing rejoins the old master, which is then demoted, and then the
    others' links to it; in a cluster it waits for that demotion, as the next failover elects
    one of the new master's replicas (``Topology.await_demotion``). The split is its effect,
    reported only while the run's clients still run: a promotion that came after they had
    stopped did nothing to the lock.
    """

    name = "failover"
    summary = "cut replication from the master, let Sentinel promote a replica, split clients"
    effects = frozenset({h.LOSES_KEYS, h.SPLITS_MASTER})
    evidence = h.REPORTED  # the clients were split between two masters
    parameters = takes(duration_ms=DURATION, promote_timeout_ms=Param(above=0, max=600_000))
    stepping = Stepping("master", choices={"promote_timeout_ms": (8000,)})
    needs = "replicated"
    provider_needs = frozenset({base.CLUSTER_LINKS})
    # Sentinel promotes a replica 2.1–2.9 s after the master is cut off (down-after 600 ms,
    # then its vote, then its next INFO of the replica; measured on 2 busy cores).
    acts_after_s = 3.0

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(3.0, 5.0) * ttl_ms), "promote_timeout_ms": 8000}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[env.topology.master_index(env.config.lock_name)])

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        (old,) = target.nodes
        api, links = env.topology.toxiproxy, env.topology.cluster_links(old)
        try:
            for link in links:
                api.disable(link.name)
            env.topology.elect(old)
        except BaseException:  # an error returns no heal: what was cut would stay cut
            for link in links:
                api.enable(link.name)
            raise
        deadline = time.monotonic() + params["promote_timeout_ms"] / 1000
        key = env.config.lock_name
        new = old
        while time.monotonic() < deadline and (new := env.topology.master_index(key)) == old:
            time.sleep(0.02)
        keep = wait_for_holder(env, random.Random(params.get("seed", 0)))
        target.client = keep
        moved = [env.topology.client_links(client)[old] for client in sorted(env.pool.workers)
                 if client != keep]
        for link in moved:
            api.disable(link.name)  # closes the client's connections to the old master
        if new == old:  # not promoted: the others reconnect to the only master there is
            for link in moved:
                api.enable(link.name)
            moved = []
        elif h.now() < (env.pool.deadline_ns or 0):
            report_effect(env, target, f"{keep} kept n{old}; the others were moved to n{new}, "
                                       "promoted")

        def heal() -> None:
            for link in links:
                api.enable(link.name)  # the old master rejoins and is demoted to a replica
            for link in moved:
                api.enable(link.name)
            if new != old:
                env.topology.await_demotion(old)

        return heal
