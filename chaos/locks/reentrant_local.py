"""reentrant-local — 003's ThreadLocal re-entry: a per-process count in front of the ``lua`` lock.

Seed: 003_ad4e3d3f63ce056d.txt, 可重入性 ("配合线程本地变量存储，Java中可采用ThreadLocal，将当前
线程已获取的锁（key）和重入次数维护在本地线程变量中，加锁前先在本地线程变量中检查当前线程是否已获取到
该锁，若是，则直接加锁成功并累加重入次数即可").

Known flaw: a re-entry never touches Redis, so it neither re-arms the TTL nor notices that
the lock has expired: a holder re-enters a lock it may no longer have, and only the outermost
release deletes the key.

The string lock underneath is ``lua`` (SET NX PX, compare-and-delete). The count and the
outer lease live in a ``threading.local`` (each client is one process with one working
thread, so this is the post's per-thread map). A nested grant reports the validity the outer
lease has left, never a fresh TTL: that is all the post's counter can promise.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SetNxPxLock, lock_info


@dataclass
class _Held:
    lease: Lease  # the outermost grant: its token is what Redis holds
    count: int
    expires_at: float  # monotonic seconds: the outer lease's claimed end


class ReentrantLocalLock(CompareAndDeleteRelease, SetNxPxLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self._local = threading.local()

    def _held(self) -> _Held | None:
        held: _Held | None = getattr(self._local, "held", None)
        return held

    def acquire(self) -> Lease | None:
        held = self._held()
        if held is not None:  # 若是，则直接加锁成功并累加重入次数
            held.count += 1
            left_ms = max(0.0, (held.expires_at - time.monotonic()) * 1000)
            return Lease(token=held.lease.token, validity_ms=left_ms)
        invoked = time.monotonic()
        lease = super().acquire()
        if lease is not None:
            self._local.held = _Held(lease, 1, invoked + self.ttl_ms / 1000)
        return lease

    def release(self, lease: Lease) -> bool:
        held = self._held()
        if held is None:
            return super().release(lease)
        if held.count > 1:
            held.count -= 1
            return True
        self._local.held = None
        return super().release(held.lease)


def make(ctx: LockContext) -> ReentrantLocalLock:
    return ReentrantLocalLock(ctx)


INFO = lock_info(__doc__, name="reentrant-local", module=__name__)
