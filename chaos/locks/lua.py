"""lua — SET NX PX to acquire, Lua compare-and-delete to release: the correct single-node lock.

Seed: 000_8a1b5bedde93f492.txt (``acquire_lock_with_timeout`` / ``release_lock``), also
002_497f2475c0bb3b16.txt and 004_8e2bee48344fb8f7.txt (正确姿势 ``releaseDistributedLock``).

Known flaw: no fencing, so a holder paused (GC, SIGSTOP) past its TTL keeps acting as the
holder after another client has acquired the lock.

The seeds set the TTL in whole seconds (``ex=lock_timeout``); this uses ``PX`` so any TTL in
milliseconds is honoured exactly. A single Redis master is also a single point of failure:
with Sentinel, an acknowledged lock that has not reached a replica is lost in a failover.
"""

from __future__ import annotations

from chaos.locks.contract import LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SetNxPxLock, lock_info


class LuaLock(CompareAndDeleteRelease, SetNxPxLock):
    pass


def make(ctx: LockContext) -> LuaLock:
    return LuaLock(ctx)


INFO = lock_info(__doc__, name="lua", module=__name__)
