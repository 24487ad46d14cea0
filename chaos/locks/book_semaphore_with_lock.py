"""book-semaphore-with-lock — Redis in Action's fair semaphore acquired under its 6.2 lock.

Seed: Redis in Action (Josiah Carlson, 2013), 6.3.4 "Preventing race conditions", listing 6.17
``acquire_semaphore_with_lock``, with 6.2's ``acquire_lock`` and ``release_lock`` (listings 6.8
and 6.10) and the fair semaphore of 6.3.2 (``book-fair-semaphore``)
(josiahcarlson/redis-in-action, python/ch06_listing_source.py).

Known flaw: timeouts are still judged by each client's clock, so one whose clock runs ahead
times out live holders, and the guarding lock key never expires, so a client that dies holding
it leaves every later acquire refused.

What 6.3.4's lock fixes: its race, two clients taking the last permit at once because one took
the counter first and the other added its entry first. Every acquire runs
``acquire_fair_semaphore`` holding the lock ``lock:<semname>`` (``SETNX`` of a random
identifier, retried every millisecond for at most ``acquire_timeout`` = 0.01 s, the book's
value, measured on ``time.time()`` as in the book), and releases it afterwards (``WATCH``,
``GET``, then ``MULTI``/``DEL``/``EXEC`` if the value is still ours), so no two acquires
interleave. A client that cannot take the lock in time is refused the semaphore, as in the book:
``GAVE_UP`` (the contract's "ran out of its own acquire timeout"). Release and ``extend``
(refresh) are the fair semaphore's and do not take the lock, as in the book.

The price of the fix: an acquire holds the guard for its SETNX, the fair semaphore's two
transactions and the release's WATCH, GET and transaction, so under contention alone, with
permits free, a client can find the guard taken for all of its 10 ms and give up.

What it leaves: timeouts by the client's clock, as in 6.3.2. And the listing calls 6.2.3's
``acquire_lock``, which sets no expiry (the text says "our earlier distributed lock with
timeouts" of 6.2.5, the code does not use it): this follows the code, so a client killed
between its ``SETNX`` and its release leaves ``lock:<semname>`` for good.

Differences from the book: ``release_lock`` retries a ``WatchError`` (someone changed the lock
key between ``WATCH`` and ``EXEC``) at most ``RELEASE_TRIES`` times, not forever, then raises
``Indeterminate``; the rest is as ``book-fair-semaphore`` says.
"""

from __future__ import annotations

import time
import uuid

import redis

from chaos.locks.book_fair_semaphore import FairSemaphore
from chaos.locks.book_semaphore import DEFAULT_LIMIT, SHARED
from chaos.locks.contract import GAVE_UP, GaveUp, Indeterminate, Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info

ACQUIRE_TIMEOUT_S = 0.01  # acquire_semaphore_with_lock's acquire_timeout=.01
RETRY_SLEEP_S = 0.001  # acquire_lock's time.sleep(.001)
RELEASE_TRIES = 100  # release_lock's WatchError retries, bounded here (the book's are not)


def guard_key(semname: str) -> str:
    """The lock ``acquire_lock(conn, semname)`` takes: ``'lock:' + semname``."""
    return "lock:" + semname


class SemaphoreWithLock(SingleNodeLock):
    """The fair semaphore, whose acquire runs under ``lock:<semname>``."""

    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.semaphore = FairSemaphore(ctx)
        self.lockname = guard_key(self.semaphore.semname)

    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | GaveUp | None:
        self.semaphore.check_request(mode, permits)
        identifier = self.acquire_lock()
        if identifier is None:
            return GAVE_UP
        try:
            return self.semaphore.acquire_fair_semaphore()
        finally:
            self.release_lock(identifier)

    def release(self, lease: Lease) -> bool:
        return self.semaphore.release(lease)

    def extend(self, lease: Lease) -> Lease | None:
        return self.semaphore.extend(lease)

    def acquire_lock(self) -> str | None:
        identifier = str(uuid.uuid4())
        end = time.time() + ACQUIRE_TIMEOUT_S
        while time.time() < end:
            if self.redis.setnx(self.lockname, identifier):
                return identifier
            time.sleep(RETRY_SLEEP_S)
        return None

    def release_lock(self, identifier: str) -> bool:
        pipe = self.redis.pipeline(True)
        for _ in range(RELEASE_TRIES):
            try:
                pipe.watch(self.lockname)
                if pipe.get(self.lockname) == identifier:  # still ours
                    pipe.multi()
                    pipe.delete(self.lockname)
                    pipe.execute()
                    return True
                pipe.unwatch()
                return False  # we lost the lock
            except redis.WatchError:
                continue  # someone else did something with the lock: retry
        raise Indeterminate(f"{self.lockname} changed under every one of {RELEASE_TRIES} tries")


def make(ctx: LockContext) -> SemaphoreWithLock:
    return SemaphoreWithLock(ctx)


INFO = lock_info(__doc__, name="book-semaphore-with-lock", module=__name__, extend=True,
                 capacity=DEFAULT_LIMIT, modes=(SHARED,), max_permits=1)
