"""What the ``docker`` and ``external`` providers share: servers lockchaos reaches over TCP but
did not start itself, and a Toxiproxy on which it creates each client's own links.

A subclass sets ``toxiproxy``, ``resource``, ``nodes`` and (for the sentinel shape)
``sentinels``, and says how to make one client's link to one node (``_new_link``) and which
address the Sentinels report for a node (``_reported``): that address is how a client's
Sentinel lookup is routed to its own link, and how ``master_index`` names the master.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import redis

from chaos.errors import UsageError
from chaos.topology.endpoint import RemoteNode, RemoteServer
from chaos.topology.local import ClientView, fmt
from chaos.topology.provider import ClosedOnExit
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

KINDS = ("standalone", "sentinel")


class RemoteTopology(ClosedOnExit, ABC):
    provider: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]

    toxiproxy: ToxiproxyAPI
    resource: RemoteServer
    nodes: list[RemoteNode]
    sentinels: list[RemoteServer]
    master_name: str | None

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise UsageError(f"unknown topology {kind!r}: choose standalone or sentinel")
        self.kind = kind
        self.internal: list[Link] = []
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
            password=self.nodes[0].password,
            resource_password=self.resource.password,
            sentinel_password=self.sentinels[0].password if self.sentinels else None,
        )

    def client_links(self, client_id: str) -> list[Link]:
        """The proxies of one client, one per node (``client_view`` must have been called)."""
        return list(self._client_links[client_id])

    def master_index(self) -> int:
        """Index of the node the Sentinels call master (always 0 without Sentinels)."""
        if not self.sentinels:
            return 0
        reported = [self._reported(i) for i in range(len(self.nodes))]
        for sentinel in self.sentinels:
            try:
                with sentinel.client(decode_responses=True, socket_timeout=1.0) as conn:
                    answer = conn.sentinel_get_master_addr_by_name(self.master_name)
            except (redis.RedisError, OSError):  # that Sentinel is unreachable: ask the next
                continue
            master = fmt((answer[0], int(answer[1]))) if answer else None
            if master in reported:
                return reported.index(master)
        raise RuntimeError("no Sentinel named a master among this topology's nodes")

    def describe(self) -> dict[str, Any]:
        """Addresses as plain JSON-able data (never a password)."""
        master = self.master_index()
        return {
            "provider": self.provider,
            "topology": self.kind,
            "toxiproxy": self.toxiproxy.url,
            "resource": fmt(self.resource.address),
            "nodes": [
                {
                    "name": node.name,
                    "direct": fmt(node.address),
                    "role": "master" if i == master or not self.sentinels else "replica",
                }
                for i, node in enumerate(self.nodes)
            ],
            "sentinels": [fmt(s.address) for s in self.sentinels],
            "master_name": self.master_name if self.sentinels else None,
            "clients": {
                client: {link.name: fmt(link.address) for link in links}
                for client, links in self._client_links.items()
            },
        }

    # -- teardown ------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Undo everything this run set up. Idempotent."""
