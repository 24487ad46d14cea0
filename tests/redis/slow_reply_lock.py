"""``lua`` whose acquire first waits on a list nobody pushes to (``BLPOP``, half a second):
a command whose reply the server holds back, so a network fault that goes on meanwhile meets
a reply on its way (tests/redis/test_network_evidence.py)."""

from __future__ import annotations

from chaos.locks.contract import Lease, LockContext
from chaos.locks.lua import LuaLock

WAIT_S = 0.5


class SlowReplyLock(LuaLock):
    def acquire(self) -> Lease | None:
        self.redis.execute_command("BLPOP", f"{self.key}:never", WAIT_S)  # seconds, a float
        return super().acquire()


def make(ctx: LockContext) -> SlowReplyLock:
    return SlowReplyLock(ctx)
