"""get-then-del — SET NX PX; release = GET, compare the token, DEL: two round trips.

Seed: 004_8e2bee48344fb8f7.txt, 解锁 错误示例2 ``wrongReleaseLock2`` and the PHP
``LockTrait::baseUnLock`` (``$this->redis->get($key)`` … ``$this->redis->del($key)``).

Known flaw: if the lock expires and another client takes it between the GET and the DEL, the
DEL removes the other client's lock.

The seed's comment: "若在此时,这把锁突然不是这个客户端的,则会误解锁". Acquire is a single
attempt; the PHP ``baseLock`` retry loop is left to the harness (its ``sleep(0.2)`` truncates to
``sleep(0)`` in PHP, a busy loop not worth reproducing).
"""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SetNxPxLock, lock_info


class GetThenDelLock(SetNxPxLock):
    def release(self, lease: Lease) -> bool:
        if self.redis.get(self.key) == lease.token:
            # <- the window: the lock may expire and be taken by someone else right here.
            return bool(self.redis.delete(self.key))
        return False


def make(ctx: LockContext) -> GetThenDelLock:
    return GetThenDelLock(ctx)


INFO = lock_info(__doc__, name="get-then-del", module=__name__)
