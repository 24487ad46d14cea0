"""Every bundled lock against real Redis through Toxiproxy: the contract, and each lock's flaw.

No mocks: faults are real (disabled proxies, latency toxics) or injected the way the harness
injects them, with a ``redis.Connection`` subclass that acts before chosen commands.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import redis
from lease_span import within_lease

from chaos import lockspec
from chaos.drivers.catalog import INFOS as DRIVER_INFOS
from chaos.experiments.truth_table import SERVER_CELLS
from chaos.history import now
from chaos.locks import build_context, scripts
from chaos.locks.contract import ExtendableLockClient, Lease, LockClient, LockContext
from chaos.locks.fenced import fence_key
from chaos.locks.redlock import node_timeout_s
from chaos.locks.watchdog import Watchdog
from chaos.lockspec import BUNDLED, can_extend, resolve
from chaos.topology import LocalTopology

TTL = 300
KEY = "lock:test"
MARGIN_S = 0.08
HANG_S = 5.0  # an operation that should end at once took this long: it hung
SLOW_NODE_MS = 5000  # a node that answers this late has answered too late for any TTL here
# Redlock's own tests use 1 s: per-node timeouts of TTL/10 = 100 ms, so a loaded machine does
# not turn a slow reply into a lost vote (at 300 ms they would be 30 ms).
REDLOCK_TTL = 1000
# The Python locks: the drivers in other languages (chaos.drivers) have their own
# contract tests in tests/drivers/test_drivers.py, on the topologies they are built for; a
# lock whose commands the local Redis 7.0 lacks (delifeq) is tested on the servers that have
# them (tests/docker/test_delifeq.py). These are the mutexes' contract: the locks with shared
# holds (a semaphore, a read-write lock) have theirs in tests/redis/test_shared_locks.py.
# The corpus of third-party libraries (LockInfo.extra) keeps its libraries' own key names,
# tokens and whole-second TTLs: its contract and flaws are tested in tests/redis/test_corpus_py.py.
MUTEXES = {info.name for info in lockspec.catalog() if info.mutex and not info.extra}
ALL = [name for name in BUNDLED
       if name not in DRIVER_INFOS and name not in {cell.lock for cell in SERVER_CELLS}
       and name in MUTEXES]
SINGLE = [name for name in ALL if name != "redlock"]
# Locks that set the TTL in whole seconds as their seed writes it (int(), ceil, PHP's ex):
# the contract tests give them a whole-second TTL, so they are judged on what they really do.
WHOLE_SECONDS_TTL = {"lua-int-expire": 1000, "lua-ceil": 1000, "php-lock": 1000,
                     "lua-retry-sleep": 1000, "lua-retry-busy": 1000}
# (php-lock's acquire retries for its own window, so whether a refused acquire outlasts the
# TTL depends on the wall clock's second: tests/redis/test_locks_seeds.py tests its window instead.)
# Where a test needs the holder's key to outlive a refused acquire, php-lock gets 2 s: its
# window stays one second (``expire // 2``), and at 1 s the key the holder was about to
# release could expire while the refused client spun to the wall clock's next second.
OUTLIVES_A_REFUSAL = {**WHOLE_SECONDS_TTL, "php-lock": 2000}
# Locks whose acquire retries for longer than the key lives (000's and 002's acquire_timeout,
# 5/3 and 3 × the TTL): an acquire while the lock is held waits the holder out and wins, so
# the tests that expect it refused skip them; tests/redis/test_locks_seeds.py tests their waiting
# (granted once the holder releases or its key expires, never before; gave up past the window).
OUTWAITS_THE_KEY = {"lua-retry-sleep", "lua-retry-busy"}
# Locks whose value is not unique per client (their flaw): a thread id, PHP's uniqid().
SHARED_TOKENS = {"thread-id", "php-lock"}


class Hooked(redis.Connection):
    """Records every command; runs (and forgets) a hook before the next command of a name."""

    log: ClassVar[list[tuple[str, ...]]]
    hooks: ClassVar[dict[str, Callable[[tuple[Any, ...]], None]]]

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        name = str(args[0]).upper()
        type(self).log.append(tuple(str(a) for a in args))
        hook = type(self).hooks.pop(name, None)
        if hook is not None:
            hook(args)
        super().send_command(*args, **kwargs)


def hooked() -> type[Hooked]:
    """A fresh ``Hooked`` class, so tests never share recordings or hooks."""
    return type("Hooked", (Hooked,), {"log": [], "hooks": {}})


class Clients:
    """Builds lock clients for a topology and closes their connections afterwards."""

    def __init__(self) -> None:
        self.contexts: list[LockContext] = []

    def ctx(
        self, topo: LocalTopology, cid: str = "c1", ttl_ms: int = TTL, **kw: Any
    ) -> LockContext:
        context = build_context(topo.client_view(cid), lock_name=KEY, ttl_ms=ttl_ms, **kw)
        self.contexts.append(context)
        return context

    def make(
        self, topo: LocalTopology, name: str, cid: str = "c1", ttl_ms: int = TTL, **kw: Any
    ) -> LockClient:
        return resolve(name).create(self.ctx(topo, cid, ttl_ms, **kw))

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    yield made
    made.close()


def topology_for(request: pytest.FixtureRequest, name: str) -> LocalTopology:
    """Redlock needs independent masters; every other lock runs on a single master."""
    topo: LocalTopology = request.getfixturevalue("standalone" if name == "redlock" else "single")
    return topo


def direct(topo: LocalTopology, i: int = 0) -> Any:
    """A direct (un-proxied) connection to node ``i`` (typed ``Any``: sync replies)."""
    return topo.nodes[i].client(decode_responses=True)


def outlive(lease: Lease, ttl_ms: int = TTL) -> None:
    """Sleep until both the lease's claim and the key's TTL are over."""
    time.sleep(max(lease.validity_ms or ttl_ms, ttl_ms) / 1000 + MARGIN_S)


def stop_watchdog(lease: Lease) -> None:
    """What a crashed holder's watchdog does: nothing. (Lets the lease expire.)"""
    if isinstance(lease.state, Watchdog):
        lease.state.stop()


