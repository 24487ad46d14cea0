"""check-then-set — EXISTS, then SET, then (P)EXPIRE: three round trips; compare-and-delete.

Seed: 000_8a1b5bedde93f492.txt, 加锁流程 (判断key是否存在 → 保存key-value → 设置key的过期时间)
and its race 1: "判断key是否存在，得出不存在的结果，保存key-value之前，另一个客户端也执行相同逻辑
并且判断了key不存在，此时它也同样会创建并获得相同的锁".

Known flaw: two clients can both see the key missing before either SETs it, and both believe
they hold the lock (the later SET silently overwrites the earlier one's token).

This is the flow the post draws before it shows the fix (``SET … EX … NX``): the check, the
write and the expiry are three separate commands, so nothing makes them atomic. The SET has
no NX (the client has already "checked"), so the second writer wins the key and the first
still acts as the holder. The expiry is ``EXPIRE`` in whole seconds when the TTL is whole
seconds, else ``PEXPIRE`` (race 2, a crash before it, is ``setnx-expire``'s cell). A pause
between the EXISTS and the SET (``client-pause-at:command=SET:op=acquire``) makes race 1
certain rather than likely.
"""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


class CheckThenSetLock(CompareAndDeleteRelease, SingleNodeLock):
    def acquire(self) -> Lease | None:
        if self.redis.exists(self.key):
            return None
        # <- race 1: another client can pass the same check right here.
        token = self.new_token()
        self.redis.set(self.key, token)
        # <- race 2: a crash here leaves a key with no expiry.
        self.set_expiry()
        return Lease(token=token, validity_ms=self.ttl_ms)


def make(ctx: LockContext) -> CheckThenSetLock:
    return CheckThenSetLock(ctx)


INFO = lock_info(__doc__, name="check-then-set", module=__name__)
