"""Redis in Action's three counting semaphores (6.3), each against a real Redis: what each step
of the book fixes and what it leaves, shown in the ZSETs themselves.

No mocks. An interleaving is driven by a connection class that runs another client's whole
acquire right before a chosen transaction of the first (as the harness's pause points stop a
client before a command); a wrong clock is a real process under libfaketime
(``chaos.workload.clocks``), the way the ``client-clock`` fault runs a client.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any, ClassVar

import pytest
import redis
from cells import CellRuns
from test_locks import KEY, Clients, direct

from chaos.campaign import HISTORY
from chaos.experiments.truth_table import BOOK_PAUSE, CELLS
from chaos.history import PAUSE_POINT
from chaos.locks import build_context
from chaos.locks.book_fair_semaphore import counter_key, owner_key
from chaos.locks.book_semaphore_with_lock import guard_key
from chaos.locks.contract import GAVE_UP, ExtendableLockClient, Lease, LockClient
from chaos.lockspec import resolve
from chaos.topology import ClientView, LocalTopology
from chaos.workload import clocks
from chaos.workload.inject import InjectingConnection, PausePoint, injector

TTL = 30_000  # the book's timeout: no lease lapses while a process starts, even under load
OWNER = owner_key(KEY)
BOOK = ["book-semaphore", "book-fair-semaphore", "book-semaphore-with-lock"]


class BeforeTransaction(redis.Connection):
    """Runs (and forgets) a hook right before the next transaction that holds a command of a
    name is sent (redis-py packs a pipeline's commands together: ``pack_commands``)."""

    hooks: ClassVar[dict[str, Callable[[], None]]]

    def pack_commands(self, commands: Sequence[Sequence[Any]]) -> list[bytes]:
        names = {str(args[0]).upper() for args in commands}
        for name in [name for name in type(self).hooks if name in names]:
            type(self).hooks.pop(name)()
        packed: list[bytes] = super().pack_commands(commands)
        return packed


def before_transaction() -> type[BeforeTransaction]:
    """A fresh ``BeforeTransaction`` class, so tests never share hooks."""
    return type("BeforeTransaction", (BeforeTransaction,), {"hooks": {}})


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    yield made
    made.close()


def semaphore(clients: Clients, topo: LocalTopology, name: str, cid: str, capacity: int = 1,
              ttl_ms: int = TTL, **kw: Any) -> LockClient:
    """Client ``cid`` of semaphore ``name`` with ``capacity`` permits (the book's ``limit``)
    and the run's TTL as the book's ``timeout``."""
    ctx = clients.ctx(topo, cid, ttl_ms, **kw)
    ctx.capacity = capacity
    return resolve(name).create(ctx)


def acquire(lock: LockClient) -> Lease | None:
    """A semaphore's acquire, as the harness calls it: one shared permit."""
    lease: Lease | None = lock.acquire(mode="shared", permits=1)  # type: ignore[call-arg]
    return lease


# -- what all three do --------------------------------------------------------------------


@pytest.mark.parametrize("name", BOOK)
def test_each_grants_its_limit_then_refuses_and_a_release_frees_a_permit(
    single: LocalTopology, clients: Clients, name: str
) -> None:
    locks = [semaphore(clients, single, name, f"c{i}", capacity=2) for i in range(1, 4)]
    first, second = acquire(locks[0]), acquire(locks[1])
    assert first and second
    assert not acquire(locks[2])
    assert direct(single).zrange(KEY, 0, -1) == [first.token, second.token]  # no leftovers
    assert locks[0].release(first)
    third = acquire(locks[2])
    assert third and direct(single).zrange(KEY, 0, -1) == [second.token, third.token]
    assert not locks[0].release(first)  # already released: ZREM removes nothing


@pytest.mark.parametrize("name", BOOK)
def test_each_grants_one_shared_permit_per_acquire_and_nothing_else(
    single: LocalTopology, clients: Clients, name: str
) -> None:
    lock = semaphore(clients, single, name, "c1", capacity=3)
    for mode, permits in [("shared", 2), ("exclusive", 1)]:
        with pytest.raises(ValueError, match="one 'shared' permit"):
            lock.acquire(mode=mode, permits=permits)  # type: ignore[call-arg]
    assert direct(single).keys("*") == []


@pytest.mark.parametrize("name", BOOK)
def test_each_times_a_holder_out_after_the_ttl_on_the_next_acquire(
    single: LocalTopology, clients: Clients, name: str
) -> None:
    """Nothing expires by itself: the next acquire's ZREMRANGEBYSCORE removes the entry."""
    old, new = (semaphore(clients, single, name, cid, ttl_ms=300) for cid in ("c1", "c2"))
    lease = acquire(old)
    assert lease and not acquire(new)
    time.sleep(0.3 + 0.05)
    assert direct(single).zrange(KEY, 0, -1) == [lease.token]  # still there
    taken = acquire(new)
    assert taken and direct(single).zrange(KEY, 0, -1) == [taken.token]
    assert not old.release(lease)  # the book: False "if it had timed out"


# -- 6.3.1 → 6.3.2: the clock, and the counter ---------------------------------------------


@pytest.mark.parametrize(("name", "offset_ms", "steals"), [
    ("book-semaphore", +2 * TTL, True),  # ahead: times the holder out
    ("book-semaphore", -2 * TTL, True),  # behind: ranks before the holder
    ("book-fair-semaphore", -2 * TTL, False),  # 6.3.2's fix: the counter ranks, not the clock
    ("book-fair-semaphore", +2 * TTL, True),  # what 6.3.2 leaves: timeouts by the clock
    ("book-semaphore-with-lock", +2 * TTL, True),  # and so does 6.3.4's lock
])
def test_a_client_with_a_wrong_clock(
    single: LocalTopology, clients: Clients, tmp_path: Any, name: str, offset_ms: int,
    steals: bool,
) -> None:
    """c1 (true clock) holds the one permit; c2 acquires in a process whose ``time.time()`` is
    ``offset_ms`` off. Ahead, its cut-off ``now - timeout`` is past c1's live entry and removes
    it; behind, (6.3.1 only) its entry's score ranks before c1's. Either way c2 is granted the
    permit c1 still holds — or, with the fair semaphore's counter and a clock behind, refused."""
    holder = semaphore(clients, single, name, "c1")
    lease = acquire(holder)
    assert lease
    held_since = time.monotonic()
    token, skew = acquire_in_process(single.client_view("c2"), name, tmp_path, offset_ms)
    assert abs(skew - offset_ms / 1000) < 1.0  # c2's time.time() was that far off
    assert time.monotonic() - held_since < TTL / 1000  # c1's lease never lapsed
    entries = direct(single).zrange(KEY, 0, -1)
    if not steals:
        assert token is None and entries == [lease.token]
    elif offset_ms > 0:
        assert token and entries == [token]  # c1's live entry is gone
        assert not holder.release(lease)  # c1 finds out only when it releases
    else:
        assert token and entries == [token, lease.token]  # two holders of one permit


def test_basic_semaphore_ranks_by_when_a_client_read_its_clock_not_when_it_arrived(
    single: LocalTopology, clients: Clients
) -> None:
    """Clocks need not disagree: c1 reads ``time.time()``, then c2's whole acquire runs before
    c1's transaction arrives. c2 is granted the one permit, then c1's earlier score ranks before
    c2's and c1 is granted it too (6.3.4: with clocks, this race's likelihood "was related to
    the difference in system times")."""
    conn = before_transaction()
    first = semaphore(clients, single, "book-semaphore", "c1", connection_class=conn)
    second = semaphore(clients, single, "book-semaphore", "c2")
    between: list[Lease | None] = []
    conn.hooks["ZADD"] = lambda: between.append(acquire(second))
    lease = acquire(first)
    assert lease and between[0], "both clients hold the one permit"
    assert direct(single).zrange(KEY, 0, -1) == [lease.token, between[0].token]


def acquire_in_process(view: ClientView, name: str, directory: Any,
                       offset_ms: int) -> tuple[str | None, float]:
    """One acquire by client ``view.client_id`` in a process whose wall clock is
    ``offset_ms`` off: its lease's token (None if refused) and how far its clock was off."""
    clocks.set_offset(directory, view.client_id, offset_ms)
    reader, writer = clocks.SPAWN.Pipe(duplex=False)
    process = clocks.SPAWN.Process(target=_acquire, args=(view, name, writer), daemon=True)
    clocks.start(process, directory, view.client_id)
    writer.close()
    try:
        assert reader.poll(60), "the faked-clock client did not report"
        token, wall, mono = reader.recv()
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
    skew = (wall - mono) - (time.time() - time.monotonic())  # read against the shared clock
    return token, skew


def _acquire(view: ClientView, name: str, writer: Connection) -> None:
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL)
    ctx.capacity = 1
    try:
        lease = acquire(resolve(name).create(ctx))
        writer.send((lease.token if lease else None, time.time(), time.monotonic()))
    finally:
        ctx.close()


