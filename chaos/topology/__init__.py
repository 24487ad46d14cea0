"""Real Redis topologies behind Toxiproxy, whoever runs them.

``open_provider("local", "sentinel", faults=...)`` is the one entry point: it refuses, before
anything starts, a provider name it does not know, a config file it cannot use, and any fault
the provider cannot do (``chaos.topology.base.refuse_unsupported``), then returns a running
``Topology`` (a context manager: teardown is total). ``check_provider`` does only the refusing,
for commands that want to fail before they create a run directory. ``start("standalone",
nodes=5)`` is the local shortcut; ``topology.client_view("c1")`` gives one client its own
proxied addresses.

Where things are: ``base`` (what every provider's topology offers, and the plain data a
client gets), ``local`` (processes on 127.0.0.1: ``node``, ``processes``, ``binaries``,
``ports``, ``reaper``), ``remote`` (what ``docker`` and ``external`` share), ``toxiproxy``
(the one Toxiproxy client). docs/providers.md has the providers' details.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from chaos.errors import UsageError
from chaos.topology import binaries
from chaos.topology.base import (
    CLOCK,
    SHAPES,
    ClientView,
    FaultNeeds,
    Topology,
    refuse_unsupported,
)
from chaos.topology.docker import DockerTopology
from chaos.topology.external import ExternalTopology, load_config
from chaos.topology.images import DEFAULT_SERVER as LOCAL_SERVER
from chaos.topology.images import SERVERS
from chaos.topology.local import LocalTopology, SentinelTuning
from chaos.topology.node import RedisNode, SentinelNode
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

PROVIDERS = ("local", "docker", "external")
CAPABILITIES = {
    "local": LocalTopology.capabilities,
    "docker": DockerTopology.capabilities,
    "external": ExternalTopology.capabilities,
}
DEFAULT_NODES = 5


def check_provider(
    provider: str,
    *,
    config: Path | None = None,
    faults: Iterable[FaultNeeds] = (),
    server: str | None = None,
) -> None:
    """``UsageError`` (one line) for anything ``open_provider`` would refuse."""
    if provider not in PROVIDERS:
        raise UsageError(f"--provider must be one of {', '.join(PROVIDERS)} (got {provider!r})")
    check_server(provider, server)
    if provider == "external":
        if config is None:
            raise UsageError(
                "--provider external needs --provider-config FILE naming the servers "
                "(see docs/providers.md)"
            )
        load_config(config)
    elif config is not None:
        raise UsageError(f"--provider-config is for --provider external, not {provider}")
    refuse_unsupported(provider, CAPABILITIES, faults)
    if provider == "local":
        for name in _clock_faults(faults):
            binaries.require_clock(name)  # e.g. a PATH redis-server, which links jemalloc


def check_server(provider: str, server: str | None) -> None:
    """``--server`` picks the docker provider's server image (``chaos.topology.images``);
    the local provider runs its own Redis 7.0 build, the external one what it is given."""
    if server is None:
        return
    if server not in SERVERS:
        raise UsageError(f"--server must be one of {', '.join(SERVERS)} (got {server!r})")
    if provider == "local" and server != LOCAL_SERVER:
        raise UsageError(
            f"--server {server} needs --provider docker: the local provider runs its own "
            f"Redis 7.0 build ({LOCAL_SERVER})"
        )
    if provider == "external":
        raise UsageError(
            "--server is for --provider docker (or local, redis-7.0): the external provider "
            "runs the servers its --provider-config names"
        )


def _clock_faults(faults: Iterable[FaultNeeds]) -> list[str]:
    """The faults that run the data nodes under libfaketime."""
    return [fault.name for fault in faults if CLOCK in fault.provider_needs]


def open_provider(
    provider: str = "local",
    kind: str = "standalone",
    *,
    nodes: int | None = None,
    persistence: str = "none",
    config: Path | None = None,
    faults: Iterable[FaultNeeds] = (),
    server: str | None = None,
    clients: int | None = None,
) -> Topology:
    """A running topology of ``kind`` from ``provider`` (a context manager: teardown is total).

    ``nodes`` is the number of standalone masters (default 5; ``external`` uses the first
    ``nodes`` of its file, all of them by default). ``faults`` are the faults the run will
    inject: one the provider cannot do is refused here, before anything starts. ``server``
    (``redis-7.0``, ``redis-8.0``, ``valkey-8.1``; None: the provider's default) is the
    Redis-compatible server: the docker provider runs its image, the local provider only
    its Redis 7.0 build, the external provider refuses it. ``clients``: how many clients will
    get links, if known (the docker provider publishes only the ports they need).
    """
    faults = list(faults)
    check_provider(provider, config=config, faults=faults, server=server)
    if provider == "external":
        assert config is not None  # checked
        return ExternalTopology.from_file(
            config, kind=kind, nodes=nodes, persistence=persistence
        )
    if provider == "docker":
        return DockerTopology(
            kind,
            nodes=_or_default(nodes),
            persistence=persistence,
            server=server,
            clock=bool(_clock_faults(faults)),
            clients=clients,
        )
    # Without a clock fault any redis-server will do (libfaketime only where it can wrap it).
    clock = True if _clock_faults(faults) else None
    return LocalTopology(kind, nodes=_or_default(nodes), persistence=persistence, clock=clock)


def _or_default(nodes: int | None) -> int:
    return DEFAULT_NODES if nodes is None else nodes


def start(kind: str = "standalone", *, nodes: int = 5, **options: object) -> LocalTopology:
    """Start a local topology of ``kind`` and wait until it is ready (never sleeps for it)."""
    return LocalTopology(kind, nodes=nodes, **options)  # type: ignore[arg-type]


__all__ = [
    "CAPABILITIES",
    "PROVIDERS",
    "SHAPES",
    "ClientView",
    "Link",
    "LocalTopology",
    "RedisNode",
    "SentinelNode",
    "SentinelTuning",
    "Topology",
    "ToxiproxyAPI",
    "check_provider",
    "check_server",
    "open_provider",
    "start",
]
