"""lua-loaded-once — lua's scripts loaded once (SCRIPT LOAD) and then only ever run by EVALSHA.

Seed: beyond 000_8a1b5bedde93f492.txt, 002_497f2475c0bb3b16.txt and 004_8e2bee48344fb8f7.txt
(their SET NX + Lua compare-and-delete, ``lua``), written as lock libraries often write it, to
spare the script's text on every call: load each script once, then send only its SHA1
(redlock-rb #148 and resque-scheduler #298 report the bug; ``script-flush`` reproduces it).

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
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info


class LoadedOnceLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.loaded: dict[str, str] = {}  # a script's name → its SHA1, loaded at its first use

    def sha(self, script: scripts.Lua) -> str:
        """The script's SHA1, from the ``SCRIPT LOAD`` of its first use — and never again."""
        if script.name not in self.loaded:
            self.loaded[script.name] = str(self.redis.script_load(script.source))
        return self.loaded[script.name]

    def acquire(self) -> Lease | None:
        token = self.new_token()
        sha = self.sha(scripts.SET_NX_PX)
        try:
            granted = self.redis.evalsha(sha, 1, self.key, token, str(self.ttl_ms))
        except NoScriptError:
            return None  # an error reply: not granted
        return Lease(token=token, validity_ms=self.ttl_ms) if granted else None

    def release(self, lease: Lease) -> bool:
        sha = self.sha(scripts.COMPARE_AND_DELETE)
        try:
            return bool(self.redis.evalsha(sha, 1, self.key, lease.token))
        except NoScriptError:
            return False  # an error reply: not released (the key goes by its TTL)


def make(ctx: LockContext) -> LoadedOnceLock:
    return LoadedOnceLock(ctx)


INFO = lock_info(__doc__, name="lua-loaded-once", module=__name__)
