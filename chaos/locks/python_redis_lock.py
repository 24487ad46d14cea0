"""python-redis-lock — python-redis-lock 4.0.1's Lock(auto_renewal=True): SET NX EX, renewal thread.

Seed: beyond the seeds: a third-party Python lock library, PyPI ``python-redis-lock`` 4.0.1
(``redis_lock/__init__.py``), wrapped from its public API; its renewal thread is seed
003_ad4e3d3f63ce056d.txt's 看门狗 (watchdog).

Known flaw: its renewal thread ends for good at the first renewal that raises (a timeout, a
reset connection: _lock_renewer has no try/except, __init__.py:272-286), and nothing tells
the holder: the lease lapses while its holder works with its links up again, and another
client takes the lock (a dead watchdog: Redisson #3194's shape; ionelmc/python-redis-lock#85).

Read at 4.0.1 (issue 35's corpus): acquire is ``GET lock:<name>`` (its "already held by this
instance" check) then ``SET lock:<name> <id> NX EX <s>`` (``__init__.py:186-203, 231-240``);
release and extend are Lua compare-and-``DEL`` (plus its signal list) and
compare-and-``EXPIRE`` (``__init__.py:20-42``). ``auto_renewal`` starts a daemon thread at
acquire that calls ``lock.extend()`` every ``expire·2/3`` s (``__init__.py:168, 272-310``).

``Lock(ctx.primary, ctx.lock_name, expire=TTL // 1000, id=token, auto_renewal=True)``, one per
acquire (kept in ``Lease.state``), ``acquire(blocking=False)``: one attempt. Its ``id`` is
ours (a client-prefixed token). ``expire`` is whole seconds (``int(expire)``: declared, TTLs
in whole seconds); the lease claims ``expire`` s from the invocation. ``release()`` raises
``NotAcquired`` when the key is not its id's any more: ``False``. No ``extend``: the harness's
own extends would keep the lease alive and hide a dead renewal thread. Each renewal goes
through the lock's ``extend`` (the library's renewal thread calls it on the instance), which a
subclass times and reports (``ctx.report_renewal``): one that found the lease gone
(``NotAcquired``: a holder paused past its TTL) with validity 0, one that raised anything else
with its error (no answer) — the thread then ends, as the library's does — and its
exception goes to the library's ``redis_lock.refresh.thread`` logger instead of a traceback
on stderr: with the WARNING it logs for every refused acquire, into the client's log in the
run directory.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

from chaos.history import now
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, divert, lock_info, released, whole_seconds_ttl

LIBRARY = {"library": "python-redis-lock", "version": "4.0.1", "extra": "corpus"}
# The renewal threads of this process's locks, whose uncaught exception goes to the library's
# logger: weak, so a finished thread is forgotten.
_RENEWERS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


class PythonRedisLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.expire_s = whole_seconds_ttl(ctx, "python-redis-lock")
        divert(threading, "excepthook", lambda args: args.thread in _RENEWERS,
               "redis_lock.refresh.thread", "a renewal thread died")

    def acquire(self) -> Lease | None:
        token = self.new_token()
        lock = _reporting_lock_type()(self.ctx, self.redis, self.key, expire=self.expire_s,
                                      id=token, auto_renewal=True)
        if not lock.acquire(blocking=False):
            return None
        return Lease(token=token, validity_ms=self.expire_s * 1000, state=lock)

    def release(self, lease: Lease) -> bool:
        from redis_lock import NotAcquired  # the corpus extra: checked at load

        return released(lease.state.release, NotAcquired)  # NotAcquired: not its id's any more


@functools.cache
def _reporting_lock_type() -> type:
    """``redis_lock.Lock`` whose ``extend`` — called by the library's renewal thread only: the
    adapter has no extend — reports each renewal to the harness. Built on first use: the
    library is an optional dependency, and ``lockchaos list`` imports this module without it."""
    from redis_lock import Lock, NotAcquired, NotExpirable

    class ReportingLock(Lock):
        def __init__(self, ctx: LockContext, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.ctx = ctx

        def extend(self, expire: int | None = None) -> None:
            lease = Lease(token=self.id)
            invoked_at = now()
            try:
                super().extend(expire)
            except (NotAcquired, NotExpirable):  # Redis answered: the lease is gone
                self.ctx.report_renewal(lease, 0.0, invoked_at)  # and the thread ends
                raise
            except BaseException as exc:  # no answer (the thread ends, as the library's does)
                self.ctx.report_renewal(lease, 0.0, invoked_at,
                                        error=f"{type(exc).__name__}: {exc}")
                raise
            self.ctx.report_renewal(lease, self._expire * 1000.0, invoked_at)

        def _start_lock_renewer(self) -> None:
            super()._start_lock_renewer()
            _RENEWERS.add(self._lock_renewal_thread)

    return ReportingLock


def make(ctx: LockContext) -> PythonRedisLock:
    return PythonRedisLock(ctx)


INFO = lock_info(__doc__, name="python-redis-lock", module=__name__, renews=True,
                 ttl_granularity_ms=1000, **LIBRARY)
