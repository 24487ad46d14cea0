"""lua-setnx-expire — SETNX + EXPIRE in one Lua script (whole seconds); compare-and-delete.

Seed: 003_ad4e3d3f63ce056d.txt, 常规setnx方式实现 (1. 通过lua脚本保证原子性) and its
compare-and-delete 解锁 script.

Known flaw: EXPIRE takes whole seconds, so the TTL is rounded up (300 ms becomes 1 s) and,
as with ``lua``, nothing fences a holder paused past that TTL.

Atomic, unlike ``setnx-expire``. The rounding is not hidden: the lease claims the validity the
script really set (``ceil(ttl_ms / 1000) * 1000`` ms), so a crashed holder blocks the others for
longer than the configured TTL.
"""

from __future__ import annotations

import math

from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


class LuaSetnxExpireLock(CompareAndDeleteRelease, SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.ttl_s = max(1, math.ceil(self.ttl_ms / 1000))

    def acquire(self) -> Lease | None:
        token = self.new_token()
        if scripts.SETNX_EXPIRE(self.redis, [self.key], [token, self.ttl_s]):
            return Lease(token=token, validity_ms=self.ttl_s * 1000)
        return None


def make(ctx: LockContext) -> LuaSetnxExpireLock:
    return LuaSetnxExpireLock(ctx)


INFO = lock_info(__doc__, name="lua-setnx-expire", module=__name__)
