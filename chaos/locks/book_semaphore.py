"""book-semaphore — Redis in Action's basic counting semaphore: one ZSET scored by client clocks.

Seed: Redis in Action (Josiah Carlson, 2013), 6.3.1 "Building a basic counting semaphore",
listings 6.12 ``acquire_semaphore`` and 6.13 ``release_semaphore``
(josiahcarlson/redis-in-action, python/ch06_listing_source.py).

Known flaw: every holder's timeout and every waiter's place in line are judged by the acquiring
client's own clock, so a client whose clock runs ahead times out live holders and one whose
clock runs behind ranks before them, and either way more clients hold permits than the limit.

One transaction (``MULTI``/``EXEC``): ``ZREMRANGEBYSCORE sem -inf now-timeout`` (time out old
holders), ``ZADD sem now identifier``, ``ZRANK sem identifier``; a rank below the limit is a
permit, else ``ZREM sem identifier``. Release is ``ZREM`` (false when the entry had already
been timed out by someone's acquire). There is no refresh in 6.3.1, so no ``extend``.

Clocks that agree do not close the flaw: ``now`` is read before the transaction is sent, so a
client that read its clock first but whose transaction arrives second ranks before a client
already granted the last permit, and both hold it (the book, 6.3.4: with the clock as the
order, this race's likelihood "was related to the difference in system times").

The book's ``semname`` is the run's lock name, its ``limit`` the run's capacity
(``LockContext.capacity``, 3 unless the run says otherwise), its ``timeout`` the run's TTL, and
``now`` is ``time.time()`` as in the book, so the ``client-clock`` fault moves it. Differences
from the book, none of which changes a command it sends: ``ZADD`` takes a mapping (redis-py
≥ 3); the identifier is ``LockContext.new_token()`` (the client's id and 64 random bits) rather
than ``uuid4()``, so a history names the holder; each acquire is one permit, as in the book (a
harness asking for more gets ``ValueError``). Its keys must share a master: the book's
transactions span several keys, so on a Redis Cluster the factory refuses to start.
"""

from __future__ import annotations

import time

from redis.cluster import RedisCluster

from chaos.errors import UsageError
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info

SHARED = "shared"  # a semaphore's holds are shared ones, counted against its capacity
DEFAULT_LIMIT = 3  # the permits a run gives a book semaphore unless it says otherwise


class CountingSemaphore(SingleNodeLock):
    """What the book's three semaphores share: ``semname``, ``limit`` and ``timeout`` taken
    from the run, and their one-permit, shared-mode acquire."""

    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        if isinstance(ctx.primary, RedisCluster):
            raise UsageError(
                f"{type(self).__name__} sends transactions over several keys: it needs a "
                "single master (standalone or Sentinel), not a Redis Cluster"
            )
        if ctx.capacity is None or ctx.capacity < 1:
            raise UsageError(f"a counting semaphore needs at least 1 permit (got {ctx.capacity})")
        self.semname = self.key
        self.limit: int = ctx.capacity
        self.timeout = self.ttl_ms / 1000  # the book's timeout, in seconds

    @staticmethod
    def check_request(mode: str, permits: int) -> None:
        """The book's semaphores grant one shared permit per acquire, nothing else."""
        if mode != SHARED or permits != 1:
            raise ValueError(
                f"the book's semaphores grant one {SHARED!r} permit per acquire "
                f"(asked: mode={mode!r}, permits={permits})"
            )

    def lease(self, identifier: str) -> Lease:
        return Lease(token=identifier, validity_ms=self.ttl_ms, state=identifier)


class BasicSemaphore(CountingSemaphore):
    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | None:
        self.check_request(mode, permits)
        identifier = self.new_token()
        now = time.time()
        pipeline = self.redis.pipeline(True)
        pipeline.zremrangebyscore(self.semname, "-inf", now - self.timeout)  # time out holders
        pipeline.zadd(self.semname, {identifier: now})
        pipeline.zrank(self.semname, identifier)
        if pipeline.execute()[-1] < self.limit:
            return self.lease(identifier)
        self.redis.zrem(self.semname, identifier)  # no permit: discard our identifier
        return None

    def release(self, lease: Lease) -> bool:
        return bool(self.redis.zrem(self.semname, lease.state))


def make(ctx: LockContext) -> BasicSemaphore:
    return BasicSemaphore(ctx)


INFO = lock_info(__doc__, name="book-semaphore", module=__name__,
                 capacity=DEFAULT_LIMIT, modes=(SHARED,), max_permits=1)
