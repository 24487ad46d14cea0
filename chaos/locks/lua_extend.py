"""lua-extend — seed 001's RedisLockV2: SET NX EX, Lua compare-and-EXPIRE extend, Lua release.

Seed: 001_070fe2e587afd768.txt (``RedisLockV2.acquire_lock`` / ``set_lock_ttl`` /
``release_lock``; its demo extends every 0.2 s while "doing sth").

Known flaw: extending only helps while the holder runs, so a pause longer than the TTL between
two extends lets the lock expire and another client take it, and nothing fences the stale
holder.

``extend`` resets the TTL to the full TTL from now, as ``set_lock_ttl(ttl=self._ttl)`` does.
The seed works in whole seconds (``SET … EX``, ``EXPIRE``); when the TTL is not whole seconds
this uses ``PX`` and ``PEXPIRE`` instead, so the TTL is never rounded.
"""

from __future__ import annotations

from dataclasses import replace

from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import (
    CompareAndDeleteRelease,
    SingleNodeLock,
    expiry,
    lock_info,
    whole_seconds,
)


class LuaExtendLock(CompareAndDeleteRelease, SingleNodeLock):
    def acquire(self) -> Lease | None:
        token = self.new_token()
        if self.redis.set(self.key, token, nx=True, **expiry(self.ttl_ms)):
            return Lease(token=token, validity_ms=self.ttl_ms)
        return None

    def extend(self, lease: Lease) -> Lease | None:
        if whole_seconds(self.ttl_ms):
            done = scripts.COMPARE_AND_EXPIRE(
                self.redis, [self.key], [lease.token, self.ttl_ms // 1000]
            )
        else:
            done = scripts.COMPARE_AND_PEXPIRE(self.redis, [self.key], [lease.token, self.ttl_ms])
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def make(ctx: LockContext) -> LuaExtendLock:
    return LuaExtendLock(ctx)


INFO = lock_info(__doc__, name="lua-extend", module=__name__, extend=True)
