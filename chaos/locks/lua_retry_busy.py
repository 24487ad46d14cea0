"""lua-retry-busy — 002's acquire loop: SET NX EX in a busy loop until acquire_timeout.

Seed: 002_497f2475c0bb3b16.txt (``acquire_lock(lock_name, p, acquire_timeout=30,
lock_timeout=10)``: ``r.set(lock_name, identifier, ex=lock_timeout, nx=True)`` retried
``while time.time() < end`` with nothing between tries, ``return False`` when the window runs
out; ``release_lock``: the Lua compare-and-delete; "acquire_timeout 必須大於 lock_timeout").

Known flaw: a waiter spins, sending SET NX back to back for as long as the lock is held (up to
3 × lock_timeout), which costs Redis and the waiter's CPU; and, as with ``lua``, nothing
fences a holder paused past its key's expiry.

As written, scaled to the run's TTL: ``lock_timeout`` is the TTL in whole seconds (``ex``; the
post passes 10), a TTL that is not whole seconds rounded up as ``php-lock`` does, and
``acquire_timeout`` keeps the post's ratio, 3 × ``lock_timeout`` (30 s against 10 s): the
post's rule that the window must exceed the key's life, so a waiter outwaits a crashed
holder's key instead of giving up (``php-lock``'s 2 s against 4 s breaks it). The loop is
``lua-retry-sleep``'s (seed 000's) with this ratio and no sleep; a window that runs out
returns ``GAVE_UP`` (the history's ``gave-up``), the post's ``False``. The lease claims the
wait up to the successful ``SET`` plus the ``EX`` it set.
"""

from __future__ import annotations

from fractions import Fraction

from chaos.locks.contract import LockContext
from chaos.locks.lua_retry_sleep import LuaRetrySleepLock
from chaos.locks.parts import lock_info


class LuaRetryBusyLock(LuaRetrySleepLock):
    acquire_ratio = Fraction(3)  # acquire_timeout=30 against lock_timeout=10

    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)  # lock_timeout: the TTL rounded up to whole seconds
        self.claim_ms = self.lock_timeout * 1000  # the EX it sets, as php-lock claims

    def between_tries(self) -> None:
        """Nothing: the post's loop goes straight back to its SET."""


def make(ctx: LockContext) -> LuaRetryBusyLock:
    return LuaRetryBusyLock(ctx)


INFO = lock_info(__doc__, name="lua-retry-busy", module=__name__)
