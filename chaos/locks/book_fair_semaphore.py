"""book-fair-semaphore — Redis in Action's fair semaphore: a counter ranks, client clocks expire.

Seed: Redis in Action (Josiah Carlson, 2013), 6.3.2 "Fair semaphores" and 6.3.3 "Refreshing
semaphores", listings 6.14 ``acquire_fair_semaphore``, 6.15 ``release_fair_semaphore`` and
6.16 ``refresh_fair_semaphore`` (josiahcarlson/redis-in-action, python/ch06_listing_source.py).

Known flaw: its acquire is two transactions, so a client that takes the counter first but adds
its entry second takes the last permit from one that came in between (6.3.4's race), and
timeouts are still judged by each client's clock, so one whose clock runs ahead times out live
holders.

What 6.3.2 fixes: a waiter's rank is its place in the counter, ``INCR sem:counter``, kept as
the score in the owner ZSET ``sem:owner``; the acquiring client's clock no longer decides who
ranks first (the book's point: a client with a slow clock no longer steals permits). What it
keeps from 6.3.1, as the book says: holders are timed out from the timeout ZSET ``sem`` by the
acquiring client's ``time.time()``, and ``ZINTERSTORE sem:owner 2 sem:owner sem WEIGHTS 1 0``
carries those timeouts over to the owner ZSET. The book hopes for clocks "within 1 second" of
each other; the ``client-clock`` fault moves them further.

Acquire is the book's two transactions: (1) ``ZREMRANGEBYSCORE sem -inf now-timeout``, the
``ZINTERSTORE``, ``INCR sem:counter``; (2) ``ZADD sem now id``, ``ZADD sem:owner counter id``,
``ZRANK sem:owner id``: a rank below the limit is a permit, else a third transaction ``ZREM``s
the identifier from both. Release ``ZREM``s both (true when the timeout ZSET still had it).
``extend`` is ``refresh_fair_semaphore``: ``ZADD sem time.time() id``; if that added a new
member the permit had been timed out, so it is released and the extend refused.

Differences from the book, none of which changes a command it sends: ``ZADD`` takes a mapping
and ``ZINTERSTORE`` its weights as a dict (redis-py ≥ 3); the rest is as ``book-semaphore``
says (identifier, limit, timeout, one permit per acquire, a single master). The counter is never
reset. It does not declare ``fair``: the book's fairness is that the counter, not a clock,
ranks overlapping attempts; an acquire is one attempt and nobody waits in a queue, so it makes no
claim about granting waiters in the order they asked.
"""

from __future__ import annotations

import time

from chaos.locks.book_semaphore import DEFAULT_LIMIT, SHARED, CountingSemaphore
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import lock_info


def owner_key(semname: str) -> str:
    return semname + ":owner"


def counter_key(semname: str) -> str:
    return semname + ":counter"


class FairSemaphore(CountingSemaphore):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.czset = owner_key(self.semname)
        self.ctr = counter_key(self.semname)

    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | None:
        self.check_request(mode, permits)
        return self.acquire_fair_semaphore()

    def acquire_fair_semaphore(self) -> Lease | None:
        identifier = self.new_token()
        now = time.time()
        pipeline = self.redis.pipeline(True)
        pipeline.zremrangebyscore(self.semname, "-inf", now - self.timeout)  # time out old
        pipeline.zinterstore(self.czset, {self.czset: 1, self.semname: 0})  # entries in both
        pipeline.incr(self.ctr)
        counter = pipeline.execute()[-1]

        pipeline.zadd(self.semname, {identifier: now})
        pipeline.zadd(self.czset, {identifier: counter})
        pipeline.zrank(self.czset, identifier)
        if pipeline.execute()[-1] < self.limit:
            return self.lease(identifier)

        pipeline.zrem(self.semname, identifier)  # no permit: clean out our entries
        pipeline.zrem(self.czset, identifier)
        pipeline.execute()
        return None

    def release(self, lease: Lease) -> bool:
        pipeline = self.redis.pipeline(True)
        pipeline.zrem(self.semname, lease.state)
        pipeline.zrem(self.czset, lease.state)
        return bool(pipeline.execute()[0])

    def extend(self, lease: Lease) -> Lease | None:
        if self.redis.zadd(self.semname, {lease.state: time.time()}):
            self.release(lease)  # a new member: we had been timed out, the permit is lost
            return None
        return self.lease(lease.state)


def make(ctx: LockContext) -> FairSemaphore:
    return FairSemaphore(ctx)


INFO = lock_info(__doc__, name="book-fair-semaphore", module=__name__, extend=True,
                 capacity=DEFAULT_LIMIT, modes=(SHARED,), max_permits=1)
