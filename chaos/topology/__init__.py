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
from chaos.topology.base import SHAPES, ClientView, FaultNeeds, Topology, refuse_unsupported
from chaos.topology.docker import DockerTopology
from chaos.topology.external import ExternalTopology, load_config
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
    provider: str, *, config: Path | None = None, faults: Iterable[FaultNeeds] = ()
) -> None:
    """``UsageError`` (one line) for anything ``open_provider`` would refuse."""
    if provider not in PROVIDERS:
        raise UsageError(f"--provider must be one of {', '.join(PROVIDERS)} (got {provider!r})")
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


def open_provider(
    provider: str = "local",
    kind: str = "standalone",
    *,
    nodes: int | None = None,
    persistence: str = "none",
    config: Path | None = None,
    faults: Iterable[FaultNeeds] = (),
) -> Topology:
    """A running topology of ``kind`` from ``provider`` (a context manager: teardown is total).

    ``nodes`` is the number of standalone masters (default 5; ``external`` uses the first
    ``nodes`` of its file, all of them by default). ``faults`` are the faults the run will
    inject: one the provider cannot do is refused here, before anything starts.
    """
    faults = list(faults)
    check_provider(provider, config=config, faults=faults)
    if provider == "external":
        assert config is not None  # checked
        return ExternalTopology.from_file(
            config, kind=kind, nodes=nodes, persistence=persistence
        )
    if provider == "docker":
        return DockerTopology(kind, nodes=_or_default(nodes), persistence=persistence)
    return LocalTopology(kind, nodes=_or_default(nodes), persistence=persistence)


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
    "open_provider",
    "start",
]