# -- the contract, for every bundled lock ------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_acquire_grants_a_fresh_client_prefixed_token(
    request: pytest.FixtureRequest, clients: Clients, name: str
) -> None:
    topo = topology_for(request, name)
    ttl = WHOLE_SECONDS_TTL.get(name, TTL)
    lock = clients.make(topo, name, ttl_ms=ttl)
    with within_lease(ttl, "acquire to release"):
        first = lock.acquire()
        assert first, f"{name} did not acquire a free lock"
        assert first.token.startswith("c1:") or name in SHARED_TOKENS
        assert first.validity_ms is None or 0 < first.validity_ms <= 1000
        assert direct(topo).exists(KEY)
        assert lock.release(first) is True
    second = lock.acquire()
    assert second and (second.token != first.token or name in SHARED_TOKENS)


@pytest.mark.parametrize("name", [name for name in ALL if name not in OUTWAITS_THE_KEY])
def test_second_client_is_refused_while_held_and_acquires_after_release(
    request: pytest.FixtureRequest, clients: Clients, name: str
) -> None:
    topo = topology_for(request, name)
    ttl = OUTLIVES_A_REFUSAL.get(name, TTL)
    c1, c2 = clients.make(topo, name, "c1", ttl), clients.make(topo, name, "c2", ttl)
    with within_lease(ttl, "c1's hold"):
        lease = c1.acquire()
        assert lease
        assert not c2.acquire()
        assert c1.release(lease) is True
    with within_lease(ttl, "c2's hold"):
        other = c2.acquire()
        assert other and (other.token.startswith("c2:") or name in SHARED_TOKENS)
        assert not c1.acquire()


