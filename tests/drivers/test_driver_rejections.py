"""The Redlock drivers under commands their libraries reject (issue 20, part 5).

It defers each announced command until the harness says ``go``; a command ioredis then
rejects (its node cut off: the connection is closed, or the command times out) must count as
that node's vote against, not end the process with an unhandled rejection (fatal since Node
15). And a quorum it failed to win is ``refused`` only when the nodes that answered decide it:
one lost to nodes cut off before anything was sent is refused, one lost to timeouts (the
commands may have landed) is indeterminate (docs/driver-protocol.md, "decides by quorum"),
for node-redlock and redsync alike.
"""

from __future__ import annotations

import time

import pytest
from prerequisites import driver_gap, need

from chaos.drivers import adapter
from chaos.locks.context import build_context
from chaos.locks.contract import LockClient
from chaos.lockspec import resolve
from chaos.topology import LocalTopology

CUT = (3, 4)  # a minority of five: the quorum still answers


class Announced(list[str]):
    """Pause points that are armed and record every command announced to them."""

    armed = ("any command",)
    announcing = True

    def before_command(self, command: str) -> None:
        self.append(command)

    def failed(self, op: str, error: str) -> None:
        """Errors are not what these tests count."""

    def sent_in_background(self, command: str) -> None:
        """Nor are background commands."""


def connected(lock: LockClient) -> None:
    """One lock cycle, by which the client has opened its connections: the first acquire of a
    cold client opens them, and on a loaded machine it can run out its bound doing so (a JVM's
    first Redisson connection: "Unexpected exception while processing command"), so an
    indeterminate one is tried again, 3 times at most. What the tests look at comes after."""
    for last in (False, False, True):
        try:
            lease = lock.acquire()
            assert lease is not None and lock.release(lease) is True
            return
        except adapter.DriverError:
            if last:
                raise


def test_node_redlock_survives_commands_rejected_while_announcing(
    standalone: LocalTopology,
) -> None:
    need(driver_gap("node-redlock"))
    announced = Announced()
    ctx = build_context(
        standalone.client_view("c1"), lock_name="k", ttl_ms=1000, pause_points=announced
    )
    lock = resolve("node-redlock").factory(ctx)
    links = [standalone.client_links("c1")[i].name for i in CUT]
    try:
        for name in links:
            standalone.toxiproxy.disable(name)
        for _ in range(3):  # each round: two rejected commands, and the driver goes on
            lease = lock.acquire()
            assert lease is not None, "three of five nodes answered: a quorum"
            assert lock.release(lease) is True
        assert lock.driver.broken is None  # type: ignore[attr-defined]
        assert announced.count("EVALSHA") >= 3 * 2 * len(standalone.nodes)
    finally:
        for name in links:
            standalone.toxiproxy.enable(name)
        lock.close()  # type: ignore[attr-defined]
        ctx.close()


def test_node_redlock_refuses_a_quorum_lost_to_unreachable_nodes(
    standalone: LocalTopology,
) -> None:
    need(driver_gap("node-redlock"))
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=1000)
    lock = resolve("node-redlock").factory(ctx)
    links = [link.name for link in standalone.client_links("c1")[:3]]  # a majority of five
    api = standalone.toxiproxy
    try:
        for name in links:  # unreachable: ioredis sends nothing, so nothing can have landed
            api.disable(name)
        time.sleep(0.3)  # ioredis notices the closed connections
        assert lock.acquire() is None
        for name in links:
            api.enable(name)
        time.sleep(0.1)  # reconnected (retryStrategy: 10 ms)
        lease = lock.acquire()
        assert lease is not None and lock.release(lease) is True
    finally:
        for name in links:
            api.enable(name)
        lock.close()  # type: ignore[attr-defined]
        ctx.close()


@pytest.mark.parametrize("driver", ["node-redlock", "redsync"])
def test_a_quorum_lost_to_timeouts_is_indeterminate_not_refused(
    standalone: LocalTopology, driver: str
) -> None:
    need(driver_gap(driver))
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=1000)
    lock = resolve(driver).factory(ctx)
    links = [link.name for link in standalone.client_links("c1")[:3]]  # a majority of five
    api = standalone.toxiproxy
    try:
        connected(lock)  # every node connected and answering
        for name in links:  # reachable, but no reply: the SET may have landed
            api.add_toxic(name, "timeout", toxic_name="silent", timeout=0)
        with pytest.raises(adapter.DriverError):
            lock.acquire()
        for name in links:
            api.remove_toxic(name, "silent")
    finally:
        for name in links:
            api.enable(name)
        lock.close()  # type: ignore[attr-defined]
        ctx.close()


@pytest.mark.parametrize("driver", ["node-redlock", "redsync", "redisson-lease", "rust-redlock"])
def test_connection_set_up_is_not_announced(standalone: LocalTopology, driver: str) -> None:
    """Connections opened again after a cut run their set-up (go-redis: HELLO, lazily inside
    the next operation; ioredis: its INFO ready check; Redisson: PING, CLIENT SETNAME…;
    redis-rs: CLIENT SETINFO, on each connection the redlock crate opens per command)
    without announcing it: ``nth`` counts the lock's own commands only."""
    need(driver_gap(driver))
    announced = Announced()
    ctx = build_context(
        standalone.client_view("c1"), lock_name="k", ttl_ms=1000, pause_points=announced
    )
    lock = resolve(driver).factory(ctx)
    links = [link.name for link in standalone.client_links("c1")]
    try:
        connected(lock)
        for name in links:  # every connection closed: the next ones are new
            standalone.toxiproxy.disable(name)
        for name in links:
            standalone.toxiproxy.enable(name)
        time.sleep(0.2)
        lease = lock.acquire()
        assert lease is not None and lock.release(lease) is True
    finally:
        lock.close()  # type: ignore[attr-defined]
        ctx.close()
    assert announced and not {"HELLO", "AUTH", "INFO", "CLIENT", "SELECT"} & set(announced)
