"""A Redis server reached over TCP that lockchaos did not start as a process of its own: a
container of the ``docker`` provider, or a server of the ``external`` provider.

The password, if any, stays in the object and in the connections it makes: it is never part
of the ``repr``, of ``describe()`` or of an error message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import redis

from chaos.errors import UsageError
from chaos.topology.node import READY_TIMEOUT_S, direct_client, wait_until
from chaos.topology.provider import CLOCK, PAUSE, RESTART, refuse


@dataclass
class RemoteServer:
    name: str
    host: str
    port: int
    password: str | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def client(self, *, socket_timeout: float = 2.0, decode_responses: bool = False) -> redis.Redis:
        """A direct (un-proxied) connection, for the harness and the nemesis."""
        return direct_client(
            self.host,
            self.port,
            self.password,
            socket_timeout=socket_timeout,
            decode_responses=decode_responses,
        )

    def ping(self) -> bool:
        with self.client(socket_timeout=0.5) as conn:
            return bool(conn.ping())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        wait_until(self.ping, f"{self.name} at {self.host}:{self.port} to answer PING", timeout_s)

    def check_reachable(self) -> None:
        """One PING now; ``UsageError`` saying why not (refused, wrong password, …)."""
        try:
            self.ping()
        except (redis.RedisError, OSError) as exc:
            raise UsageError(
                f"cannot reach {self.name} at {self.host}:{self.port}: {type(exc).__name__}: {exc}"
            ) from None


@dataclass
class RemoteNode(RemoteServer):
    """A data node whose provider does not control the server process: every server fault is
    refused here (campaigns never get this far: ``refuse_unsupported`` stops them first).
    Providers that can pause, kill or restart override what they can do."""

    provider: ClassVar[str] = "external"

    def pause(self) -> None:
        raise refuse(self.provider, PAUSE)

    def resume(self) -> None:
        raise refuse(self.provider, PAUSE)

    def kill(self) -> None:
        raise refuse(self.provider, RESTART)

    def wipe(self) -> None:
        raise refuse(self.provider, RESTART)

    def start(self) -> None:
        raise refuse(self.provider, RESTART)

    def set_clock_offset(self, seconds: float) -> None:
        raise refuse(self.provider, CLOCK)