# -- 6.3.2 → 6.3.4: the race, and the lock -------------------------------------------------


def test_fair_semaphore_gives_the_last_permit_to_both_sides_of_the_books_race(
    single: LocalTopology, clients: Clients
) -> None:
    """6.3.4's race: c1 takes the counter first; c2 takes it second but adds its entries and
    checks its rank first, so it gets the last permit; then c1's lower counter ranks before
    c2's and c1 gets it too. Two holders of one permit, and c2 does not know."""
    conn = before_transaction()
    first = semaphore(clients, single, "book-fair-semaphore", "c1", connection_class=conn)
    second = semaphore(clients, single, "book-fair-semaphore", "c2")
    between: list[Lease | None] = []
    conn.hooks["ZADD"] = lambda: between.append(acquire(second))  # before c1's 2nd transaction
    lease = acquire(first)
    assert lease and between[0], "both clients hold the one permit"
    redis_ = direct(single)
    assert redis_.zrange(OWNER, 0, -1, withscores=True) == [
        (lease.token, 1.0), (between[0].token, 2.0)
    ]
    assert redis_.zcard(KEY) == 2
    assert isinstance(second, ExtendableLockClient)
    assert second.extend(between[0])  # refreshing does not tell c2 either


def test_semaphore_with_lock_refuses_the_same_interleaving(
    single: LocalTopology, clients: Clients
) -> None:
    """The same moment under 6.3.4's lock: c1 holds ``lock:<semname>`` from before its
    counter to after its rank, so c2 cannot start; it gives up after the book's 10 ms and
    takes no counter. Once c1 is done, the lock is free again (and the permit taken)."""
    conn = before_transaction()
    first = semaphore(clients, single, "book-semaphore-with-lock", "c1", connection_class=conn)
    second = semaphore(clients, single, "book-semaphore-with-lock", "c2")
    redis_ = direct(single)
    between: list[object] = []

    def second_tries() -> None:
        between.append(redis_.get(guard_key(KEY)))
        between.append(acquire(second))

    conn.hooks["ZADD"] = second_tries
    lease = acquire(first)
    assert lease
    guard_value, refused = between
    assert guard_value is not None and refused is GAVE_UP
    assert redis_.zrange(OWNER, 0, -1, withscores=True) == [(lease.token, 1.0)]
    assert redis_.get(counter_key(KEY)) == "1"  # c2 never took a counter
    assert not redis_.exists(guard_key(KEY))
    assert first.release(lease)
    assert acquire(second)


