"""sherlock — sherlock 0.4.1's RedisLock(expire=TTL): Lua SETNX + EXPIRE, compare-and-delete, renew.

Seed: beyond the seeds: a third-party Python lock library, PyPI ``sherlock`` 0.4.1
(``sherlock/lock.py``), wrapped from its public API as its README shows it.

Known flaw: no fencing: a holder paused past its expiry keeps acting as the holder after
another client took the lock (soft, then lost writes: the known limit of a lease), and its
TTLs are whole seconds passed raw to EXPIRE, so a fractional one wedges the lock for good
(EXPIRE rejects it after SETNX ran: a key with no expiry, ``lock.py:414-420``).

Read at 0.4.1 (issue 35's corpus): the acquire script ``SETNX`` and, when ``ARGV[2] ~= -1``,
``EXPIRE key ARGV[2]`` (``lock.py:414-420``); release ``GET``-compare-``DEL`` and renew
``GET``-compare-``EXPIRE`` in Lua (``lock.py:422-442``). Sound up to the known limit.

``RedisLock(ctx.lock_name, client=ctx.primary, expire=TTL // 1000)``, one per acquire (kept in
``Lease.state``), ``acquire(blocking=False)``: one attempt. Its owner is a ``uuid4`` the caller
cannot choose (``lock.py:483``): the lease's token is that value, read back from the lock
object, so the harness can find whose key it is. ``expire`` must be an ``int`` (declared:
TTLs in whole seconds); the lease claims ``expire`` s from the invocation, what ``EXPIRE``
grants after it. ``release()`` raises ``LockException`` when the key is not its owner's any
more (``lock.py:493-503``): ``False``; ``renew()`` returns whether the key was still its own.
Redis errors propagate (indeterminate). The first ``EVALSHA`` on a server is rejected
(``NOSCRIPT``) and followed by ``SCRIPT LOAD`` (redis-py's ``Script``): one-time loading. A
lock object still owning its key when it is collected (its release raised) releases again
from the garbage collector (``lock.py:229-233``): one more ``EVALSHA``, outside any
operation; the traceback of one that fails goes to a ``sherlock`` logger (the client's log
in the run directory), not the terminal.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, divert, lock_info, released, whole_seconds_ttl

LIBRARY = {"library": "sherlock", "version": "0.4.1", "extra": "corpus"}
NO_EXPIRY_MS = 86_400_000.0  # a day: what a lease with no expiry claims, longer than any run


class SherlockLock(SingleNodeLock):
    """``sherlock.RedisLock`` with ``expire_s`` (None: the library's "no expiry")."""

    def __init__(self, ctx: LockContext, expire_s: int | None) -> None:
        from sherlock import RedisLock  # the corpus extra: checked when the lock was loaded

        super().__init__(ctx)
        self.expire_s = expire_s
        self.validity_ms = NO_EXPIRY_MS if expire_s is None else expire_s * 1000
        self.lock_type = RedisLock
        quiet_finalizer(RedisLock)

    def acquire(self) -> Lease | None:
        lock = self.lock_type(self.key, client=self.redis, expire=self.expire_s)
        if not lock.acquire(blocking=False):
            return None
        return Lease(token=lock._owner, validity_ms=self.validity_ms, state=lock)

    def release(self, lease: Lease) -> bool:
        from sherlock import LockException

        return released(lease.state.release, LockException)  # not its owner's any more


class RenewableSherlockLock(SherlockLock):
    """With an expiry, ``renew()`` is an extend: the key's expiry set to ``expire`` again."""

    def extend(self, lease: Lease) -> Lease | None:
        if not lease.state.renew():
            return None
        return replace(lease, validity_ms=self.validity_ms)


def quiet_finalizer(lock_type: Any) -> None:
    """A lock object collected while it still has an owner (its release raised, or found the
    key gone) releases again from the garbage collector (``BaseLock.__del__``,
    ``lock.py:229-233``), during whatever runs then; when that release raises, Python prints
    "Exception ignored in" and a traceback on stderr. Those go to a ``sherlock`` logger."""
    finalizer = lock_type.__del__
    divert(sys, "unraisablehook", lambda args: args.object is finalizer, "sherlock",
           "a lock's release from the garbage collector failed")


def make(ctx: LockContext) -> RenewableSherlockLock:
    return RenewableSherlockLock(ctx, whole_seconds_ttl(ctx, "sherlock"))


INFO = lock_info(__doc__, name="sherlock", module=__name__, extend=True,
                 ttl_granularity_ms=1000, **LIBRARY)
