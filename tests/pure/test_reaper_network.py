"""A network Docker still lists an endpoint for, just after its container went ("has active
endpoints"), is disconnected by force and removed on a later try: a fresh clone's CI lost a
compare job's teardown to it. Docker's own race cannot be made on demand; the network here
answers as Docker answered then."""

from __future__ import annotations

from typing import Any

import docker.errors
import pytest

from chaos.topology import reaper

STALE = "error while removing network: network lockchaos-1_default has active endpoints"


class StaleNetwork:
    """Refuses removal while it lists an endpoint; a forced disconnect clears it."""

    def __init__(self, endpoints: int) -> None:
        self.attrs: dict[str, Any] = {"Containers": {f"e{i}": {} for i in range(endpoints)}}
        self.removed = False

    def remove(self) -> None:
        if self.attrs["Containers"]:
            raise docker.errors.APIError(STALE)
        self.removed = True

    def reload(self) -> None:
        pass

    def disconnect(self, container: str, force: bool = False) -> None:
        assert force
        del self.attrs["Containers"][container]


def test_a_network_with_a_stale_endpoint_is_removed_after_a_forced_disconnect() -> None:
    network = StaleNetwork(endpoints=1)
    reaper._remove_network(network, docker.errors)
    assert network.removed


def test_another_refusal_is_not_retried() -> None:
    class Refusing(StaleNetwork):
        def remove(self) -> None:
            raise docker.errors.APIError("permission denied")

    with pytest.raises(docker.errors.APIError, match="permission denied"):
        reaper._remove_network(Refusing(endpoints=0), docker.errors)
