"""The locks issue 13 added, each against real Redis: the seed's code as written, and its flaw.

No mocks: commands are recorded (and acted on) by the ``Hooked`` connection class of
``test_locks``, the way the harness injects pauses.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import redis
from test_locks import KEY, Clients, direct, hooked

from chaos.locks import scripts
from chaos.locks.contract import GAVE_UP
from chaos.topology import LocalTopology


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    yield made
    made.close()


def test_check_then_set_lets_two_clients_through_its_check(
    single: LocalTopology, clients: Clients
) -> None:
    """000's race 1: c2 passes the EXISTS check while c1 is between its check and its SET."""
    conn = hooked()
    c1 = clients.make(single, "check-then-set", "c1", connection_class=conn)
    c2 = clients.make(single, "check-then-set", "c2")
    second: list[object] = []
    conn.hooks["SET"] = lambda args: second.append(c2.acquire())
    first = c1.acquire()
    assert first and second[0], "both clients believe they hold the lock"
    assert [entry[0] for entry in conn.log] == ["EXISTS", "SET", "PEXPIRE"]
    assert direct(single).get(KEY) == first.token  # c1's SET overwrote c2's


def test_lua_int_expire_truncates_the_ttl_as_001_writes_it(
    single: LocalTopology, clients: Clients
) -> None:
    lock = clients.make(single, "lua-int-expire", "c1", ttl_ms=1500)
    lease = lock.acquire()
    assert lease and lease.validity_ms == 1500  # what the caller believes…
    assert 0 < direct(single).pttl(KEY) <= 1000  # …and what Redis was told: EX 1
    short = clients.make(single, "lua-int-expire", "c2", ttl_ms=200)
    with pytest.raises(redis.ResponseError, match="invalid expire time"):
        short.acquire()  # int(0.2) == 0: EX 0


def test_lua_ceil_rounds_the_ttl_up_as_000_writes_it(
    single: LocalTopology, clients: Clients
) -> None:
    lock = clients.make(single, "lua-ceil", "c1", ttl_ms=1500)
    lease = lock.acquire()
    assert lease and lease.validity_ms == 1500
    assert 1500 < direct(single).pttl(KEY) <= 2000  # EX 2: never shorter than claimed


def test_thread_id_tokens_collide_across_processes_and_release_each_others_lock(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "thread-id", "c1", ttl_ms=100)
    c2 = clients.make(single, "thread-id", "c2", ttl_ms=100)
    stale = c1.acquire()
    assert stale
    time.sleep(0.15)
    fresh = c2.acquire()
    assert fresh and fresh.token == stale.token  # both "unique" ids are this thread's
    assert c1.release(stale) is True  # the correct compare-and-delete, fooled
    assert not direct(single).exists(KEY)


def test_php_lock_uses_uniqid_and_gives_up_after_its_window(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "php-lock", "c1", ttl_ms=2000)
    c2 = clients.make(single, "php-lock", "c2", ttl_ms=2000)
    lease = c1.acquire()
    assert lease and re.fullmatch(r"[0-9a-f]{13}", lease.token)
    assert 1000 < direct(single).pttl(KEY) <= 2000  # ex 2
    started = time.monotonic()
    refused = c2.acquire()
    waited = time.monotonic() - started
    assert refused is GAVE_UP and not refused
    assert 0 < waited <= 1.2  # retry window = expire / 2, in whole-second timestamps
    assert c1.release(lease) is True


def test_reentrant_local_counts_in_the_process_and_never_touches_redis_to_reenter(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    c1 = clients.make(single, "reentrant-local", "c1", ttl_ms=300, connection_class=conn)
    outer = c1.acquire()
    assert outer
    sent = len(conn.log)
    inner = c1.acquire()
    assert inner and inner.token == outer.token and len(conn.log) == sent
    assert inner.validity_ms is not None and inner.validity_ms <= 300  # what the outer has left
    assert c1.release(inner) is True and direct(single).exists(KEY)
    assert c1.release(outer) is True and not direct(single).exists(KEY)


def test_reentrant_watchdog_keeps_the_hash_alive_through_a_nested_hold(
    single: LocalTopology, clients: Clients
) -> None:
    renewals: list[str] = []
    c1 = clients.make(single, "reentrant-watchdog", "c1", ttl_ms=300,
                      report_renewal=lambda lease, v, t: renewals.append(lease.token))
    c2 = clients.make(single, "reentrant-watchdog", "c2", ttl_ms=300)
    outer = c1.acquire()
    inner = c1.acquire()
    assert outer and inner
    time.sleep(0.7)  # more than two TTLs
    assert not c2.acquire(), "the watchdog kept the hash alive"
    assert inner.token in renewals  # renewals extend the innermost grant
    assert c1.release(inner) is True
    assert list(direct(single).hgetall(KEY).values()) == ["1"]
    assert c1.release(outer) is True and not direct(single).exists(KEY)
    watchdog = outer.state
    time.sleep(0.25)
    assert watchdog is not None and not watchdog.alive  # stopped with the last release
    assert scripts.REENTRANT_RENEW in scripts.ALL
