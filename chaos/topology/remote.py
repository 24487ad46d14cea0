"""What the ``docker`` and ``external`` providers share: servers lockchaos reaches over TCP but
did not start as processes of its own, and a Toxiproxy on which it creates each client's own
links.

``RemoteServer`` is one such server (a container, or a server of the ``external`` provider);
``RemoteNode`` a data node whose provider cannot touch its process (each fault that needs to is
refused; providers that can override what they can do). The password, if any, stays in the
object and in the connections it makes: it is never part of the ``repr``, of ``describe()`` or
of an error message.

A ``RemoteTopology`` subclass sets ``toxiproxy``, ``resource``, ``nodes``, (for the sentinel
shape) ``sentinels`` and (for the cluster shape, ``chaos.topology.cluster``) the ``internal``
and ``bus`` links the nodes announce, and says how to make one client's link to one node
(``_new_link``) and which address the Sentinels or the cluster's slot map report for a node
(``_reported``): that address is how a client's lookup is routed to its own link, and how
``master_index`` names the master.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import redis

from chaos.errors import UsageError
from chaos.topology.base import (
    CLOCK,
    NO_IMAGES,
    PAUSE,
    RESTART,
    ClientView,
    ClosedOnExit,
    host_port,
    refuse,
)
from chaos.topology.cluster import MasterAndFailover
from chaos.topology.node import READY_TIMEOUT_S, direct_client, wait_until
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

# How long the Sentinels have to name a master (``_sentinel_master``), asked every ASK_AGAIN_S.
MASTER_ASK_S = 10.0
ASK_AGAIN_S = 0.1


@dataclass
class RemoteServer:
    name: str
    host: str
    port: int
    password: str | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def client(self, *, socket_timeout: float = 2.0, decode_responses: bool = False) -> redis.Redis:
        """A direct (un-proxied) connection, for the harness and the nemesis."""
        return direct_client(
            self.host,
            self.port,
            self.password,
            socket_timeout=socket_timeout,
            decode_responses=decode_responses,
        )

    def ping(self) -> bool:
        with self.client(socket_timeout=0.5) as conn:
            return bool(conn.ping())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        wait_until(self.ping, f"{self.name} at {self.host}:{self.port} to answer PING", timeout_s)

    def check_reachable(self) -> None:
        """One PING now; ``UsageError`` saying why not (refused, wrong password, …)."""
        try:
            self.ping()
        except (redis.RedisError, OSError) as exc:
            raise UsageError(
                f"cannot reach {self.name} at {self.host}:{self.port}: {type(exc).__name__}: {exc}"
            ) from None


@dataclass
class RemoteNode(RemoteServer):
    """A data node whose provider does not control the server process: every server fault is
    refused here (campaigns never get this far: ``refuse_unsupported`` stops them first).
    Providers that can pause, kill or restart override what they can do."""

    provider: ClassVar[str] = "external"

    def pause(self) -> None:
        raise refuse(self.provider, PAUSE)

    def resume(self) -> None:
        raise refuse(self.provider, PAUSE)

    def kill(self) -> None:
        raise refuse(self.provider, RESTART)

    def wipe(self) -> None:
        raise refuse(self.provider, RESTART)

    def start(self) -> None:
        raise refuse(self.provider, RESTART)

    def set_clock_offset(self, seconds: float) -> None:
        raise refuse(self.provider, CLOCK)


class RemoteTopology(MasterAndFailover, ClosedOnExit, ABC):
    provider: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    shapes: ClassVar[tuple[str, ...]] = ("standalone", "sentinel")  # what this provider runs
    images: Mapping[str, str] = NO_IMAGES  # the docker provider's, once up: image → id

    toxiproxy: ToxiproxyAPI
    resource: RemoteServer
    nodes: list[RemoteNode]
    sentinels: list[RemoteServer]
    master_name: str | None

    def __init__(self, kind: str) -> None:
        if kind not in self.shapes:
            raise UsageError(
                f"the {self.provider} provider runs {' or '.join(self.shapes)} topologies, "
                f"not {kind!r}" + (": --topology cluster runs on --provider local or docker"
                                   if kind == "cluster" else "")
            )
        self.kind = kind
        self.internal: list[Link] = []
        self.bus: list[Link] = []  # cluster: each node's bus, as the other nodes reach it
        self.sentinels = []
        self.master_name = None
        self._client_links: dict[str, list[Link]] = {}

    @abstractmethod
    def _new_link(self, client_id: str, node: int) -> Link:
        """Create ``client_id``'s own proxy to node ``node``."""

    @abstractmethod
    def _reported(self, node: int) -> str:
        """``host:port`` under which the Sentinels report node ``node``."""

    # -- what clients and faults use -----------------------------------------------------

    def client_view(self, client_id: str) -> ClientView:
        """The client's own proxies to every node (created on first use)."""
        links = self._client_links.get(client_id)
        if links is None:
            links = [self._new_link(client_id, i) for i in range(len(self.nodes))]
            self._client_links[client_id] = links
        return ClientView(
            client_id=client_id,
            nodes=tuple(link.address for link in links),
            resource=self.resource.address,
            sentinels=tuple(s.address for s in self.sentinels),
            master_name=self.master_name if self.sentinels else None,
            route={self._reported(i): link.address for i, link in enumerate(links)},
            cluster=self.kind == "cluster",
            password=self.nodes[0].password,
            resource_password=self.resource.password,
            sentinel_password=self.sentinels[0].password if self.sentinels else None,
        )

    def client_links(self, client_id: str) -> list[Link]:
        """The proxies of one client, one per node (``client_view`` must have been called)."""
        return list(self._client_links[client_id])

    def _sentinel_master(self) -> int:
        """The node whose reported address a Sentinel names (the first that answers with
        one), asked round after round for up to ``MASTER_ASK_S``: a Sentinel behind a busy
        machine's Docker proxy and Toxiproxy can miss a one-second answer, and so can all
        three in one round (a CI's failover fault found no master, 2026-12-02)."""
        reported = [self._reported(i) for i in range(len(self.nodes))]
        heard: dict[str, str] = {}
        deadline = time.monotonic() + MASTER_ASK_S
        while True:
            for sentinel in self.sentinels:
                try:
                    with sentinel.client(decode_responses=True, socket_timeout=1.0) as conn:
                        answer = conn.sentinel_get_master_addr_by_name(self.master_name)
                except (redis.RedisError, OSError) as exc:  # unreachable now: ask the next
                    heard[sentinel.name] = type(exc).__name__
                    continue
                master = host_port((answer[0], int(answer[1]))) if answer else None
                if master in reported:
                    return reported.index(master)
                heard[sentinel.name] = f"named {master}"
            if time.monotonic() >= deadline:
                said = ", ".join(f"{name}: {what}" for name, what in heard.items())
                raise RuntimeError(f"no Sentinel named a master among this topology's nodes "
                                   f"in {MASTER_ASK_S:.0f} s ({said})")
            time.sleep(ASK_AGAIN_S)

    def describe(self) -> dict[str, Any]:
        """Addresses as plain JSON-able data (never a password)."""
        master = self.master_index()
        return {
            "provider": self.provider,
            "topology": self.kind,
            "toxiproxy": self.toxiproxy.url,
            "resource": host_port(self.resource.address),
            "nodes": [
                {
                    "name": node.name,
                    "direct": host_port(node.address),
                    "role": self._role(i, master),
                }
                for i, node in enumerate(self.nodes)
            ],
            "sentinels": [host_port(s.address) for s in self.sentinels],
            "master_name": self.master_name if self.sentinels else None,
            "clients": {
                client: {link.name: host_port(link.address) for link in links}
                for client, links in self._client_links.items()
            },
        }

    def _role(self, node: int, master: int) -> str:
        if self.kind == "cluster":  # a master of its own slots, or some master's replica
            with self.nodes[node].client(decode_responses=True) as conn:
                return str(conn.info("replication").get("role", "?"))
        return "master" if node == master or not self.sentinels else "replica"

    # -- teardown ------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Undo everything this run set up. Idempotent."""
