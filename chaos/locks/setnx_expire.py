"""setnx-expire — SETNX, then (P)EXPIRE in a second round trip; compare-and-delete release.

Seed: 004_8e2bee48344fb8f7.txt, 错误示例1 ``wrongGetLock1`` (``jedis.setnx`` then
``jedis.expire``; 000 and 003 warn against the same split).

Known flaw: a crash or lost connection between SETNX and EXPIRE leaves a key with no expiry,
so nobody can ever acquire the lock again (deadlock).

The seed's comment says it: "若在这里程序突然崩溃,则无法设置过期时间,将发生死锁". The expiry is
``EXPIRE`` in seconds when the TTL is whole seconds (as Jedis' ``expire`` is), else ``PEXPIRE``.
If the second command fails, ``acquire`` raises (the outcome is indeterminate) and the key
stays without a TTL — the adapter does not clean up, because the seed does not.
"""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


class SetnxExpireLock(CompareAndDeleteRelease, SingleNodeLock):
    def acquire(self) -> Lease | None:
        token = self.new_token()
        if not self.redis.setnx(self.key, token):
            return None
        # <- a crash here is the flaw: the key now exists with no expiry.
        self.set_expiry()
        return Lease(token=token, validity_ms=self.ttl_ms)


def make(ctx: LockContext) -> SetnxExpireLock:
    return SetnxExpireLock(ctx)


INFO = lock_info(__doc__, name="setnx-expire", module=__name__)
