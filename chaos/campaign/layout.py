"""The topology a campaign runs on: its shape, how many masters, and what persistence.

The lock decides part of it (Redlock wants independent masters), the faults the rest (a
failover wants a master with replicas, a restart that keeps its keys wants an AOF), and
``choose_layout`` refuses, as bad input, the choices that cannot mix; ``open_topology``
starts it from the campaign's provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from chaos import topology
from chaos.errors import UsageError
from chaos.lockspec import LockSpec
from chaos.nemesis import FAULTS, Fault

TOPOLOGIES = ("auto", *topology.SHAPES)
REDLOCK_NODES = 5  # masters for a lock that needs independent ones, unless told otherwise


class Wants(Protocol):
    """What of a campaign decides its topology and who runs it (``chaos.campaign.Campaign``
    has these; a protocol, as the campaign's declaration reads ``TOPOLOGIES`` from here)."""

    @property
    def lock(self) -> str: ...

    @property
    def lock_spec(self) -> LockSpec: ...

    @property
    def topology(self) -> str: ...

    @property
    def nodes(self) -> int | None: ...

    @property
    def fault_names(self) -> Sequence[str]: ...

    @property
    def fault_objects(self) -> Sequence[Fault]: ...

    @property
    def provider(self) -> str: ...

    @property
    def provider_config_path(self) -> Path | None: ...

    @property
    def server(self) -> str | None: ...

    @property
    def clients(self) -> int: ...


@dataclass(frozen=True)
class Layout:
    """The topology a campaign runs on."""

    kind: str
    nodes: int
    persistence: str


def choose_layout(campaign: Wants) -> Layout:
    """The topology the lock and faults need, as the lock declares it (``LockSpec``: a
    bundled lock's entry, or an ``exec:`` driver's ``describe``); ``UsageError`` for
    choices that cannot mix (which ``Campaign.validate`` refuses with the rest)."""
    spec = campaign.lock_spec
    needs_masters = spec.needs_masters
    replicated = [n for n in campaign.fault_names if FAULTS[n].needs == "replicated"]
    if replicated and needs_masters:
        raise UsageError(
            f"{replicated[0]} needs a master with replicas (sentinel or cluster), but "
            f"{campaign.lock} needs independent masters: drop {replicated[0]} or pick a "
            "single-master lock"
        )
    kind = campaign.topology
    if kind == "auto":
        kind = "sentinel" if replicated else "standalone"
    if kind == "standalone" and replicated:
        raise UsageError(
            f"{replicated[0]} needs --topology sentinel or cluster (auto picks sentinel)"
        )
    least = spec.min_nodes
    nodes = campaign.nodes or (max(REDLOCK_NODES, least) if needs_masters else least)
    spec.check_topology(kind, nodes)
    persistence = "none"
    for name in campaign.fault_names:
        if FAULTS[name].persistence != "none":
            persistence = FAULTS[name].persistence
    return Layout(kind, nodes, persistence)


def open_topology(campaign: Wants, layout: Layout) -> topology.Topology:
    """A fresh running topology in ``layout`` from the campaign's provider (which refuses,
    before starting anything, a fault it cannot do)."""
    return topology.open_provider(
        campaign.provider,
        layout.kind,
        nodes=layout.nodes,
        persistence=layout.persistence,
        config=campaign.provider_config_path,
        faults=campaign.fault_objects,
        server=campaign.server,
        clients=campaign.clients,
    )
