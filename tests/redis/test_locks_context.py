"""``build_context``: connections through the client's own proxies, Sentinel-aware when needed."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, ClassVar

import pytest
import redis
from redis.sentinel import MasterNotFoundError

from chaos.errors import UsageError
from chaos.locks import build_context
from chaos.locks.context import sentinel_connection_class, with_socket_timeout
from chaos.locks.contract import LockContext
from chaos.lockspec import resolve
from chaos.topology import LocalTopology

KEY = "lock:ctx"
TTL = 300


class Recording(redis.Connection):
    log: ClassVar[list[tuple[str, ...]]] = []

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        type(self).log.append(tuple(str(a) for a in args))
        super().send_command(*args, **kwargs)


def master_address(ctx: LockContext) -> Any:
    """Where the Sentinel-managed pool connects now (``discover_master`` after routing)."""
    assert ctx.master is not None
    pool: Any = ctx.master.connection_pool
    return pool.get_master_address()


@pytest.fixture(autouse=True)
def _fresh_recording() -> None:
    Recording.log = []


def test_nodes_go_through_the_clients_own_proxies(standalone: LocalTopology) -> None:
    view = standalone.client_view("c1")
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL, connection_class=Recording)
    try:
        assert ctx.master is None and ctx.primary is ctx.nodes[0]
        for i, node in enumerate(ctx.nodes):
            kwargs = node.connection_pool.connection_kwargs
            assert (kwargs["host"], kwargs["port"]) == view.nodes[i]
            assert node.connection_pool.connection_class is Recording
            node.set(KEY, f"n{i}")
            assert standalone.nodes[i].client(decode_responses=True).get(KEY) == f"n{i}"
        assert [c[0] for c in Recording.log] == ["SET"] * 5, "no handshake, no retries"
        standalone.toxiproxy.disable(standalone.client_links("c1")[2].name)
        with pytest.raises(redis.ConnectionError):
            ctx.nodes[2].get(KEY)
        assert ctx.nodes[1].get(KEY) == "n1"
    finally:
        ctx.close()


def test_bad_context_parameters_are_usage_errors(single: LocalTopology) -> None:
    view = single.client_view("c1")
    with pytest.raises(UsageError, match="TTL must be a positive"):
        build_context(view, lock_name=KEY, ttl_ms=0)
    with pytest.raises(UsageError, match="must not be empty"):
        build_context(view, lock_name="", ttl_ms=TTL)


def test_with_socket_timeout_keeps_the_connection_class(single: LocalTopology) -> None:
    ctx = build_context(
        single.client_view("c1"), lock_name=KEY, ttl_ms=TTL, connection_class=Recording
    )
    fast = with_socket_timeout(ctx.nodes[0], 0.03)
    kwargs = fast.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == 0.03
    assert kwargs["port"] == single.client_view("c1").nodes[0][1]
    assert fast.connection_pool.connection_class is Recording
    single.toxiproxy.add_toxic(single.client_links("c1")[0].name, "latency", latency=500)
    with pytest.raises(redis.TimeoutError):  # gave up before the reply (bench/timings.py)
        fast.ping()
    ctx.close()
    fast.connection_pool.disconnect()


def test_sentinel_master_connection_goes_through_the_clients_proxy(
    sentinel: LocalTopology,
) -> None:
    view = sentinel.client_view("c1")
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL, connection_class=Recording)
    c2_ctx = build_context(sentinel.client_view("c2"), lock_name=KEY, ttl_ms=TTL)
    try:
        assert ctx.master is not None and ctx.primary is ctx.master
        master = sentinel.master_index()
        assert master_address(ctx) == view.nodes[master]
        lock, other = resolve("lua").create(ctx), resolve("lua").create(c2_ctx)
        lease = lock.acquire()
        assert lease
        assert ("SET", KEY, lease.token, "PX", str(TTL), "NX") in Recording.log
        direct = sentinel.nodes[master].client(decode_responses=True)
        assert direct.get(KEY) == lease.token
        assert lock.release(lease)

        sentinel.toxiproxy.disable(sentinel.client_links("c1")[master].name)
        with pytest.raises(redis.ConnectionError):
            lock.acquire()
        assert direct.ping() and not direct.exists(KEY), "the direct path is unaffected"
        assert other.acquire(), "c2's own proxy still reaches the master"
    finally:
        ctx.close()
        c2_ctx.close()


def test_sentinel_master_follows_a_failover_through_the_clients_proxies(
    sentinel: LocalTopology,
) -> None:
    view = sentinel.client_view("c1")
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL)
    try:
        assert ctx.master is not None
        old = sentinel.master_index()
        assert ctx.master.set("before", "1")
        with sentinel.sentinels[0].client() as s:
            s.execute_command("SENTINEL", "FAILOVER", view.master_name)
        deadline = time.monotonic() + 15
        new = old
        while new == old and time.monotonic() < deadline:
            time.sleep(0.05)
            new = sentinel.master_index()
        assert new != old, "no failover"
        for _ in range(200):  # until the old master has been demoted and we are redirected
            try:
                ctx.master.set("after", "1")
                if master_address(ctx) == view.nodes[new]:
                    break
            except (redis.ConnectionError, redis.ReadOnlyError):
                pass
            time.sleep(0.05)
        assert master_address(ctx) == view.nodes[new]
        ctx.master.set("after", "2")
        assert sentinel.nodes[new].client(decode_responses=True).get("after") == "2"
    finally:
        ctx.close()


def test_an_unroutable_master_address_is_a_connection_error(sentinel: LocalTopology) -> None:
    view = dataclasses.replace(sentinel.client_view("c1"), route={})
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL)
    try:
        with pytest.raises(MasterNotFoundError, match="client c1 has no proxy"):
            resolve("lua").create(ctx).acquire()
    finally:
        ctx.close()


def test_sentinel_connection_class_mixes_in_discovery() -> None:
    mixed = sentinel_connection_class(Recording)
    assert issubclass(mixed, redis.sentinel.SentinelManagedConnection)
    assert issubclass(mixed, Recording)
    assert sentinel_connection_class(Recording) is mixed
    assert sentinel_connection_class(redis.Connection) is redis.sentinel.SentinelManagedConnection
