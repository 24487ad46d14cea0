"""The embedded provider: real redis-server, redis-sentinel and toxiproxy-server processes on
127.0.0.1, in a per-run temporary directory, on ports the kernel picks.

Links (all Toxiproxy proxies):

* ``cX-nI`` — client X's own link to node I, created when the client's view is first asked
  for, so a fault can hit one client's view of one node and nobody else's;
* ``int-nI`` (sentinel topology) — node I as the *cluster* sees it: replicas replicate from
  ``int-n<master>``, replicas announce ``int-nI`` (``replica-announce-port``) and Sentinels
  monitor through it. Replication and Sentinel share this link on purpose: Sentinel compares
  the master address a replica reports with its own, and "fixes" any replica whose master
  address differs (``+fix-slave-config``), so giving them separate proxies would make Sentinel
  undo the wiring. Cutting ``int-n<master>`` cuts replication (and Sentinel's view of the
  master, which is how a failover is provoked) without touching any client link.

Clients never see ``int-*`` addresses: the ``ClientView`` routes an address Sentinel reports to
the client's own proxy for the same node.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.topology import binaries
from chaos.topology.base import (
    ALL_CAPABILITIES,
    CLOCK,
    NO_IMAGES,
    SHAPES,
    ClientView,
    ClosedOnExit,
    host_port,
)
from chaos.topology.cluster import CLUSTER_MASTERS, MasterAndFailover, form_cluster
from chaos.topology.node import (
    RedisNode,
    SentinelNode,
    check_node_count,
    sentinel_knows_all,
    wait_until,
)
from chaos.topology.ports import free_ports
from chaos.topology.processes import Supervisor
from chaos.topology.reaper import Reaper
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

MASTER_NAME = "lockchaos"
SENTINELS = 3
SENTINEL_QUORUM = 2
REPLICAS = 2

@dataclass(frozen=True)
class SentinelTuning:
    """Fast-failover settings for tests (Sentinel's defaults are 30 s and 3 min)."""

    down_after_ms: int = 600
    failover_timeout_ms: int = 3000


class LocalTopology(MasterAndFailover, ClosedOnExit):
    """A running topology. Use as a context manager, or call ``close()``: teardown is total.

    ``clock``: run the data nodes under libfaketime so their clocks can be jumped — True
    (required: ``UsageError`` when the redis-server found is not the MALLOC=libc build),
    False (never), None (whenever the binaries allow). Without it the topology lacks the
    ``clock`` capability.
    """

    provider = "local"
    capabilities = ALL_CAPABILITIES  # real processes: every fault applies
    images = NO_IMAGES  # the redis-server binaries of .cache, not images

    def __init__(
        self,
        kind: str,
        *,
        nodes: int = 5,
        tuning: SentinelTuning | None = None,
        persistence: str = "none",
        clock: bool | None = None,
    ) -> None:
        if kind not in SHAPES:
            raise UsageError(f"unknown topology {kind!r}: choose {', '.join(SHAPES)}")
        if kind == "standalone":
            check_node_count(nodes)
        self.kind = kind
        self.tuning = tuning or SentinelTuning()
        for program in ("redis-server", "redis-sentinel", "toxiproxy-server"):
            binaries.find(program)  # fail fast, with one clear line, before starting anything
        if clock:
            binaries.require_clock("a clock fault")
        self.clock = binaries.clock_problem() is None if clock is None else clock
        self.capabilities = ALL_CAPABILITIES if self.clock else ALL_CAPABILITIES - {CLOCK}
        self.run_dir = Path(tempfile.mkdtemp(prefix="lockchaos-"))
        self._reaper = Reaper(run_dir=self.run_dir)
        self.supervisor = Supervisor(self.run_dir)
        self.nodes: list[RedisNode] = []
        self.sentinels: list[SentinelNode] = []
        self.internal: list[Link] = []
        self.bus: list[Link] = []  # cluster: each node's bus, as the other nodes reach it
        self._client_links: dict[str, list[Link]] = {}
        self._closed = False
        try:
            if kind == "cluster":
                self._start_cluster(persistence)
            else:
                self._start(nodes if kind == "standalone" else 1 + REPLICAS, persistence)
        except BaseException:
            self.close()
            raise

    # -- start-up ------------------------------------------------------------------------

    def _start(self, data_nodes: int, persistence: str) -> None:
        sentinel = self.kind == "sentinel"
        extra = data_nodes + SENTINELS if sentinel else 0
        ports = free_ports(2 + data_nodes + extra)
        api_port, resource_port = ports[0], ports[1]
        node_ports = ports[2 : 2 + data_nodes]
        internal_ports = ports[2 + data_nodes : 2 + 2 * data_nodes] if sentinel else []
        sentinel_ports = ports[2 + 2 * data_nodes :] if sentinel else []

        self._start_proxy_and_resource(api_port, resource_port)
        if sentinel:
            self.internal = [
                self.toxiproxy.create(f"int-n{i}", internal_ports[i], node_ports[i])
                for i in range(data_nodes)
            ]
        for i, port in enumerate(node_ports):
            node = self._node(f"n{i}", port, persistence=persistence)
            if sentinel:
                node.announce_port = internal_ports[i]
                node.replicaof = internal_ports[0] if i else None
            node.start()
            self.nodes.append(node)
        for node in [self.resource, *self.nodes]:
            node.wait_ready()
        if sentinel:
            for replica in self.nodes[1:]:
                wait_until(partial(_synced, replica), f"{replica.name} to sync with its master")
            self._start_sentinels(sentinel_ports, internal_ports)

    def _start_cluster(self, persistence: str) -> None:
        """``CLUSTER_MASTERS`` masters with a replica each. Every node announces proxies
        (``int-nI`` for its port, ``bus-nI`` for its bus) as its address, so replication, the
        cluster bus and the slot map clients are given all go through links a fault can cut;
        clients get their own links and translate the announced addresses (``route``)."""
        count = 2 * CLUSTER_MASTERS
        ports = free_ports(2 + 4 * count)
        api_port, resource_port = ports[0], ports[1]
        node_ports, bus_ports, internal_ports, internal_bus_ports = (
            ports[2 + k * count : 2 + (k + 1) * count] for k in range(4)
        )
        self._start_proxy_and_resource(api_port, resource_port)
        for i in range(count):
            self.internal.append(
                self.toxiproxy.create(f"int-n{i}", internal_ports[i], node_ports[i])
            )
            self.bus.append(self.toxiproxy.create(f"bus-n{i}", internal_bus_ports[i], bus_ports[i]))
            node = self._node(f"n{i}", node_ports[i], persistence=persistence)
            node.cluster = (bus_ports[i], internal_ports[i], internal_bus_ports[i])
            node.start()
            self.nodes.append(node)
        for node in [self.resource, *self.nodes]:
            node.wait_ready()
        form_cluster(self.nodes, "127.0.0.1", internal_ports, internal_bus_ports)

    def _start_proxy_and_resource(self, api_port: int, resource_port: int) -> None:
        """What every shape starts first: the Toxiproxy server and the shared resource."""
        self.supervisor.spawn(
            # -proxy-metrics: its byte counters, a network fault's evidence (link_faults)
            [binaries.find("toxiproxy-server"), "-host", "127.0.0.1", "-port", str(api_port),
             "-proxy-metrics"],
            log=self.run_dir / "toxiproxy.log",
        )
        self.resource = self._node("resource", resource_port, persistence="none")
        self.resource.start()
        self.toxiproxy = ToxiproxyAPI(api_port)
        self.toxiproxy.wait_ready()

    def _node(self, name: str, port: int, *, persistence: str) -> RedisNode:
        return RedisNode(
            name=name,
            port=port,
            directory=self.run_dir / name,
            supervisor=self.supervisor,
            persistence=persistence,
            faketime=self.clock,
        )

    def _start_sentinels(self, ports: list[int], internal_ports: list[int]) -> None:
        ids = [secrets.token_hex(20) for _ in ports]
        for j, port in enumerate(ports):
            lines = [
                f"sentinel myid {ids[j]}",
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {internal_ports[0]} {SENTINEL_QUORUM}",
                f"sentinel down-after-milliseconds {MASTER_NAME} {self.tuning.down_after_ms}",
                f"sentinel failover-timeout {MASTER_NAME} {self.tuning.failover_timeout_ms}",
                f"sentinel parallel-syncs {MASTER_NAME} {REPLICAS}",
            ]
            # Seeding peers and replicas spares the 2 s wait for the first hello messages.
            lines += [
                f"sentinel known-replica {MASTER_NAME} 127.0.0.1 {p}" for p in internal_ports[1:]
            ]
            lines += [
                f"sentinel known-sentinel {MASTER_NAME} 127.0.0.1 {ports[k]} {ids[k]}"
                for k in range(len(ports))
                if k != j
            ]
            node = SentinelNode(
                name=f"s{j}",
                port=port,
                directory=self.run_dir / f"s{j}",
                supervisor=self.supervisor,
                config_lines=lines,
            )
            node.start()
            self.sentinels.append(node)
        for node in self.sentinels:
            node.wait_ready()
            wait_until(partial(_knows_all, node), f"{node.name} to see the cluster")

    # -- what clients and faults use -----------------------------------------------------

    def client_view(self, client_id: str) -> ClientView:
        """The client's own proxies to every node (created on first use)."""
        links = self._client_links.get(client_id)
        if links is None:
            ports = free_ports(len(self.nodes))
            links = [
                self.toxiproxy.create(f"{client_id}-{node.name}", port, node.port)
                for node, port in zip(self.nodes, ports, strict=True)
            ]
            self._client_links[client_id] = links
        route = {
            host_port(internal.address): link.address
            for internal, link in zip(self.internal, links, strict=False)
        }
        return ClientView(
            client_id=client_id,
            nodes=tuple(link.address for link in links),
            resource=self.resource.address,
            sentinels=tuple(s.address for s in self.sentinels),
            master_name=MASTER_NAME if self.sentinels else None,
            route=route,
            cluster=self.kind == "cluster",
        )

    def client_links(self, client_id: str) -> list[Link]:
        """The proxies of one client, one per node (``client_view`` must have been called)."""
        return list(self._client_links[client_id])

    @property
    def clients(self) -> list[str]:
        return list(self._client_links)

    def _sentinel_master(self) -> int:
        for sentinel in self.sentinels:
            if not sentinel.running:
                continue
            with sentinel.client(decode_responses=True) as conn:
                _, port = conn.sentinel_get_master_addr_by_name(MASTER_NAME)
            for i, link in enumerate(self.internal):
                if link.listen_port == int(port):
                    return i
        raise RuntimeError("no Sentinel could name the master")

    def describe(self) -> dict[str, Any]:
        """Addresses, direct and proxied, as plain JSON-able data."""
        nodes = []
        master = self.master_index()
        for i, node in enumerate(self.nodes):
            entry: dict[str, Any] = {"name": node.name, "direct": host_port(node.address)}
            if self.kind == "cluster":
                entry["internal"] = host_port(self.internal[i].address)
                entry["role"] = node.info("replication").get("role", "?")
            elif self.internal:
                entry["internal"] = host_port(self.internal[i].address)
                entry["role"] = "master" if i == master else "replica"
            else:
                entry["role"] = "master"
            nodes.append(entry)
        return {
            "provider": self.provider,
            "topology": self.kind,
            "run_dir": str(self.run_dir),
            "toxiproxy": self.toxiproxy.url,
            "resource": host_port(self.resource.address),
            "nodes": nodes,
            "sentinels": [host_port(s.address) for s in self.sentinels],
            "master_name": MASTER_NAME if self.sentinels else None,
            "clients": {
                client: {link.name: host_port(link.address) for link in links}
                for client, links in self._client_links.items()
            },
        }

    # -- teardown ------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process this topology started and delete its directory, then dismiss
        the reaper, with nothing left to do. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.supervisor.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        self._reaper.dismiss()


def _synced(replica: RedisNode) -> bool:
    return replica.info("replication").get("master_link_status") == "up"


def _knows_all(sentinel: SentinelNode) -> bool:
    with sentinel.client(decode_responses=True) as conn:
        return sentinel_knows_all(conn, MASTER_NAME, REPLICAS, SENTINELS - 1)