@pytest.mark.parametrize(
    "name", [name for name in ALL if name != "php-lock" and name not in OUTWAITS_THE_KEY]
)
def test_lock_expires_after_its_ttl(
    request: pytest.FixtureRequest, clients: Clients, name: str
) -> None:
    topo = topology_for(request, name)
    ttl = WHOLE_SECONDS_TTL.get(name, TTL)
    c1, c2 = clients.make(topo, name, "c1", ttl), clients.make(topo, name, "c2", ttl)
    with within_lease(ttl, "half the TTL"):
        lease = c1.acquire()
        assert lease
        stop_watchdog(lease)  # a crashed holder renews nothing
        time.sleep(ttl / 2 / 1000)
        assert not c2.acquire(), "acquired before the TTL was over"
    outlive(lease, ttl)
    assert c2.acquire(), f"{name}: the lock did not expire after its TTL"


# Releasing a lease that expired while another client took the lock: a correct lock refuses,
# a flawed one deletes the other's lock — and the adapter must not hide that.
STALE_RELEASE_DELETES_OTHERS = {"del-release", "getset-timestamp", "thread-id"}


@pytest.mark.parametrize("name", ALL)
def test_stale_release_after_expiry(
    request: pytest.FixtureRequest, clients: Clients, name: str
) -> None:
    topo = topology_for(request, name)
    ttl = WHOLE_SECONDS_TTL.get(name, TTL)
    c1, c2 = clients.make(topo, name, "c1", ttl), clients.make(topo, name, "c2", ttl)
    stale = c1.acquire()
    assert stale
    stop_watchdog(stale)
    outlive(stale, ttl)
    with within_lease(ttl, "c2's hold"):
        fresh = c2.acquire()
        assert fresh
        released = c1.release(stale)
        if name in STALE_RELEASE_DELETES_OTHERS:
            assert released is True
            assert not direct(topo).exists(KEY), f"{name} should have deleted c2's lock"
        else:
            assert released is False
            assert direct(topo).exists(KEY), f"{name} deleted another client's lock"
            assert c2.release(fresh) is True


@pytest.mark.parametrize("name", SINGLE)
def test_connection_errors_propagate_instead_of_becoming_refusals(
    single: LocalTopology, clients: Clients, name: str
) -> None:
    lock = clients.make(single, name, ttl_ms=WHOLE_SECONDS_TTL.get(name, TTL))
    link = single.client_links("c1")[0].name
    single.toxiproxy.disable(link)
    with pytest.raises(redis.ConnectionError):
        lock.acquire()
    single.toxiproxy.enable(link)
    lease = lock.acquire()
    assert lease
    single.toxiproxy.disable(link)
    if isinstance(lock, ExtendableLockClient):
        with pytest.raises(redis.ConnectionError):
            lock.extend(lease)
    with pytest.raises(redis.ConnectionError):
        lock.release(lease)


def test_only_locks_that_say_so_can_extend() -> None:
    ctx = LockContext("c1", KEY, TTL, nodes=[redis.Redis(port=1)] * 3)
    for info in lockspec.catalog():
        if info.name in ALL:  # a driver is asked through its process (tests/drivers/)
            assert can_extend(resolve(info.name).create(ctx)) is info.extend, info.name


# -- each lock's own behaviour and flaw --------------------------------------------------


