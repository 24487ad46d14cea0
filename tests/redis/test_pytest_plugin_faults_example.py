"""My lock under lockchaos: network faults must never let two clients hold valid leases."""

import pytest


@pytest.mark.lockchaos(lock="my_lock:make_lock", faults="latency,partition")
def test_my_lock_under_network_faults(lockchaos_clients, lockchaos_checker):
    result = lockchaos_clients(clients=3, duration_s=3.0, ttl_ms=300, seed=1)
    verdict = lockchaos_checker.assert_passes(result, fail_on="hard")
    assert verdict.counts["acquire_ok"] > 10
