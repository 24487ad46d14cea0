"""lua-ceil — seed 000's acquire as written: ``SET … EX ceil(lock_timeout) NX``, Lua release.

Seed: 000_8a1b5bedde93f492.txt (``acquire_lock_with_timeout``: ``lock_timeout =
int(math.ceil(lock_timeout))``, ``conn.set(lockname, identifier, ex=lock_timeout, nx=True)``).

Known flaw: rounding up is safe for mutual exclusion but not for availability: a crashed
holder's key outlives the configured TTL (200 ms becomes EX 1), and, as with ``lua``, nothing
fences a holder paused past the TTL.

The lease claims the configured TTL (what the caller asked for), and Redis keeps the key for
``ceil`` of it in whole seconds: never shorter, so no hard violation comes from the rounding
itself — the contrast with ``lua-int-expire``, which truncates. One attempt per ``acquire``
(the post's 5 s retry loop is the harness's retry loop here).
"""

from __future__ import annotations

import math

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


class LuaCeilLock(CompareAndDeleteRelease, SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.lock_timeout = int(math.ceil(self.ttl_ms / 1000))  # noqa: RUF046 (the post's)

    def acquire(self) -> Lease | None:
        token = self.new_token()
        if self.redis.set(self.key, token, ex=self.lock_timeout, nx=True):
            return Lease(token=token, validity_ms=self.ttl_ms)
        return None


def make(ctx: LockContext) -> LuaCeilLock:
    return LuaCeilLock(ctx)


INFO = lock_info(__doc__, name="lua-ceil", module=__name__)
