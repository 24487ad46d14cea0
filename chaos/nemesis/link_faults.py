"""Link faults: Toxiproxy on one client's own links (or every client's) to the nodes —
latency, a partition, connections reset mid-command, replies lost on the way back.

A network fault does something to the lock only when a command of a client it hits crosses
a faulted link while it is on: a holder that only works, sending nothing, is not slowed or
cut by it. Toxiproxy cannot say when that happens (v2.12's byte counters add a connection's
bytes once, when it closes), the client can: the fault arms a watch on each client it hits
(``WorkerPool.watch``, ``chaos.workload.inject.Watch``) naming the client's own links to
the faulted nodes, live once the toxics are on, and the first command the client sends
over one of them after that (or a connection there refused) writes the firing's ``effect``
("c2 sent EVAL to n0 while latency was on"). The heal ends the watches before it removes
the toxics. A client whose commands the harness cannot see going to a node (a driver, which
announces commands but not their node, when the fault is on only some of its links) makes
the firing declare ``activity`` instead (``LinkFault.evidence_for``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import Any

from chaos import history as h
from chaos.nemesis.aiming import NAMED_OR_EVERY, named_or_holder
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
from chaos.topology.base import Topology
from chaos.workload.harness import WorkloadEnv


def toxic_on_client(topology: Topology, client: str, toxic: str,
                    faulted: Callable[[int], None] = lambda node: None, **options: Any) -> Heal:
    """Add one Toxiproxy toxic to every link of ``client`` (telling ``faulted`` each node
    whose link has it); the heal removes them."""
    api, links = topology.toxiproxy, topology.client_links(client)
    names = []
    for node, link in enumerate(links):
        names.append(api.add_toxic(link.name, toxic, **options))
        faulted(node)

    def heal() -> None:
        for link, name in zip(links, names, strict=True):
            api.remove_toxic(link.name, name)

    return heal


def cut_client_links(topology: Topology, client: str, nodes: list[int],
                     faulted: Callable[[int], None] = lambda node: None) -> Heal:
    """Disable ``client``'s links to ``nodes`` (open connections close, new ones are refused;
    ``faulted`` is told each node cut); the heal enables them again."""
    links = [topology.client_links(client)[i] for i in nodes]
    for node, link in zip(nodes, links, strict=True):
        topology.toxiproxy.disable(link.name)
        faulted(node)

    def heal() -> None:
        for link in links:
            topology.toxiproxy.enable(link.name)

    return heal


class LinkFault(Fault):
    """A fault on the links of the clients it hits (``hit_clients``) to some nodes
    (``hit_nodes``): its effect is reported by the watches ``watched`` arms on them."""

    evidence = h.REPORTED  # a command of a hit client crossed a faulted link while it was on

    def hit_clients(self, env: WorkloadEnv, target: Target) -> list[str]:
        assert target.client is not None
        return sorted(env.pool.workers) if target.client == "*" else [target.client]

    def hit_nodes(self, env: WorkloadEnv, target: Target) -> list[int]:
        """The nodes whose links it faults: every one, unless it aims at some."""
        return target.nodes or list(range(len(env.topology.nodes)))

    def evidence_for(self, env: WorkloadEnv, target: Target) -> str:
        everywhere = len(self.hit_nodes(env, target)) == len(env.topology.nodes)
        clients = self.hit_clients(env, target)
        if clients and all(env.pool.watchable(c, everywhere) for c in clients):
            return h.REPORTED
        return h.ACTIVITY

    def watched(self, env: WorkloadEnv, target: Target,
                apply: Callable[[Callable[[str, int], None]], Heal],
                holds_replies: bool = False) -> Heal:
        """``apply`` the fault with a watch on every hit client that can be watched (on any
        other, ``evidence_for`` declared ``activity``): sent before the links are faulted,
        and live for a node once ``apply`` says (``faulted(client, node)``) that client's
        link to it is, so a command counts only if it left after the fault was on its link
        (a cluster's six links take a while to fault); the heal ends them before it undoes
        ``apply``. ``reply-lost:client=*`` watches every client: one command of any of them
        is the firing's effect. ``holds_replies``: the fault keeps replies from coming back (lost,
        delayed downstream, its link cut), so a command whose reply was still awaited once it
        was on counts too (``chaos.workload.inject.Watch``)."""
        nodes = self.hit_nodes(env, target)
        everywhere = len(nodes) == len(env.topology.nodes)
        watches = {client: env.pool.watch(client, target.fault_id, self.name, nodes, everywhere,
                                          holds_replies)
                   for client in self.hit_clients(env, target)
                   if env.pool.watchable(client, everywhere)}

        def faulted(client: str, node: int) -> None:
            if client in watches:
                watches[client].start(node)

        try:
            heal = apply(faulted)
        except BaseException:
            for watch in watches.values():
                watch.stop()
            raise

        def unwatch_then_heal() -> None:
            for watch in watches.values():
                watch.stop()
            heal()

        return unwatch_then_heal


class Latency(LinkFault):
    name = "latency"
    summary = "latency and jitter on one client's links (Toxiproxy), up- or downstream"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(
        duration_ms=DURATION,
        latency_ms=Param("integer", min=0),
        jitter_ms=Param("integer", min=0),
        stream=Param(choices=("upstream", "downstream")),
    )
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

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: toxic_on_client(
            env.topology,
            client,
            "latency",
            partial(faulted, client),
            stream=params["stream"],
            latency=params["latency_ms"],
            jitter=params["jitter_ms"],
        ), holds_replies=params["stream"] == "downstream")


class Partition(LinkFault):
    name = "partition"
    summary = "cut a client from one node, a minority or a majority of nodes; heal"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, scope=Param(choices=("one", "minority", "majority")))
    stepping = Stepping("client")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 5.0) * ttl_ms),
            "scope": rng.choice(["one", "minority", "majority"]),
        }

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        n = len(env.topology.nodes)
        count = {"one": 1, "minority": max(1, (n - 1) // 2), "majority": n // 2 + 1}
        nodes = sorted(rng.sample(range(n), min(n, count[params["scope"]])))
        return Target(client=wait_for_holder(env, rng), nodes=nodes)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: cut_client_links(
            env.topology, client, target.nodes, partial(faulted, client)), holds_replies=True)


class Reset(LinkFault):
    name = "reset"
    summary = "reset one client's connections mid-command (indeterminate outcomes)"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, toxicity=Param(above=0, max=1))
    stepping = Stepping("client", choices={"toxicity": (1.0,)})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.5, 1.5) * ttl_ms), "toxicity": 0.5}

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: toxic_on_client(
            env.topology, client, "reset_peer", partial(faulted, client), stream="upstream",
            toxicity=params["toxicity"], timeout=0,
        ))  # fmt: skip


class ReplyLost(LinkFault):
    """One-way loss: the client's commands reach Redis and are applied, their replies never
    come back. A Toxiproxy ``timeout`` toxic (timeout 0) on the downstream stream of the
    client's links drops what Redis answers; removing it closes the connections whose
    stream it cut. The client's command times out (an indeterminate ``info``): its ``SET NX``
    may have taken the lock, its ``DEL`` may have freed it. A lock that reads the timeout
    as "refused" or stops half-way keeps a key nobody owns (``setnx-expire``'s SETNX applied,
    its EXPIRE never sent: a key with no expiry).

    It hits the holder by default; ``client=*`` hits every client, as a server whose
    outbound traffic is lost does: then the first ``SET NX`` after the holder's lost
    ``DEL`` is applied and unanswered too."""

    name = "reply-lost"
    summary = ("drop the replies to one client (its commands still reach Redis and apply): "
               "indeterminate outcomes")
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, client=NAMED_OR_EVERY)
    stepping = Stepping("client")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.0, 3.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        def apply(faulted: Callable[[str, int], None]) -> Heal:
            heals = [toxic_on_client(env.topology, client, "timeout", partial(faulted, client),
                                     stream="downstream", timeout=0)
                     for client in self.hit_clients(env, target)]

            def heal() -> None:
                for undo in heals:
                    undo()

            return heal

        return self.watched(env, target, apply, holds_replies=True)
