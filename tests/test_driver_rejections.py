"""A bundled driver survives a command its library rejects while it announces commands.

The node-redlock driver defers each announced command until the harness says ``go``; a
command ioredis then rejects (its node cut off: the connection is closed, or the command times
out) must count as that node's vote against, not end the process with an unhandled rejection
(fatal since Node 15). Issue 20, part 5.
"""

from __future__ import annotations

import pytest

from chaos import locks
from chaos.drivers import catalog
from chaos.errors import UsageError
from chaos.locks.context import build_context
from chaos.topology import LocalTopology

CUT = (3, 4)  # a minority of five: the quorum still answers


class Announced(list[str]):
    """Pause points that are armed and record every command announced to them."""

    armed = ("any command",)

    def before_command(self, command: str) -> None:
        self.append(command)


def test_node_redlock_survives_commands_rejected_while_announcing(
    standalone: LocalTopology,
) -> None:
    try:
        catalog.BUNDLED_DRIVERS["node-redlock"].argv()
    except UsageError as exc:
        pytest.skip(str(exc))
    announced = Announced()
    ctx = build_context(
        standalone.client_view("c1"), lock_name="k", ttl_ms=1000, pause_points=announced
    )
    lock = locks.load("node-redlock")(ctx)
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
