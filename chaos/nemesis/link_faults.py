"""Link faults: Toxiproxy on one client's own links (or every client's) to the nodes —
latency, a partition, connections reset mid-command, replies lost on the way back.

A network fault does something to the lock only when a command of a client it hits crosses
a faulted link while it is on: a holder that only works, sending nothing, is not slowed or
cut by it. Two witnesses can say so, and a firing is effective on the word of either:

* the client: the fault arms a watch on each client it hits (``WorkerPool.watch``,
  ``chaos.workload.inject.Watch``) naming the client's own links to the faulted nodes, live
  once the toxics are on, and the first command the client sends over one of them after that
  (or a connection there refused) writes the firing's ``effect`` ("c2 sent EVAL to n0 while
  latency was on"). The heal ends the watches before it removes the toxics. It sees only
  what goes through the harness's connections, or what a driver announces (without naming
  its node);
* the proxy (``DropCounter``): the bytes the fault kept from where they were going on those
  links — a client's requests a cut or a reset dropped, the replies ``reply-lost`` dropped —
  each written as a ``dropped`` event naming the client, the node and when; the checker
  counts one that came while that client had a lock operation in flight
  (``chaos.checker.coverage``). It sees every client, whatever library it talks through.
  Toxiproxy counts a connection's bytes only once it closes, so it sees what a fault that
  drops bytes did (a partition, whose links reset every connection made while they are cut
  on its first bytes; ``reset``; ``reply-lost``, whose heal closes its connections), never
  a latency (``LinkFault.drops``).

With ``then_work_ms``, a hit holder works through the fault and at least that long after the
heal: what a lock does once its links are back is the other half of the test (a renewal
thread the fault's error killed shows only then).

A firing on a client neither can see (a latency on a driver that does not announce its
commands, or on only some of the links of one that does) declares ``activity`` instead
(``LinkFault.evidence_for``).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import requests

from chaos import history as h
from chaos.nemesis.aiming import NAMED_OR_EVERY, named_or_holder
from chaos.nemesis.fault import (
    DURATION,
    THEN_WORK,
    THEN_WORK_MS,
    Fault,
    Heal,
    Param,
    Stepping,
    Target,
    TTLs,
    at_work_ms,
    takes,
    wait_for_holder,
)
from chaos.topology.base import Topology
from chaos.topology.toxiproxy import Traffic
from chaos.workload.harness import WorkloadEnv

# How often the proxy's counters are read while a fault is on: a drop is dated to within two
# readings (``DropCounter``), so this bounds how far from an operation it may be told apart.
READ_EVERY_S = 0.05
# After the heal, the counters are read every SETTLE_EVERY_S until they stand still (at most
# SETTLE_READS times): the connections the heal closed are counted within a millisecond or
# two, and the fault's stop is recorded only after.
SETTLE_EVERY_S = 0.01
SETTLE_READS = 10
PARTITION_TOXIC = "partition"  # the reset toxic a partition leaves on the links it cuts


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
    """Cut ``client``'s links to ``nodes`` (``faulted`` is told each node cut): their open
    connections close, and a connection made while they are cut is reset on the first bytes
    the client writes into it, which never reach the node. The heal restores them.

    A connection the client cannot make (a disabled proxy refuses it) leaves nothing on the
    proxy; one that it makes and loses at once leaves the bytes it wrote in Toxiproxy's
    counters, dropped, which is how the fault's effect on a client the harness cannot see is
    known (``DropCounter``). Either way the client's command never reaches the node and its
    connection fails at once."""
    api = topology.toxiproxy
    links = [topology.client_links(client)[i] for i in nodes]
    for node, link in zip(nodes, links, strict=True):
        api.add_toxic(link.name, "reset_peer", stream="upstream", toxic_name=PARTITION_TOXIC,
                      timeout=0)
        api.disable(link.name)  # closes the connections open now
        api.enable(link.name)  # the ones made from now on get the toxic
        faulted(node)

    def heal() -> None:
        for link in links:
            api.remove_toxic(link.name, PARTITION_TOXIC)

    return heal


class DropCounter:
    """The proxy's witness of a fault: reads Toxiproxy's byte counters of the faulted ``links``
    (proxy name -> (client, node)) every ``READ_EVERY_S`` while the fault is on, and writes a
    ``dropped`` event for each link on which it counted bytes dropped since the reading
    before: ``{"id", "client", "node", "since", "requests", "replies"}``, bytes of the
    client's requests and of the node's replies that the fault kept from where they were
    going, counted between ``since`` and the event's time.

    Nothing but a toxic or a cut drops a byte, so they were dropped while the fault was on.
    Toxiproxy counts a connection's bytes when it closes: a request a reset or a partition
    dropped, as it dropped it (it closes the connection); a lost reply, when the client gives
    up the connection or the heal closes it — the counter is read again after the heal until
    it stands still (``settle``), and what those readings count is dated from the fault's
    start.

    Toxiproxy adds a closed connection's received bytes a moment before its sent ones (or,
    closed from the toxic's side, after): one reading may fall in between and show a drop
    that is not one. A drop counts once two readings in a row show it (the smaller of the
    two), and the level it starts from is the larger of two first readings: a moment's
    mismatch can hide a drop, never make one."""

    def __init__(self, env: WorkloadEnv, fault_id: str, links: dict[str, tuple[str, int]]):
        self._env, self._fault_id, self._links = env, fault_id, links
        self._names = set(links)
        self._level: dict[str, tuple[float, float]] = {}  # per link: the drops counted so far
        self._last: dict[str, Traffic] = {}  # the reading before
        self._times: list[int] = []  # when the last readings were asked for
        self._started = 0  # when the first was
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"drops-{fault_id}",
                                        daemon=True)

    def start(self) -> None:
        """Read the level the fault starts from, then keep reading until ``stop``."""
        try:
            first, second = (self._read() for _ in range(2))
        except requests.RequestException:
            return  # no counters: no evidence from the proxy, never a claim
        for name in self._names:
            a, b = first.get(name, Traffic()), second.get(name, Traffic())
            self._level[name] = (max(a.dropped_requests, b.dropped_requests),
                                 max(a.dropped_replies, b.dropped_replies))
        self._last, self._started = second, self._times[0]
        self._thread.start()

    def stop(self) -> None:
        """Before the heal: the last readings while the fault is on."""
        if self._thread.is_alive():
            self._done.set()
            self._thread.join()
            self._sample()

    def settle(self) -> None:
        """After the heal: read until the counters stand still (``SETTLE_READS`` at most),
        counting the replies dropped on the connections the heal closed."""
        if not self._level:
            return
        for _ in range(SETTLE_READS):
            before = self._last
            if not self._sample(since=self._started) or self._last == before:
                return
            time.sleep(SETTLE_EVERY_S)

    def _run(self) -> None:
        while not self._done.wait(READ_EVERY_S):
            if not self._sample():
                return

    def _read(self) -> dict[str, Traffic]:
        self._times = [*self._times[-2:], h.now()]
        return self._env.topology.toxiproxy.traffic(self._names)

    def _sample(self, since: int | None = None) -> bool:
        """One reading: each link whose drops grew over two readings gets its event, counted
        ``since`` the reading two before (or as given). False when the counters cannot be
        read any more (the topology is going away)."""
        try:
            now = self._read()
        except requests.RequestException:
            return False
        for name, (requests_level, replies_level) in self._level.items():
            before, after = self._last.get(name, Traffic()), now.get(name, Traffic())
            requests_dropped = min(before.dropped_requests, after.dropped_requests)
            replies_dropped = min(before.dropped_replies, after.dropped_replies)
            grew = (max(requests_dropped - requests_level, 0),
                    max(replies_dropped - replies_level, 0))
            if any(grew):
                self._level[name] = (max(requests_dropped, requests_level),
                                     max(replies_dropped, replies_level))
                client, node = self._links[name]
                self._env.history.log(h.INFO, h.NEMESIS, h.DROPPED, value={
                    "id": self._fault_id, "client": client, "node": f"n{node}",
                    "since": self._times[0] if since is None else since,
                    "requests": int(grew[0]),
                    "replies": int(grew[1])})
        self._last = now
        return True


class LinkFault(Fault):
    """A fault on the links of the clients it hits (``hit_clients``) to some nodes
    (``hit_nodes``): its effect is reported by the watches ``watched`` arms on them."""

    evidence = h.REPORTED  # a command of a hit client crossed a faulted link while it was on
    # Whether it drops bytes, which Toxiproxy then counts (``DropCounter``): a latency only
    # delays them, and the proxy cannot tell when it met a client's commands.
    drops: ClassVar[bool] = True

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
        return h.REPORTED if self.drops and env.topology.toxiproxy.counts_traffic else h.ACTIVITY

    def watched(self, env: WorkloadEnv, target: Target,
                apply: Callable[[Callable[[str, int], None]], Heal],
                params: dict[str, Any], holds_replies: bool = False) -> Heal:
        """``apply`` the fault with its witnesses: a watch on every hit client that can be
        watched, sent before the links are faulted, and live for a node once ``apply`` says
        (``faulted(client, node)``) that client's link to it is, so a command counts only if
        it left after the fault was on its link (a cluster's six links take a while to
        fault); and, for a fault that drops bytes, a ``DropCounter`` on the hit clients'
        faulted links, from just before ``apply`` on. The heal ends them before it undoes
        ``apply`` (the counter reads once more after it). ``reply-lost:client=*`` watches
        every client: one command of any of them is the firing's effect. ``holds_replies``:
        the fault keeps replies from coming back (lost, delayed downstream, its link cut), so
        a command whose reply was still awaited once it was on counts too
        (``chaos.workload.inject.Watch``). With ``then_work_ms`` in ``params``, each hit
        client's critical section under way lasts through the fault and that much longer
        after the heal, at least: a watchdog that died of the fault's error shows only in a
        holder that runs on with its links back (``chaos.checker.renewals``), and one hit
        late in its section had let go first. (A holder that sends nothing while it holds —
        a lock that stopped extending — then sends nothing the fault could meet.)"""
        nodes = self.hit_nodes(env, target)
        everywhere = len(nodes) == len(env.topology.nodes)
        clients = self.hit_clients(env, target)
        watches = {client: env.pool.watch(client, target.fault_id, self.name, nodes, everywhere,
                                          holds_replies)
                   for client in clients if env.pool.watchable(client, everywhere)}
        drops = DropCounter(env, target.fault_id, {
            env.topology.client_links(client)[node].name: (client, node)
            for client in clients for node in nodes})
        if self.drops and env.topology.toxiproxy.counts_traffic:
            drops.start()

        def faulted(client: str, node: int) -> None:
            if client in watches:
                watches[client].start(node)

        def unwatch() -> None:
            for watch in watches.values():
                watch.stop()
            drops.stop()

        then_work_ms = params.get(THEN_WORK)
        try:
            heal = apply(faulted)
        except BaseException:
            unwatch()
            raise
        if then_work_ms:  # through the fault, too: a holder near its section's end let go
            for client in clients:
                env.pool.work_on(client, float(params.get("duration_ms", 0)) + then_work_ms)

        def unwatch_then_heal() -> None:
            unwatch()
            heal()
            if then_work_ms:
                for client in clients:
                    env.pool.work_on(client, then_work_ms)
            drops.settle()

        return unwatch_then_heal


class Latency(LinkFault):
    name = "latency"
    summary = "latency and jitter on one client's links (Toxiproxy), up- or downstream"
    effects = frozenset({h.DISTURBS_NETWORK})
    drops = False
    parameters = takes(
        duration_ms=DURATION,
        latency_ms=Param("integer", min=0),
        jitter_ms=Param("integer", min=0),
        stream=Param(choices=("upstream", "downstream")),
        then_work_ms=THEN_WORK_MS,
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
        ), params, holds_replies=params["stream"] == "downstream")


class Partition(LinkFault):
    name = "partition"
    summary = "cut a client from one node, a minority or a majority of nodes; heal"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, scope=Param(choices=("one", "minority", "majority")),
                       then_work_ms=THEN_WORK_MS)
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
        holder = wait_for_holder(env, rng, held_for_ms=at_work_ms(env, params))
        return Target(client=holder, nodes=nodes)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: cut_client_links(
            env.topology, client, target.nodes, partial(faulted, client)), params,
            holds_replies=True)


class Reset(LinkFault):
    name = "reset"
    summary = "reset one client's connections mid-command (indeterminate outcomes)"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, toxicity=Param(above=0, max=1),
                       then_work_ms=THEN_WORK_MS)
    stepping = Stepping("client", choices={"toxicity": (1.0,)})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.5, 1.5) * ttl_ms), "toxicity": 0.5}

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: toxic_on_client(
            env.topology, client, "reset_peer", partial(faulted, client), stream="upstream",
            toxicity=params["toxicity"], timeout=0,
        ), params)  # fmt: skip


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
    parameters = takes(duration_ms=DURATION, client=NAMED_OR_EVERY, then_work_ms=THEN_WORK_MS)
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

        return self.watched(env, target, apply, params, holds_replies=True)
