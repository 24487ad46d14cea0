"""del-release — SET NX PX, released by a plain DEL.

Seed: 004_8e2bee48344fb8f7.txt, 解锁 错误示例1 ``wrongReleaseLock1`` (``jedis.del(lockKey)``).

Known flaw: DEL releases whatever lock is there, so a holder whose lease expired deletes the
lock another client now holds.
"""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SetNxPxLock, lock_info


class DelReleaseLock(SetNxPxLock):
    def release(self, lease: Lease) -> bool:
        return bool(self.redis.delete(self.key))


def make(ctx: LockContext) -> DelReleaseLock:
    return DelReleaseLock(ctx)


INFO = lock_info(__doc__, name="del-release", module=__name__)