def test_semaphore_with_lock_never_expires_its_guard(
    single: LocalTopology, clients: Clients
) -> None:
    """The listing's ``acquire_lock`` sets no expiry: a client killed between its SETNX and
    its release (a real process, SIGKILLed right before it takes the counter) leaves the
    guard for good, and every later acquire is refused with every permit free."""
    process = clocks.SPAWN.Process(target=_acquire_and_die, args=(single.client_view("c2"),))
    process.start()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL
    redis_ = direct(single)
    guard = guard_key(KEY)
    assert redis_.exists(guard) and redis_.ttl(guard) == -1  # no expiry
    assert redis_.get(counter_key(KEY)) is None and redis_.zcard(KEY) == 0  # no permit taken
    lock = semaphore(clients, single, "book-semaphore-with-lock", "c1", capacity=3)
    assert acquire(lock) is GAVE_UP
    assert redis_.exists(guard) and redis_.ttl(guard) == -1


class KilledBeforeCounter(redis.Connection):
    """Kills its own process (SIGKILL: no ``finally`` runs) right before it sends the
    transaction that takes the counter (its ZINTERSTORE; redis-py sends INCR as INCRBY)."""

    def pack_commands(self, commands: Sequence[Sequence[Any]]) -> list[bytes]:
        if any(str(args[0]).upper() == "ZINTERSTORE" for args in commands):
            os.kill(os.getpid(), signal.SIGKILL)
        packed: list[bytes] = super().pack_commands(commands)
        return packed


