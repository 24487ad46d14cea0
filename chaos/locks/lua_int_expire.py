"""lua-int-expire — seed 001's RedisLockV2 as written: ``SET … EX int(expire) NX``, Lua release.

Seed: 001_070fe2e587afd768.txt (``RedisLockV2.acquire_lock``: ``lock_timeout =
int(self._expire)``, ``self._redis.set(self._key, identifier, ex=lock_timeout, nx=True)``).

Known flaw: ``int()`` truncates, so Redis is told a shorter TTL than the lock was configured
with (1.5 s becomes EX 1, and anything under a second becomes EX 0, which Redis refuses), while
the caller still believes it holds the lock for the configured time.

``lua`` and ``lua-extend`` use ``PX`` so a TTL in milliseconds is honoured exactly; this module
keeps the post's arithmetic, because that arithmetic is the bug: the lease claims the
configured TTL (``validity_ms = ttl_ms``), which is what the post's caller assumes, and Redis
expires the key ``ttl_ms mod 1000`` ms earlier. With a sub-second TTL every acquire raises
``ResponseError: invalid expire time`` (an indeterminate outcome, and no lock at all).
"""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


class LuaIntExpireLock(CompareAndDeleteRelease, SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.expire = self.ttl_ms / 1000  # RedisLockV2(expire=…), in seconds

    def acquire(self) -> Lease | None:
        token = self.new_token()
        lock_timeout = int(self.expire)  # the post: truncates 1.5 → 1, 0.2 → 0
        if self.redis.set(self.key, token, ex=lock_timeout, nx=True):
            return Lease(token=token, validity_ms=self.ttl_ms)
        return None


def make(ctx: LockContext) -> LuaIntExpireLock:
    return LuaIntExpireLock(ctx)


INFO = lock_info(__doc__, name="lua-int-expire", module=__name__)
