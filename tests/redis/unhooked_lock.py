"""A lock on a redis-py client of its own, built from the node's address rather than taken
from the context: the harness's connections never see its commands, as with a library on an
asyncio client or one that makes its connections itself (issue 35). SET NX PX to acquire, a
Lua compare-and-delete to release."""

from __future__ import annotations

import redis

from chaos.locks.contract import Lease, LockContext

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
TIMEOUT_S = 0.25  # a lost reply is an error within a TTL


class OwnClientLock:
    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx
        address = ctx.nodes[0].connection_pool.connection_kwargs
        self.redis = redis.Redis(host=address["host"], port=address["port"],
                                 socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        self.release_script = self.redis.register_script(RELEASE)

    def acquire(self) -> Lease | None:
        token = self.ctx.new_token()
        if self.redis.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token=token, validity_ms=self.ctx.ttl_ms)
        return None

    def release(self, lease: Lease) -> bool:
        return bool(self.release_script(keys=[self.ctx.lock_name], args=[lease.token]))


def make(ctx: LockContext) -> OwnClientLock:
    return OwnClientLock(ctx)
