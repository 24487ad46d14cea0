"""The pytest plugin's fixtures against real processes: the clients and checker fixtures catch
a broken lock (a user's semaphore too, run as it declares), the Toxiproxy fixture cuts, delays
and heals one client's links. (Its option and marker: tests/pure/test_pytest_plugin.py.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from chaos.pytest_plugin import LinkFaults
from chaos.topology import Topology

pytest_plugins = ["pytester"]


def test_the_clients_and_checker_fixtures_catch_a_broken_lock(pytester: pytest.Pytester) -> None:
    """``--lock del-release`` under slow work: the checker fixture fails the test with the
    explanation (so a green example means something)."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.lockchaos(faults="slow-work")
        def test_it(lockchaos_clients, lockchaos_checker):
            result = lockchaos_clients(clients=3, duration_s=1.5, ttl_ms=100, work_ms=20)
            lockchaos_checker.assert_passes(result)
        """
    )
    result = pytester.runpytest("-W", "ignore::pytest.PytestAssertRewriteWarning", "--lock",
                                "del-release")  # in-process, as tests/pure/test_pytest_plugin.py
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lockchaos verdict hard (failing on hard); history *", "*•*"])


RACY = f"{Path(__file__).resolve().parent / 'broken_locks.py'}:racy_semaphore"


def test_a_users_semaphore_runs_as_its_declaration_says(pytester: pytest.Pytester) -> None:
    """``racy_semaphore`` declares 3 shared permits (``grants``): the marker's ``capacity``
    applies to it as to a bundled semaphore, and the checker counts its permits."""
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.lockchaos(lock={RACY!r}, capacity=2)
        def test_it(lockchaos_clients, lockchaos_checker):
            result = lockchaos_clients(clients=10, duration_s=3, ttl_ms=500, work_ms=30)
            lockchaos_checker.assert_passes(result)
        """
    )
    result = pytester.runpytest("-W", "ignore::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lockchaos verdict hard*", "*of a 2-permit semaphore*"])


def _proxied(topo: Topology, client: str) -> redis.Redis:
    host, port = topo.client_view(client).nodes[0]
    return redis.Redis(host, port, socket_timeout=1.0, socket_connect_timeout=1.0)


@pytest.mark.lockchaos(lock="lua", topology="standalone", nodes=1)
def test_toxiproxy_fixture_cuts_delays_and_heals_one_clients_links(
    lockchaos_topology: Topology, lockchaos_toxiproxy: LinkFaults
) -> None:
    c1, c2 = _proxied(lockchaos_topology, "c1"), _proxied(lockchaos_topology, "c2")
    assert c1.ping() and c2.ping()
    heal = lockchaos_toxiproxy.cut("c1")
    with pytest.raises(redis.ConnectionError):
        c1.ping()
    assert c2.ping()  # only c1's links
    heal()
    assert c1.ping()
    lockchaos_toxiproxy.latency("c1", latency_ms=500)  # within the client's 1 s timeout
    started = time.monotonic()
    c1.ping()
    assert time.monotonic() - started >= 0.5
    lockchaos_toxiproxy.heal()
    started = time.monotonic()
    c1.ping()
    assert time.monotonic() - started < 0.5  # healed: not the half second the latency added


def test_the_markers_faults_keep_their_overrides_and_order(pytester: pytest.Pytester) -> None:
    """``faults`` with overrides, in order: a point before redis-py's SCRIPT LOAD, armed on
    every client, then a flush. Played without its overrides (the plugin once passed only the
    names), the point was the default, DEL, which redis-py never sends: inconclusive."""
    pytester.makepyfile(
        """
        import pytest

        FAULTS = "client-pause-at:command=SCRIPT:op=release:client=*:duration_ms=100,script-flush"

        @pytest.mark.lockchaos(lock="redis-py", faults=FAULTS, faults_in_order=True)
        def test_it(lockchaos_clients, lockchaos_checker):
            result = lockchaos_clients(clients=3, duration_s=3, ttl_ms=200, work_ms=40)
            verdict = lockchaos_checker.assert_passes(result)
            assert verdict.coverage["client-pause-at"].effective > 0
            assert '"command":"SCRIPT","action":"pause"' in result.history_path.read_text()
        """
    )
    result = pytester.runpytest("-W", "ignore::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(passed=1)
