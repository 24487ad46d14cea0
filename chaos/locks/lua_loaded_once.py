"""lua-loaded-once — lua's scripts loaded once (SCRIPT LOAD) and then only ever run by EVALSHA.

Seed: none directly — it is ``lua`` (000, 002, 004's SET NX + Lua compare-and-delete) written
as lock libraries often write it, to spare the script's text on every call: load the scripts
when the client starts, then send their SHA1 (redlock-rb #148 and resque-scheduler #298
report the bug; the ``script-flush`` fault reproduces it).

Known flaw: a server that forgets its scripts (a restart, a failover to a replica, ``SCRIPT
FLUSH``) answers every EVALSHA with NOSCRIPT, and a lock that never loads them again can
neither acquire nor release until its clients restart: the lock is free, and nobody gets it.

Both operations are scripts here, so both stop: the acquire (a ``SET NX PX`` in Lua) counts
an error reply as "not granted", as Redlock implementations count a node that answers an
error, and the release as "not released" — the key then goes by its TTL. A correct lock
answers NOSCRIPT by loading the script again and retrying (redis-py's ``Script`` does it:
the ``redis-py`` lock passes the same fault).
"""

from __future__ import annotations

from redis.exceptions import NoScriptError

from chaos.locks import scripts
from chaos.locks.base import SingleNodeLock, lock_info
from chaos.locks.contract import Lease, LockContext


class LoadedOnceLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.acquire_sha = str(self.redis.script_load(scripts.SET_NX_PX.source))
        self.release_sha = str(self.redis.script_load(scripts.COMPARE_AND_DELETE.source))

    def acquire(self) -> Lease | None:
        token = self.new_token()
        try:
            granted = self.redis.evalsha(self.acquire_sha, 1, self.key, token, str(self.ttl_ms))
        except NoScriptError:
            return None  # an error reply: not granted
        return Lease(token=token, validity_ms=self.ttl_ms) if granted else None

    def release(self, lease: Lease) -> bool:
        try:
            return bool(self.redis.evalsha(self.release_sha, 1, self.key, lease.token))
        except NoScriptError:
            return False  # an error reply: not released (the key goes by its TTL)


def make(ctx: LockContext) -> LoadedOnceLock:
    return LoadedOnceLock(ctx)


INFO = lock_info(__doc__, name="lua-loaded-once", module=__name__)
