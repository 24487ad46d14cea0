"""A Redis Cluster, whoever runs its nodes: forming it, and asking it who the master of a key is.

The cluster is formed by hand rather than with ``redis-cli --cluster create``, so the nodes
meet each other at their *announced* addresses (the Toxiproxy's ``int-*``/``bus-*`` links:
127.0.0.1 for local processes, the Toxiproxy container's IP for containers) from the start:
every byte of replication and cluster bus traffic then crosses a link a fault can cut.
Masters are nodes 0…``CLUSTER_MASTERS``−1, each with its slots; node ``CLUSTER_MASTERS`` + i
replicates master i. The harness itself talks to each node directly (``Endpoint.client``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import partial

import redis
from redis.crc import key_slot

from chaos.topology.base import Endpoint
from chaos.topology.node import wait_until
from chaos.topology.toxiproxy import Link

CLUSTER_MASTERS = 3
SLOTS = 16384
DEFAULT_KEY = "lockchaos:lock"  # the workload's lock key (``WorkloadConfig.lock_name``)
FORM_TIMEOUT_S = 30.0
# A healed old master stepped down within 0.05 s of its links coming back (164 heals,
# three busy loops on two cores); the bound is for a machine far busier than that.
DEMOTION_TIMEOUT_S = 15.0


class MasterAndFailover:
    """What the local and the remote topologies share of ``Topology``'s master and failover
    methods: in the cluster shape the slot map names the master and a replica is asked to
    take over; in the sentinel shape the provider asks its Sentinels (``_sentinel_master``),
    who elect by themselves; standalone, node 0 is the master."""

    kind: str
    nodes: Sequence[Endpoint]
    internal: list[Link]  # replication and Sentinel (cluster: slot map) links, per node
    bus: list[Link]  # cluster: each node's bus, as the other nodes reach it
    sentinels: Sequence[Endpoint]

    def cluster_links(self, node: int) -> list[Link]:
        """Its replication link and, in a cluster, its bus and its replicas' buses: a node
        reaches the others' buses through *their* links, so with its own bus alone cut an old
        master still pinged its replica, heard it claim the slots with a newer epoch, and
        stepped down 0.1–0.4 s after the promotion (its holder then followed ``MOVED``)."""
        if self.kind != "cluster":
            return [self.internal[node], *self.bus[node : node + 1]]
        return [self.internal[node], self.bus[node],
                *(self.bus[i] for i in replicas_of(self.nodes, node))]

    def elect(self, node: int) -> None:
        if self.kind == "cluster":
            elect_replica(self.nodes, node)

    def await_demotion(self, node: int) -> None:
        if self.kind == "cluster":
            wait_until(partial(_is_replica, self.nodes[node]),
                       f"the healed old master {self.nodes[node].name} to step down",
                       DEMOTION_TIMEOUT_S)

    def master_index(self, key: str | None = None) -> int:
        """Index of the master (in a cluster, of ``key``'s slot as most nodes see it; with
        Sentinels, the one they name; else 0)."""
        if self.kind == "cluster":
            return cluster_master(self.nodes, self.internal, key or DEFAULT_KEY)
        if not self.sentinels:
            return 0
        return self._sentinel_master()

    def _sentinel_master(self) -> int:
        """The index of the node the Sentinels name master (the providers' own way to ask)."""
        raise NotImplementedError


def form_cluster(nodes: Sequence[Endpoint], host: str, ports: Sequence[int],
                 bus_ports: Sequence[int]) -> None:
    """Give each node its own config epoch, meet, assign slots, attach replicas, and wait until
    every node says ``ok``, knows the same current epoch, and every replica is in sync.
    ``host``, ``ports`` and ``bus_ports`` are the addresses the nodes announce (``CLUSTER
    MEET`` takes an IP, not a name).

    The epochs are set before the nodes meet, as ``redis-cli --cluster create`` does: left to
    the cluster, masters that start at epoch 0 settle their collisions one gossip round at a
    time, and a replica asked to take over before they had (0.8 s after ``ok``, on two busy
    cores) claimed the slots at the epoch its master had just moved to. An equal epoch
    changes no one's slot map: no node saw the promotion, and the old master never stepped
    down."""
    masters = len(nodes) // 2
    for epoch, node in enumerate(nodes, start=1):
        with node.client() as conn:
            conn.execute_command("CLUSTER", "SET-CONFIG-EPOCH", epoch)
    addresses = list(zip(ports[1:], bus_ports[1:], strict=True))
    _meet(nodes[0], host, addresses)
    share = SLOTS // masters
    for i in range(masters):
        last = SLOTS - 1 if i == masters - 1 else (i + 1) * share - 1
        with nodes[i].client() as conn:
            conn.execute_command("CLUSTER", "ADDSLOTSRANGE", i * share, last)
    wait_until(lambda: _meet(nodes[0], host, addresses)
               and all(_knows(node, len(nodes)) for node in nodes),
               "the cluster's nodes to meet", FORM_TIMEOUT_S)
    for i in range(masters, len(nodes)):
        master_id = _node_id(nodes[i - masters])
        wait_until(partial(_replicate, nodes[i], master_id),
                   f"{nodes[i].name} to become a replica", FORM_TIMEOUT_S)
    wait_until(partial(_formed, nodes), "the cluster to be ok", FORM_TIMEOUT_S)


def cluster_master(nodes: Sequence[Endpoint], announced: Sequence[Link], key: str) -> int:
    """The index of the master of ``key``'s slot as most reachable nodes see it (an isolated
    old master still believes it is one: the majority decides)."""
    slot = key_slot(key.encode())
    by_port = {link.listen_port: i for i, link in enumerate(announced)}
    votes: Counter[int] = Counter()
    for node in nodes:
        try:
            with node.client(socket_timeout=0.5, decode_responses=True) as conn:
                ranges = conn.execute_command("CLUSTER", "SLOTS")
        except (redis.RedisError, OSError):
            continue
        for first, last, master, *_ in ranges:
            if int(first) <= slot <= int(last) and int(master[1]) in by_port:
                votes[by_port[int(master[1])]] += 1
    if not votes:
        raise RuntimeError(f"no cluster node named a master for slot {slot}")
    return votes.most_common(1)[0][0]


def replicas_of(nodes: Sequence[Endpoint], master: int) -> list[int]:
    """The indexes of the nodes that replicate ``nodes[master]``, as each says itself (the
    replica of master i is node ``CLUSTER_MASTERS`` + i until a failover moves roles
    around); a node that does not answer is not counted."""
    master_id = _node_id(nodes[master])
    replicas = []
    for i, node in enumerate(nodes):
        if i == master:
            continue
        try:
            with node.client(decode_responses=True) as conn:
                if conn.info("replication").get("role") != "slave":
                    continue
                mine = str(conn.execute_command("CLUSTER", "MYID"))
                rows = _rows(conn)
        except (redis.RedisError, OSError):
            continue
        me = next((row for row in rows if row[0] == mine), [])
        if len(me) > 3 and me[3] == master_id:
            replicas.append(i)
    return replicas


def elect_replica(nodes: Sequence[Endpoint], master: int) -> None:
    """Have a replica of ``nodes[master]`` take over (``CLUSTER FAILOVER TAKEOVER``: it claims
    the slots with a new epoch without a vote, as the majority's vote would have it; its bus
    is cut with its master's, ``cluster_links``, so no vote could reach it, and the old
    master does not hear of it until healed). Every replica is asked until one accepts."""
    for index in replicas_of(nodes, master):
        try:
            with nodes[index].client(decode_responses=True) as conn:
                conn.execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
                return
        except (redis.RedisError, OSError):
            continue
    raise RuntimeError(f"no replica of {nodes[master].name} could be asked to take over")


def _meet(first: Endpoint, host: str, addresses: Sequence[tuple[int, int]]) -> bool:
    """``first`` meets each of ``addresses`` (port, bus port) at ``host`` that it does not know
    yet, not even as a handshake; True when it knew them all. A handshake no one answered
    within the node timeout is dropped and never tried again: a MEET that a loaded machine
    delayed past 1 s left a node out of the cluster for good (a fresh clone's CI: "timed out
    after 30 s waiting for the cluster's nodes to meet")."""
    with first.client(decode_responses=True) as conn:
        known = {row[1].split("@")[0] for row in _rows(conn)}
        missing = [(port, bus) for port, bus in addresses if f"{host}:{port}" not in known]
        for port, bus in missing:
            conn.execute_command("CLUSTER", "MEET", host, port, bus)
    return not missing


def _knows(node: Endpoint, count: int) -> bool:
    with node.client(decode_responses=True) as conn:
        known = _rows(conn)
    return len(known) == count and not any("handshake" in row[2] for row in known)


def _rows(conn: redis.Redis) -> list[list[str]]:
    """``CLUSTER NODES``, a node a row: id, address (ip:port@bus), flags, master id, …"""
    return [row.split() for row in str(conn.execute_command("CLUSTER", "NODES")).splitlines()
            if row.strip()]


def _node_id(node: Endpoint) -> str:
    with node.client(decode_responses=True) as conn:
        return str(conn.execute_command("CLUSTER", "MYID"))


def _replicate(node: Endpoint, master_id: str) -> bool:
    with node.client(decode_responses=True) as conn:
        conn.execute_command("CLUSTER", "REPLICATE", master_id)
    return True


def _is_replica(node: Endpoint) -> bool:
    with node.client(decode_responses=True) as conn:
        return str(conn.execute_command("ROLE")[0]) == "slave"


def _cluster_info(node: Endpoint) -> dict[str, str]:
    with node.client(decode_responses=True) as conn:
        text = str(conn.execute_command("CLUSTER", "INFO"))
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


def _formed(nodes: Sequence[Endpoint]) -> bool:
    """Every node says ``ok`` (a replica: in sync) and all know the same current epoch; each
    node's ``CLUSTER INFO`` read once."""
    epochs = set()
    for node in nodes:
        info = _cluster_info(node)
        if not _ready(node, info):
            return False
        epochs.add(info["cluster_current_epoch"])
    return len(epochs) == 1


def _ready(node: Endpoint, info: dict[str, str]) -> bool:
    ok = info["cluster_state"] == "ok"
    with node.client(decode_responses=True) as conn:
        replication = conn.info("replication")
    if replication.get("role") == "slave":
        return ok and replication.get("master_link_status") == "up"
    return ok
