"""What the workload and the nemesis need from a topology, whoever runs it.

Three providers run the same shapes (independent masters; a master, replicas and Sentinels):
``local`` starts real processes on 127.0.0.1 (``chaos.topology.local``), ``docker`` a Compose
project (``chaos.topology.docker``), ``external`` uses servers that already run elsewhere
(``chaos.topology.external``). Every client reaches every data node through its own
Toxiproxy link, whoever the provider, so network faults work everywhere.

Faults that act on the servers themselves do not: a provider declares the ``capabilities``
it has, and a fault that needs one it lacks is refused before anything starts, in one line
naming the fault and the provider — rather than failing halfway through a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Any, Protocol, Self

import redis

from chaos.errors import UsageError
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

# What a topology can be: independent masters; one master with replicas and Sentinels; a
# Redis Cluster of 3 masters with a replica each.
SHAPES = ("standalone", "sentinel", "cluster")
REPLICATED = ("sentinel", "cluster")  # shapes with replicas a master can fail over to

Address = tuple[str, int]
NO_IMAGES: Mapping[str, str] = MappingProxyType({})  # a provider that runs no containers


def host_port(address: Address) -> str:
    """``host:port``."""
    return f"{address[0]}:{address[1]}"


@dataclass(frozen=True)
class ClientView:
    """Everything one client process needs to reach the topology; plain data, picklable.

    ``nodes`` are this client's proxies to every data node, in node order. ``route`` maps an
    address the Sentinels (or, with ``cluster``, the cluster's MOVED and ASK replies and its
    slot map) report (``host:port``) to this client's proxy for the same node. Passwords
    (external servers may have them) are never part of the ``repr``.
    """

    client_id: str
    nodes: tuple[Address, ...]
    resource: Address
    sentinels: tuple[Address, ...] = ()
    master_name: str | None = None
    route: dict[str, Address] = field(default_factory=dict)
    password: str | None = field(default=None, repr=False)
    resource_password: str | None = field(default=None, repr=False)
    sentinel_password: str | None = field(default=None, repr=False)
    cluster: bool = False  # the nodes form a Redis Cluster: clients follow its slot map


# Capabilities beyond Toxiproxy (which every provider has).
PAUSE = "pause"
RESTART = "restart"
CLOCK = "clock"
CLUSTER_LINKS = "cluster-links"
PERSISTENCE = "persistence"

ABILITIES = {
    PAUSE: "pause servers",
    RESTART: "kill and restart servers",
    CLOCK: "jump server clocks",
    CLUSTER_LINKS: "cut the replication and Sentinel links",
    PERSISTENCE: "start servers with appendfsync-always persistence",
}
ALL_CAPABILITIES = frozenset(ABILITIES)


class Endpoint(Protocol):
    """A Redis server lockchaos may talk to directly (the harness, the nemesis)."""

    @property
    def name(self) -> str: ...

    @property
    def address(self) -> tuple[str, int]: ...

    def client(
        self, *, socket_timeout: float = ..., decode_responses: bool = ...
    ) -> redis.Redis: ...


class ServerNode(Endpoint, Protocol):
    """A data node as faults see it. Providers without a capability refuse its methods."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def kill(self) -> None: ...

    def wipe(self) -> None: ...

    def start(self) -> None: ...

    def ping(self) -> bool: ...

    def wait_ready(self, timeout_s: float = ...) -> None: ...

    def set_clock_offset(self, seconds: float) -> None: ...


class Topology(Protocol):
    """A running topology: what ``chaos.workload`` and ``chaos.nemesis`` use of one."""

    @property
    def provider(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    @property
    def kind(self) -> str: ...

    @property
    def nodes(self) -> Sequence[ServerNode]: ...

    @property
    def resource(self) -> Endpoint: ...

    @property
    def toxiproxy(self) -> ToxiproxyAPI: ...

    @property
    def internal(self) -> Sequence[Link]: ...

    def client_view(self, client_id: str) -> ClientView: ...

    def client_links(self, client_id: str) -> list[Link]: ...

    def master_index(self, key: str | None = None) -> int:
        """The node the topology calls master (with ``cluster``: of ``key``'s slot)."""
        ...

    def cluster_links(self, node: int) -> list[Link]:
        """The links through which the rest of the topology (replicas, Sentinels, the cluster
        bus) reaches ``node`` and, in a cluster, through which ``node`` reaches its replicas'
        buses: cutting them isolates it from the replica that takes over while clients still
        reach it."""
        ...

    def elect(self, node: int) -> None:
        """Have a replica of master ``node`` (cut off by ``cluster_links``) take over. Sentinel
        does this by itself once the master stops answering it (nothing to do); a Redis Cluster
        of Redis 7 still hears a master that only its own links reach, so a replica is asked
        to take over (``CLUSTER FAILOVER TAKEOVER``: its own bus is cut too, no vote would
        reach it)."""
        ...

    def await_demotion(self, node: int) -> None:
        """Wait until the old master ``node``, healed after ``elect``, serves as a replica
        again: in a Redis Cluster the next failover elects one of the new master's replicas,
        and until then it has none. Sentinel demotes it in its own time, and promotes
        whichever replica it has (nothing to wait for)."""
        ...

    @property
    def images(self) -> Mapping[str, str]:
        """The container images the topology runs, name → id (what exactly was tested; a
        run's campaign.json records them); empty for a provider that runs no containers."""
        ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Topology: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class ClosedOnExit:
    """``with topology:`` closes it however the block ends (exception, Ctrl-C, SIGTERM)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class FaultNeeds(Protocol):
    """What a fault asks of the provider (``chaos.nemesis.Fault`` has these)."""

    @property
    def name(self) -> str: ...

    @property
    def provider_needs(self) -> frozenset[str]: ...

    @property
    def persistence(self) -> str: ...


def refuse_unsupported(
    provider: str, capabilities: Mapping[str, frozenset[str]], faults: Iterable[FaultNeeds]
) -> None:
    """``UsageError`` for the first fault ``provider`` cannot do, naming both and the
    providers that can (``capabilities``: provider name → what it can do)."""
    for fault in faults:
        needs = set(fault.provider_needs)
        if fault.persistence != "none":
            needs.add(PERSISTENCE)
        missing = sorted(needs - capabilities[provider])
        if missing:
            able = [name for name, can in capabilities.items() if needs <= can]
            raise UsageError(
                f"{fault.name} needs a provider that can {ABILITIES[missing[0]]}, which the "
                f"{provider} provider cannot: drop {fault.name}"
                + "".join(f" or use --provider {name}" for name in able)
            )


def refuse(provider: str, capability: str) -> UsageError:
    """The error a node raises when asked for something its provider cannot do."""
    return UsageError(f"the {provider} provider cannot {ABILITIES[capability]}")