def _acquire_and_die(view: ClientView) -> None:
    ctx = build_context(view, lock_name=KEY, ttl_ms=TTL, connection_class=KilledBeforeCounter)
    acquire(resolve("book-semaphore-with-lock").create(ctx))


# -- the harness's pause points between two transactions -------------------------------------


def test_a_pause_point_naming_zadd_fires_between_the_fair_semaphores_transactions(
    single: LocalTopology, clients: Clients
) -> None:
    """redis-py sends a transaction in one write; the harness's point naming ``ZADD`` fires
    before the write that carries it: after the first transaction took the counter, before the
    second adds any entry. The other client's whole acquire in that moment (what a paused
    client's rival does) wins the one permit, and the paused client is granted it too."""
    first = semaphore(clients, single, "book-fair-semaphore", "c1",
                      connection_class=InjectingConnection)
    second = semaphore(clients, single, "book-fair-semaphore", "c2")
    redis_ = direct(single)
    seen: list[tuple[object, int, Lease | None]] = []

    def meanwhile(point: PausePoint) -> None:
        seen.append((redis_.get(counter_key(KEY)), redis_.zcard(KEY), acquire(second)))

    injector.on_fire = meanwhile
    try:
        injector.arm(PausePoint("ZADD", action="sleep", op="acquire"))
        injector.begin("acquire")
        lease = acquire(first)
    finally:
        injector.end()
        injector.disarm_all()
        injector.on_fire = lambda point: None
    [(counter, entries, rival)] = seen
    assert (counter, entries) == ("1", 0)  # after the counter, before any entry
    assert lease and rival, "both clients hold the one permit"


def test_a_runs_pause_point_stops_a_book_semaphore_between_its_transactions(
    cell_runs: CellRuns,
) -> None:
    """The truth table's cell (``client-pause-at:command=ZADD:op=acquire``) reached the point
    in a real run: the fault had an effect, and every client it stopped stopped before ZADD."""
    [cell] = [c for c in CELLS if c.lock == "book-fair-semaphore" and c.faults == BOOK_PAUSE]
    _, outcome = cell_runs(cell.name)
    assert outcome.verdict.coverage["client-pause-at"].effective > 0
    events = [json.loads(line) for line in (outcome.run_dir / HISTORY).read_text().splitlines()]
    reached = [event["value"] for event in events if event["f"] == PAUSE_POINT]
    assert reached and all(value["command"] == "ZADD" for value in reached), reached
