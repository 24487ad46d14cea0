"""php-lock — 004's PHP ``LockTrait``: uniqid() token, SET EX NX retried for a window, GET-then-DEL.

Seed: 004_8e2bee48344fb8f7.txt, php 实现分布式锁 (``baseLock($key, 4, 2)``: ``$identifier =
uniqid()``, ``set($key, $identifier, "ex", $expire_time, "nx")`` retried while
``Carbon::now()->timestamp < $end_time``, ``sleep(0.2)``; ``baseUnLock``: ``get`` then ``del``).

Known flaw: it gives up after a retry window (2 s) shorter than the lock's expiry (4 s), so
waiters abandon a lock whose crashed holder's key still lives (seed 002 warns acquire_timeout
must exceed lock_timeout); its release is GET-then-DEL, and uniqid() is a timestamp.

As written: the expiry is whole seconds (``ex``; ``lockAccount`` passes 4), and the retry
window is the post's ``2 / 4`` of it in whole seconds (at least 1), measured the post's way —
whole-second timestamps, so a 2 s window really lasts between one and two seconds.
``sleep(0.2)`` is PHP's ``sleep(int)``: 0.2 truncates to 0, a busy loop. ``uniqid()`` is
the current time in hex (8 digits of seconds, 5 of microseconds): two processes calling it in
the same microsecond share a token. A window that runs out returns ``GAVE_UP`` (the
history's ``gave-up``). Run it with a TTL of whole seconds (``--ttl-ms 4000`` is the post's);
a shorter one is rounded up.
"""

from __future__ import annotations

import math
import time

from chaos.locks.contract import GAVE_UP, GaveUp, Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info


def uniqid() -> str:
    """PHP's ``uniqid()``: ``%08x%05x`` of the current seconds and microseconds."""
    now = time.time()
    seconds = int(now)
    return f"{seconds:08x}{int((now - seconds) * 1_000_000):05x}"


class PhpLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.expire_time = max(1, math.ceil(self.ttl_ms / 1000))  # baseLock($key, 4, 2)
        self.retry_time = max(1, self.expire_time // 2)  # whole seconds, as addSecond() takes

    def new_token(self) -> str:
        return uniqid()

    def acquire(self) -> Lease | GaveUp:
        identifier = self.new_token()
        start_time = int(time.time())  # Carbon::now()->timestamp
        end_time = int(time.time()) + self.retry_time  # ->addSecond($retry_time)->timestamp
        while start_time < end_time:
            if self.redis.set(self.key, identifier, ex=self.expire_time, nx=True):
                # Measured from the first attempt: the key lives at least that long.
                return Lease(token=identifier, validity_ms=self.expire_time * 1000)
            time.sleep(int(0.2))  # PHP's sleep() takes an int: sleep(0)
            start_time = int(time.time())
        return GAVE_UP

    def release(self, lease: Lease) -> bool:
        if self.redis.get(self.key) == lease.token:  # baseUnLock: get, compare, del
            return bool(self.redis.delete(self.key))
        return False


def make(ctx: LockContext) -> PhpLock:
    return PhpLock(ctx)


INFO = lock_info(__doc__, name="php-lock", module=__name__)