def test_setnx_expire_crash_between_setnx_and_expire_leaves_a_key_that_never_expires(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()

    def crash(args: tuple[Any, ...]) -> None:
        raise redis.ConnectionError("client died between SETNX and PEXPIRE")

    conn.hooks["PEXPIRE"] = crash
    c1 = clients.make(single, "setnx-expire", "c1", connection_class=conn)
    c2 = clients.make(single, "setnx-expire", "c2")
    with pytest.raises(redis.ConnectionError):
        c1.acquire()
    assert [cmd[0] for cmd in conn.log] == ["SETNX", "PEXPIRE"]
    assert direct(single).pttl(KEY) == -1, "the key should have no expiry"
    time.sleep(TTL / 1000 + MARGIN_S)
    assert not c2.acquire(), "deadlock expected: nobody can acquire a key with no TTL"


def test_setnx_expire_uses_two_round_trips_and_seconds_when_whole(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    lock = clients.make(single, "setnx-expire", ttl_ms=1000, connection_class=conn)
    assert lock.acquire()
    assert [cmd[0] for cmd in conn.log] == ["SETNX", "EXPIRE"]
    assert 900 < direct(single).pttl(KEY) <= 1000


def test_getset_timestamp_stores_a_timestamp_with_no_ttl_and_anyone_can_release(
    single: LocalTopology, clients: Clients
) -> None:
    c1, c2 = (
        clients.make(single, "getset-timestamp", "c1"),
        clients.make(single, "getset-timestamp", "c2"),
    )
    before = int(time.time() * 1000)
    lease = c1.acquire()
    assert lease
    stored = int(direct(single).get(KEY))
    assert before + TTL <= stored <= int(time.time() * 1000) + TTL
    assert direct(single).pttl(KEY) == -1, "the seed never sets a Redis TTL"
    assert c2.release(Lease("c2:not-the-holder")) is True, "no owner: anyone can release"
    assert not direct(single).exists(KEY)


def test_getset_timestamp_racing_getset_overwrites_the_winners_expiry(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    c1 = clients.make(single, "getset-timestamp", "c1")
    c2 = clients.make(single, "getset-timestamp", "c2")
    c3 = clients.make(single, "getset-timestamp", "c3", connection_class=conn)
    expired = c1.acquire()
    assert expired
    outlive(expired)
    winner: list[Lease | None] = []
    # c3 has read the expired timestamp; before its GETSET lands, c2 takes the lock.
    conn.hooks["GETSET"] = lambda args: winner.append(c2.acquire())
    assert not c3.acquire(), "c3 lost the race and must not get the lock"
    assert winner and winner[0], "c2 should have won the race"
    assert direct(single).get(KEY) == conn.log[-1][2], "the loser's expiry is the one stored"


def test_get_then_del_release_is_get_then_del_in_two_round_trips(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    lock = clients.make(single, "get-then-del", connection_class=conn)
    lease = lock.acquire()
    assert lease
    del conn.log[:]
    assert lock.release(lease) is True
    assert [cmd[0] for cmd in conn.log] == ["GET", "DEL"]


def test_get_then_del_deletes_the_next_holders_lock_in_its_window(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    c1 = clients.make(single, "get-then-del", "c1", connection_class=conn)
    c2 = clients.make(single, "get-then-del", "c2")
    lease = c1.acquire()
    assert lease
    taken: list[Lease | None] = []

    def expire_and_take(args: tuple[Any, ...]) -> None:  # between c1's GET and its DEL
        outlive(lease)
        taken.append(c2.acquire())

    conn.hooks["DEL"] = expire_and_take
    assert c1.release(lease) is True
    assert taken and taken[0], "c2 should have acquired in the window"
    assert not direct(single).exists(KEY), "c1's DEL should have removed c2's lock (its flaw)"


def test_lua_releases_with_one_compare_and_delete(single: LocalTopology, clients: Clients) -> None:
    conn = hooked()
    lock = clients.make(single, "lua", connection_class=conn)
    lease = lock.acquire()
    assert lease
    assert conn.log[0][:4] == ("SET", KEY, lease.token, "PX")
    del conn.log[:]
    assert lock.release(lease) is True
    assert conn.log == [("EVAL", scripts.COMPARE_AND_DELETE.source, "1", KEY, lease.token)]


def test_lua_setnx_expire_rounds_the_ttl_up_to_whole_seconds(
    single: LocalTopology, clients: Clients
) -> None:
    conn = hooked()
    c1 = clients.make(single, "lua-setnx-expire", "c1", connection_class=conn)
    c2 = clients.make(single, "lua-setnx-expire", "c2")
    lease = c1.acquire()
    assert lease and lease.validity_ms == 1000
    assert 900 < direct(single).pttl(KEY) <= 1000, "300 ms should become EXPIRE 1"
    assert [c[:2] for c in conn.log] == [("EVAL", scripts.SETNX_EXPIRE.source)], "one script"
    assert conn.log[0][-1] == "1", "EXPIRE 1 (second)"
    time.sleep(2 * TTL / 1000)
    assert not c2.acquire(), "still held after twice the configured TTL"


def test_lua_extend_keeps_the_lock_past_its_ttl_while_extended(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "lua-extend", "c1")
    c2 = clients.make(single, "lua-extend", "c2")
    assert isinstance(c1, ExtendableLockClient)
    lease = c1.acquire()
    assert lease
    for _ in range(6):  # 600 ms: twice the TTL
        time.sleep(TTL / 3 / 1000)
        extended = c1.extend(lease)
        assert extended and extended.token == lease.token and extended.validity_ms == TTL
    assert not c2.acquire()
    outlive(lease)
    assert c2.acquire()
    assert c1.extend(lease) is None, "an expired lease taken by another cannot be extended"


@pytest.mark.parametrize(("ttl_ms", "set_unit", "script"), [
    (1000, "EX", scripts.COMPARE_AND_EXPIRE),
    (TTL, "PX", scripts.COMPARE_AND_PEXPIRE),
])  # fmt: skip
def test_lua_extend_uses_seconds_like_the_seed_only_when_the_ttl_is_whole_seconds(
    single: LocalTopology, clients: Clients, ttl_ms: int, set_unit: str, script: scripts.Lua
) -> None:
    conn = hooked()
    lock = clients.make(single, "lua-extend", ttl_ms=ttl_ms, connection_class=conn)
    assert isinstance(lock, ExtendableLockClient)
    lease = lock.acquire()
    assert lease
    assert conn.log[0][3] == set_unit
    assert lock.extend(lease)
    assert conn.log[-1][:2] == ("EVAL", script.source)
    assert ttl_ms - 100 < direct(single).pttl(KEY) <= ttl_ms


def test_reentrant_second_acquire_by_the_same_client_increments_the_count(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "reentrant", "c1")
    c2 = clients.make(single, "reentrant", "c2")
    outer = c1.acquire()
    inner = c1.acquire()
    assert outer and inner and outer.token != inner.token
    fields = direct(single).hgetall(KEY)
    assert list(fields.values()) == ["2"]
    assert not c2.acquire()
    assert c1.release(inner) is True
    assert list(direct(single).hgetall(KEY).values()) == ["1"]
    assert not c2.acquire(), "still held once"
    assert c1.release(outer) is True
    assert not direct(single).exists(KEY)
    assert c1.release(outer) is False, "not ours any more"
    assert c2.acquire()


def test_reentrant_inner_release_after_expiry_drops_the_outer_holders_lock(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "reentrant", "c1")
    c2 = clients.make(single, "reentrant", "c2")
    outer = c1.acquire()
    assert outer
    outlive(outer)  # the outer hold expires, its count with it…
    inner = c1.acquire()  # …so this "re-entry" is a fresh lock with count 1
    assert inner
    assert c1.release(inner) is True
    assert c2.acquire(), "the outer holder still believes it holds the lock (the flaw)"


def test_watchdog_keeps_the_lock_alive_and_reports_every_renewal(
    single: LocalTopology, clients: Clients
) -> None:
    renewals: list[tuple[Lease, float | None, int]] = []
    c1 = clients.make(single, "watchdog", "c1", report_renewal=lambda *r: renewals.append(r))
    c2 = clients.make(single, "watchdog", "c2")
    started = now()
    lease = c1.acquire()
    assert lease
    time.sleep(4 * TTL / 1000)
    assert not c2.acquire(), "the watchdog should have kept the lock past 4 TTLs"
    assert len(renewals) >= 8, f"expected a renewal every TTL/3, got {len(renewals)}"
    times = [t for _, _, t in renewals]
    assert times == sorted(times) and started < times[0] < now()
    assert all(r[0].token == lease.token and r[1] == TTL for r in renewals)
    assert all(b - a >= TTL / 3 * 1e6 for a, b in itertools.pairwise(times))
    assert c1.release(lease) is True
    watchdog = lease.state
    assert isinstance(watchdog, Watchdog)
    watchdog.join(1.0)
    assert not watchdog.alive
    count = len(renewals)
    time.sleep(TTL / 1000)
    assert len(renewals) == count, "renewals after release"
    assert c2.acquire()


def test_watchdog_renews_again_after_a_cut_link_and_stops_once_the_lease_is_gone(
    single: LocalTopology, clients: Clients
) -> None:
    """A renewal that raises is reported with its error, and the next goes out a period
    later (Redisson since #3195; its #3194 stopped for good at the first error): a link cut for
    less than the TTL costs no lease. Cut for longer, the key expires, another client takes
    it, and the next renewal finds the token gone: the watchdog gives the lease up, and says
    so (validity 0, no error)."""
    # A 1 s TTL: the renewal after the link is back lands a third of it before the lease ends
    # (at 300 ms, 100 ms: a loaded fresh clone's reconnect took longer, and the lease lapsed).
    ttl = 1000
    reported: list[tuple[float | None, str | None]] = []
    c1 = clients.make(single, "watchdog", "c1", ttl_ms=ttl,
                      report_renewal=lambda lease, validity, t, error=None:
                      reported.append((validity, error)))
    c2 = clients.make(single, "watchdog", "c2", ttl_ms=ttl)
    lease = c1.acquire()
    assert lease and isinstance(lease.state, Watchdog)
    link = single.client_links("c1")[0].name
    single.toxiproxy.disable(link)
    time.sleep(ttl / 2 / 1000)  # a renewal goes out and raises
    single.toxiproxy.enable(link)
    time.sleep(2 * ttl / 1000)
    assert lease.state.alive and not c2.acquire(), "the watchdog kept the lease"
    raised = [error for validity, error in reported if error is not None]
    assert raised and all(validity == 0 for validity, error in reported if error), reported
    assert reported[-1] == (ttl, None), "it renewed again once the link was back"

    single.toxiproxy.disable(link)
    outlive(lease, ttl)
    assert lease.state.alive, "a renewal that raised is not the end of the watchdog"
    assert c2.acquire(), "no renewal landed, so the lock expired"
    single.toxiproxy.enable(link)
    lease.state.join(ttl / 1000)
    assert not lease.state.alive and lease.state.failure == "the lock is no longer ours"
    assert reported[-1] == (0.0, None), "it found the lease gone and said so"


def test_redlock_acquires_on_all_five_masters_with_validity_below_the_ttl(
    standalone: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(standalone, "redlock", "c1", ttl_ms=REDLOCK_TTL)
    lease = c1.acquire()
    assert lease and lease.validity_ms is not None
    assert REDLOCK_TTL - 200 < lease.validity_ms <= REDLOCK_TTL - (REDLOCK_TTL * 0.01 + 2)
    assert [direct(standalone, i).get(KEY) for i in range(5)] == [lease.token] * 5
    assert c1.release(lease) is True
    assert not any(direct(standalone, i).exists(KEY) for i in range(5))


def test_redlock_validity_subtracts_the_time_spent_acquiring(
    standalone: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(standalone, "redlock", "c1", ttl_ms=REDLOCK_TTL)
    for link in standalone.client_links("c1")[:2]:  # slow, but within the per-node timeout
        standalone.toxiproxy.add_toxic(link.name, "latency", latency=10)
    started = now()
    lease = c1.acquire()
    spent_ms = (now() - started) / 1e6
    assert lease and lease.validity_ms is not None
    assert spent_ms >= 20
    assert lease.validity_ms <= REDLOCK_TTL - 20 - (REDLOCK_TTL * 0.01 + 2)


def test_redlock_fails_without_a_quorum_and_cleans_up(
    standalone: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(standalone, "redlock", "c1", ttl_ms=REDLOCK_TTL)
    links = standalone.client_links("c1")
    for link in links[:3]:
        standalone.toxiproxy.disable(link.name)
    started = time.monotonic()
    assert c1.acquire() is None, "2 of 5 is no quorum"
    assert time.monotonic() - started < HANG_S  # refused links fail at once (bench/timings.py)
    assert not any(direct(standalone, i).exists(KEY) for i in range(5)), "not cleaned up"
    standalone.toxiproxy.enable(links[2].name)  # 3 of 5 reachable: a quorum
    lease = c1.acquire()
    assert lease
    assert [direct(standalone, i).exists(KEY) for i in range(5)] == [0, 0, 1, 1, 1]
    assert c1.release(lease) is True


def test_redlock_per_node_timeouts_stay_far_below_the_ttl(
    standalone: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(standalone, "redlock", "c1", ttl_ms=REDLOCK_TTL)
    for link in standalone.client_links("c1")[:3]:
        standalone.toxiproxy.add_toxic(link.name, "latency", latency=SLOW_NODE_MS)
    assert node_timeout_s(REDLOCK_TTL) == 0.1
    started = time.monotonic()
    assert c1.acquire() is None, "three nodes answering after 5 s count as failures"
    # The SETs, then the clean-up on every node, each wait out three per-node timeouts
    # (0.6 s in all; bench/timings.py measures it) — not one reply of a slow node.
    assert time.monotonic() - started < SLOW_NODE_MS / 1000


def test_redlock_release_is_indeterminate_when_unanswered_nodes_decide_it(
    standalone: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(standalone, "redlock", "c1", ttl_ms=REDLOCK_TTL)
    lease = c1.acquire()
    assert lease
    for link in standalone.client_links("c1")[:3]:
        standalone.toxiproxy.disable(link.name)
    with pytest.raises(redis.ConnectionError):
        c1.release(lease)  # 2 deleted, 3 unknown: a quorum may or may not still hold it
    standalone.toxiproxy.enable(standalone.client_links("c1")[0].name)
    expired = c1.acquire()
    assert expired is None
    time.sleep(REDLOCK_TTL / 1000 + MARGIN_S)
    # 3 reachable nodes answer "not ours", 2 unknown: no quorum can still hold it.
    assert c1.release(lease) is False


def test_redlock_needs_independent_masters(single: LocalTopology, clients: Clients) -> None:
    from chaos.errors import UsageError

    with pytest.raises(UsageError, match="at least 3 independent masters"):
        clients.make(single, "redlock")


def test_fenced_tokens_strictly_increase_across_grants(
    single: LocalTopology, clients: Clients
) -> None:
    c1, c2 = clients.make(single, "fenced", "c1"), clients.make(single, "fenced", "c2")
    fences = []
    a = c1.acquire()
    assert a and a.fence is not None
    fences.append(a.fence)
    assert not c2.acquire(), "a refused acquire must not consume a fence"
    assert c1.release(a)
    b = c2.acquire()
    assert b and b.fence is not None
    fences.append(b.fence)
    outlive(b)
    c = c1.acquire()
    assert c and c.fence is not None
    fences.append(c.fence)
    assert fences == [1, 2, 3]
    assert direct(single).pttl(fence_key(KEY)) == -1, "the counter must outlive the lock"


def test_redis_py_adapter_extends_with_the_library_and_maps_not_owned(
    single: LocalTopology, clients: Clients
) -> None:
    c1 = clients.make(single, "redis-py", "c1")
    c2 = clients.make(single, "redis-py", "c2")
    assert isinstance(c1, ExtendableLockClient)
    lease = c1.acquire()
    assert lease and isinstance(lease.state, redis.lock.Lock)
    assert direct(single).get(KEY) == lease.token
    time.sleep(TTL / 2 / 1000)
    extended = c1.extend(lease)
    assert extended and extended.validity_ms == TTL
    assert direct(single).pttl(KEY) > TTL * 0.8, "replace_ttl: a full TTL from the extend"
    outlive(lease)
    assert c2.acquire()
    assert c1.extend(lease) is None
    assert c1.release(lease) is False
