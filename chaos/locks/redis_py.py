"""redis-py — an adapter over redis-py's own ``redis.lock.Lock`` (the third-party example).

Seed: none directly — it is the library the Python seeds build on: 000_8a1b5bedde93f492.txt and
002_497f2475c0bb3b16.txt hand-roll the same SET NX + Lua compare-and-delete that ``Lock`` ships.

Known flaw: it is ``lua`` with a library around it, so a holder paused past its timeout keeps
acting as the holder after another client has acquired the lock, with no fencing token to stop
it.

``Lock(ctx.primary, ctx.lock_name, timeout=TTL, blocking=False, thread_local=False)``, one per
acquire (kept in ``Lease.state``), with our client-prefixed token passed to ``acquire(token=…)``
so histories stay readable. ``extend`` is ``Lock.extend(TTL, replace_ttl=True)``, so the new
lease runs a full TTL from the extend. The library raises ``LockNotOwnedError`` when the lock is
no longer ours; the adapter turns that — and only that — into ``False``/``None``. ``Lock``
converts its float timeout back with ``int(timeout * 1000)``, which loses a millisecond for
some TTLs (1001 ms → 1000 ms): the lease claims what the library really set.
"""

from __future__ import annotations

from dataclasses import replace

from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info


class RedisPyLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.timeout_s = self.ttl_ms / 1000
        self.set_ms = int(self.timeout_s * 1000)  # what Lock.do_acquire will really set

    def acquire(self) -> Lease | None:
        lock = Lock(
            self.redis,
            self.key,
            timeout=self.timeout_s,
            blocking=False,
            thread_local=False,  # the harness may release from another thread
        )
        token = self.new_token()
        if lock.acquire(token=token):
            return Lease(token=token, validity_ms=self.set_ms, state=lock)
        return None

    def release(self, lease: Lease) -> bool:
        try:
            lease.state.release()
        except LockNotOwnedError:
            return False
        return True

    def extend(self, lease: Lease) -> Lease | None:
        try:
            lease.state.extend(self.timeout_s, replace_ttl=True)
        except LockNotOwnedError:
            return None
        return replace(lease, validity_ms=self.set_ms)


def make(ctx: LockContext) -> RedisPyLock:
    return RedisPyLock(ctx)


INFO = lock_info(__doc__, name="redis-py", module=__name__, extend=True)
