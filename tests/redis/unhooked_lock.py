"""The bundled redis-py adapter (redis-py's own ``Lock``) on a client of its own, built from
the node's address rather than taken from the context: the harness's connections never see
its commands, as with a library on an asyncio client or one that makes its connections
itself (issue 35)."""

from __future__ import annotations

import redis

from chaos.locks.contract import LockContext
from chaos.locks.redis_py import RedisPyLock

TIMEOUT_S = 0.25  # a lost reply is an error within a TTL


class OwnClientLock(RedisPyLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        address = ctx.primary.connection_pool.connection_kwargs
        self.redis = redis.Redis(host=address["host"], port=address["port"],
                                 socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)


def make(ctx: LockContext) -> OwnClientLock:
    return OwnClientLock(ctx)
