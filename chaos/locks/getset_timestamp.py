"""getset-timestamp — value = the client's own expiry timestamp; SETNX, else GETSET if expired.

Seed: 004_8e2bee48344fb8f7.txt, 错误示例2 ``wrongGetLock2`` (``setnx`` an expiry timestamp,
``get`` it, ``getSet`` when it is in the past).

Known flaw: expiry is judged by each client's wall clock, a racing GETSET overwrites the
winner's expiry with the loser's, and with no owner in the value any client's plain DEL
releases the lock.

The key never gets a Redis TTL: it "expires" only when a client reads a timestamp older than
its own clock (``time.time()``, milliseconds since the epoch) — so a client whose clock runs
ahead steals live locks, and one that runs behind waits too long. ``release`` is a plain
``DEL``, exactly like the seed's (absent) owner check. ``Lease.token`` is a history label; the
value actually stored is the expiry timestamp (kept in ``Lease.state``).
"""

from __future__ import annotations

import time

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info


def wall_ms() -> int:
    """The client's wall clock in ms, as ``System.currentTimeMillis()``."""
    return int(time.time() * 1000)


class GetsetTimestampLock(SingleNodeLock):
    def acquire(self) -> Lease | None:
        expires = str(wall_ms() + self.ttl_ms)
        lease = Lease(token=self.new_token(), validity_ms=self.ttl_ms, state=expires)
        if self.redis.setnx(self.key, expires):
            return lease
        current = self.redis.get(self.key)
        if current is not None and int(str(current)) < wall_ms():
            # Expired by our clock: take it, unless someone else's GETSET got there first.
            old = self.redis.getset(self.key, expires)
            if old is not None and old == current:
                return lease
        return None

    def release(self, lease: Lease) -> bool:
        return bool(self.redis.delete(self.key))


def make(ctx: LockContext) -> GetsetTimestampLock:
    return GetsetTimestampLock(ctx)


INFO = lock_info(__doc__, name="getset-timestamp", module=__name__)
