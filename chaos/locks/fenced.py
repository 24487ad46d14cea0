"""fenced — ``lua`` plus a fencing token: INCR of a counter key next to the lock, on each grant.

Seed: none directly — it answers 003_ad4e3d3f63ce056d.txt's 自动过期问题 (a GC-paused holder
outliving its lock) the way Kleppmann's "How to do distributed locking" (2016) does: the
resource rejects any token lower than the highest it has seen.

Known flaw: the counter is an ordinary key on the same master, so a failover before it
replicates, or a restart without persistence, hands out a token that is not higher than one
already issued, and only a resource that checks tokens is protected.

One Lua script does ``SET key token NX PX ttl`` and, only if that succeeded, ``INCR
key:fence`` (the counter has no TTL); the new value is ``Lease.fence``. Release is the
compare-and-delete of ``lua``; the counter is never reset.
"""

from __future__ import annotations

from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SingleNodeLock, lock_info


def fence_key(lock_name: str) -> str:
    return f"{lock_name}:fence"


class FencedLock(CompareAndDeleteRelease, SingleNodeLock):
    def acquire(self) -> Lease | None:
        token = self.new_token()
        fence = scripts.FENCED_ACQUIRE(
            self.redis, [self.key, fence_key(self.key)], [token, self.ttl_ms]
        )
        if not fence:
            return None
        return Lease(token=token, validity_ms=self.ttl_ms, fence=int(fence))


def make(ctx: LockContext) -> FencedLock:
    return FencedLock(ctx)


INFO = lock_info(__doc__, name="fenced", module=__name__, fencing=True)
