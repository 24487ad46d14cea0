"""Fixtures that start real topologies (real redis-server, redis-sentinel, toxiproxy-server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chaos import topology
from chaos.explore.profiles import select_profile
from chaos.topology import LocalTopology

select_profile()  # this suite opts in: lockchaos-ci under CI, lockchaos-dev otherwise


@pytest.fixture
def standalone() -> Iterator[LocalTopology]:
    """Five independent masters behind Toxiproxy, fresh for each test."""
    with topology.start("standalone", nodes=5) as topo:
        yield topo


@pytest.fixture
def single() -> Iterator[LocalTopology]:
    """One master behind Toxiproxy, fresh for each test."""
    with topology.start("standalone", nodes=1) as topo:
        yield topo


@pytest.fixture
def sentinel() -> Iterator[LocalTopology]:
    """Master + 2 replicas + 3 Sentinels behind Toxiproxy, fresh for each test."""
    with topology.start("sentinel") as topo:
        yield topo
