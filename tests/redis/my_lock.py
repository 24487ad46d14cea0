"""A team's own lock, as docs/pytest.md's example tests it (``lock="my_lock:make_lock"``).

Written against the public contract only (docs/writing-a-lock-adapter.md): SET NX PX to
acquire, a Lua compare-and-delete to release.
"""

from __future__ import annotations

import redis

from chaos.locks.contract import Lease, LockContext

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class MyLock:
    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx
        self.redis: redis.Redis = ctx.primary
        self.release_script = self.redis.register_script(RELEASE)

    def acquire(self) -> Lease | None:
        token = self.ctx.new_token()
        if self.redis.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token=token, validity_ms=self.ctx.ttl_ms)
        return None

    def release(self, lease: Lease) -> bool:
        return bool(self.release_script(keys=[self.ctx.lock_name], args=[lease.token]))


def make_lock(ctx: LockContext) -> MyLock:
    return MyLock(ctx)
