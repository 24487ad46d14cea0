"""Build a ``LockContext`` from a ``ClientView``: redis-py connections through the client's proxies.

Every node gets its own ``redis.ConnectionPool`` of ``connection_class`` connections, so the
harness can inject a ``redis.Connection`` subclass (one that pauses, or fails, before chosen
commands). With Sentinels, the master connection asks the Sentinels where the master is and
translates the address they report (the cluster-internal one) through ``view.route`` into this
client's own proxy for that node, so cutting the client's link cuts its master traffic too.

Connections never retry (redis-py 5's default, kept on purpose): a retried ``SET NX`` whose
first reply was lost would come back "refused" although the lock is ours. They send no
handshake either (no ``CLIENT SETINFO``), so the only commands on the wire are the lock's own —
which is what a harness counting or pausing "before the n-th command" needs.
"""

from __future__ import annotations

from typing import Any, cast

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection

from chaos.errors import UsageError
from chaos.locks.contract import (
    NO_PAUSE_POINTS,
    LockContext,
    PausePoints,
    RenewalReporter,
    ignore_renewal,
)
from chaos.topology.base import ClientView

DEFAULT_SOCKET_TIMEOUT_S = 0.5


class RoutedSentinel(Sentinel):
    """A ``Sentinel`` whose discovered master address is this client's proxy for that node."""

    def __init__(
        self,
        sentinels: list[tuple[str, int]],
        *,
        route: dict[str, tuple[str, int]],
        client_id: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(sentinels, **kwargs)
        self.route = dict(route)
        self.client_id = client_id

    def discover_master(self, service_name: str) -> tuple[str, int]:
        host, port = super().discover_master(service_name)
        reported = f"{host}:{port}"
        try:
            return self.route[reported]
        except KeyError:
            raise MasterNotFoundError(
                f"Sentinel reports master {reported} for {service_name!r}, "
                f"but client {self.client_id} has no proxy for that address"
            ) from None


_MIXED: dict[type[redis.Connection], type[redis.Connection]] = {}


def sentinel_connection_class(base: type[redis.Connection]) -> type[redis.Connection]:
    """``base`` with Sentinel master discovery mixed in (``SentinelManagedConnection`` first).

    ``SentinelManagedConnection`` only overrides connecting (it asks the pool for the master
    address); everything ``base`` overrides, such as ``send_command``, still applies.
    """
    if issubclass(base, SentinelManagedConnection):
        return base
    if base is redis.Connection:
        return SentinelManagedConnection
    if not issubclass(base, redis.Connection):
        raise TypeError(f"connection_class must subclass redis.Connection, not {base!r}")
    if base not in _MIXED:
        name = f"SentinelManaged{base.__name__}"
        _MIXED[base] = type(name, (SentinelManagedConnection, base), {})
    return _MIXED[base]


def build_context(
    view: ClientView,
    *,
    lock_name: str,
    ttl_ms: int,
    report_renewal: RenewalReporter = ignore_renewal,
    connection_class: type[redis.Connection] = redis.Connection,
    socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
    pause_points: PausePoints = NO_PAUSE_POINTS,
    capacity: int | None = 1,
) -> LockContext:
    """Connections for ``view.client_id`` to every node (and the Sentinel master, if any).

    ``connection_class`` and ``pause_points`` are the two ways the harness's pause points reach
    a lock: the connections redis-py uses, and what a lock sending its own commands (a driver
    process) calls before each of them. ``capacity``: the run's permits for the lock (a
    semaphore's)."""
    if not lock_name:
        raise UsageError("the lock name (the Redis key) must not be empty")
    if ttl_ms <= 0:
        raise UsageError(f"the lock TTL must be a positive number of milliseconds (got {ttl_ms})")
    if socket_timeout_s <= 0:
        raise UsageError(f"the socket timeout must be positive (got {socket_timeout_s} s)")
    common: dict[str, Any] = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": socket_timeout_s,
        "decode_responses": True,
        "password": view.password,
        # No CLIENT SETINFO handshake on connect: every command a client sends is the lock's.
        "lib_name": None,
        "lib_version": None,
    }
    nodes = [
        redis.Redis(
            connection_pool=redis.ConnectionPool(
                connection_class=connection_class, host=host, port=port, **common
            )
        )
        for host, port in view.nodes
    ]
    master = None
    if view.cluster:
        master = cluster_client(view, connection_class, common)
    elif view.sentinels:
        if not view.master_name:
            raise UsageError(f"client {view.client_id} has Sentinels but no master name")
        sentinel = RoutedSentinel(
            list(view.sentinels),
            route=view.route,
            client_id=view.client_id,
            sentinel_kwargs={
                "socket_timeout": socket_timeout_s,
                "socket_connect_timeout": socket_timeout_s,
                "decode_responses": True,
                "password": view.sentinel_password,
            },
        )
        master = sentinel.master_for(
            view.master_name,
            connection_class=sentinel_connection_class(connection_class),
            **common,
        )
    return LockContext(
        client_id=view.client_id,
        lock_name=lock_name,
        ttl_ms=ttl_ms,
        nodes=nodes,
        master=master,
        report_renewal=report_renewal,
        pause_points=pause_points,
        capacity=capacity,
    )


def cluster_client(view: ClientView, connection_class: type[redis.Connection],
                   common: dict[str, Any]) -> redis.Redis:
    """A ``RedisCluster`` that starts from this client's proxies and translates every address
    the cluster reports (its slot map, MOVED and ASK) through ``view.route`` into this client's
    proxy for the same node. It never retries a command after a connection error (it only
    refreshes its slot map): a retried ``SET NX`` could come back "refused" although the lock
    is ours. Typed as ``redis.Redis``: see ``LockContext.master``."""
    route = view.route

    def remap(address: tuple[str, int]) -> tuple[str, int]:
        return route.get(f"{address[0]}:{address[1]}", address)

    (host, port), *others = view.nodes
    cluster = RedisCluster(
        # Given as a URL, the first node makes RedisCluster build each node's pool from these
        # options, ``connection_class`` included (its plain host/port form drops it).
        url=f"redis://{host}:{port}",
        startup_nodes=[ClusterNode(other_host, other_port) for other_host, other_port in others],
        address_remap=remap,
        cluster_error_retry_attempts=0,
        require_full_coverage=False,
        connection_class=connection_class,
        **common,
    )
    return cast(redis.Redis, cluster)


def with_socket_timeout(client: redis.Redis, seconds: float) -> redis.Redis:
    """A client to the same (non-Sentinel) node with other socket timeouts, same connection
    class: Redlock's per-node timeouts must stay well below the TTL."""
    pool = client.connection_pool
    if type(pool) is not redis.ConnectionPool:
        raise TypeError(f"with_socket_timeout needs a plain ConnectionPool, not {pool!r}")
    kwargs = dict(pool.connection_kwargs)
    kwargs["socket_timeout"] = seconds
    kwargs["socket_connect_timeout"] = seconds
    return redis.Redis(
        connection_pool=redis.ConnectionPool(
            connection_class=pool.connection_class,
            max_connections=pool.max_connections,
            **kwargs,
        )
    )


__all__ = [
    "DEFAULT_SOCKET_TIMEOUT_S",
    "RoutedSentinel",
    "build_context",
    "sentinel_connection_class",
    "with_socket_timeout",
]
