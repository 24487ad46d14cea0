"""Real Redis topologies behind Toxiproxy.

``start("standalone", nodes=5)`` or ``start("sentinel")`` returns a running ``LocalTopology``
(a context manager); ``topology.client_view("c1")`` gives one client its own proxied addresses.
``open_provider("docker", "sentinel", faults=...)`` does the same with any provider
(``local``, ``docker``, ``external``: docs/providers.md), returning a ``Topology``.
"""

from chaos.topology.local import ClientView, LocalTopology, SentinelTuning
from chaos.topology.node import RedisNode, SentinelNode
from chaos.topology.provider import Topology
from chaos.topology.providers import PROVIDERS, check_provider, open_provider
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

KINDS = ("standalone", "sentinel")


def start(kind: str = "standalone", *, nodes: int = 5, **options: object) -> LocalTopology:
    """Start a topology of ``kind`` and wait until it is ready (never sleeps for it)."""
    return LocalTopology(kind, nodes=nodes, **options)  # type: ignore[arg-type]


__all__ = [
    "KINDS",
    "PROVIDERS",
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
