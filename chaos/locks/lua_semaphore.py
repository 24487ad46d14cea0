"""lua-semaphore — a counting semaphore in Lua: a sorted set of permits scored by server expiry.

Seed: none directly — it carries 000_8a1b5bedde93f492.txt's rule (判断key是否存在, 保存key-value,
设置key的过期时间: one atomic step) from one holder to N, as Redis in Action 6.3's counting
semaphore does (a ZSET of holders scored by time, stale ones removed with ZREMRANGEBYSCORE),
but in one script: expiry from the server's ``TIME``, expired permits pruned inside the
script, granted iff held + asked ≤ capacity, all in one round trip.

Known flaw: its expiry is the server's wall clock, so a clock jump on the master expires every
permit early (as any TTL does) and, like every single-master lock, a failover loses permits
that had not reached the replica.

Each of the ``permits`` a holder takes is one member ``token#i``, scored by when it expires (the
server's milliseconds, ``TIME`` + TTL). Release removes only our own members; extend re-scores
only ours, and only while every one of them is still there. The set's own TTL is kept at the
latest expiry, so an idle semaphore leaves no key behind.
"""

from __future__ import annotations

from dataclasses import replace

from chaos.locks import scripts
from chaos.locks.contract import SHARED, Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info

DEFAULT_CAPACITY = 3  # permits, unless the run says otherwise (--capacity)


class LuaSemaphore(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        if ctx.capacity is None:
            raise ValueError("a semaphore needs a number of permits (capacity)")
        self.capacity = ctx.capacity

    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | None:
        if mode != SHARED or not 1 <= permits <= self.capacity:
            raise ValueError(f"a semaphore grants 1 to {self.capacity} shared permits, "
                             f"not {permits} {mode}")
        token = self.new_token()
        granted = scripts.SEMAPHORE_ACQUIRE(
            self.redis, [self.key], [token, permits, self.capacity, self.ttl_ms]
        )
        return Lease(token=token, validity_ms=self.ttl_ms, state=permits) if granted else None

    def release(self, lease: Lease) -> bool:
        return bool(scripts.SEMAPHORE_RELEASE(self.redis, [self.key], [lease.token, lease.state]))

    def extend(self, lease: Lease) -> Lease | None:
        done = scripts.SEMAPHORE_EXTEND(
            self.redis, [self.key], [lease.token, lease.state, self.ttl_ms]
        )
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def make(ctx: LockContext) -> LuaSemaphore:
    return LuaSemaphore(ctx)


INFO = lock_info(__doc__, name="lua-semaphore", module=__name__, extend=True,
                 capacity=DEFAULT_CAPACITY, modes=(SHARED,))
