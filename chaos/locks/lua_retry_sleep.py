"""lua-retry-sleep — 000's acquire loop: SET EX ceil NX, 1 ms apart, until acquire_timeout.

Seed: 000_8a1b5bedde93f492.txt (``acquire_lock_with_timeout(conn, lock_name,
acquire_timeout=5, lock_timeout=3)``: ``lock_timeout = int(math.ceil(lock_timeout))``,
``conn.set(lockname, identifier, ex=lock_timeout, nx=True)`` retried ``while time.time() <
end`` with ``time.sleep(0.001)`` between tries, ``return False`` when the window runs out;
``release_lock``: the Lua compare-and-delete).

Known flaw: as with ``lua``, nothing fences a holder paused past its key's expiry; its waiting
is sound (the 5 s window outlasts the 3 s key: waiters outwait a crashed holder's key).

As written, scaled to the run's TTL: ``lock_timeout`` is the TTL in seconds rounded up
(``math.ceil``, as ``lua-ceil``: a sub-second TTL becomes ``EX 1``), and ``acquire_timeout``
keeps the post's ratio to it, 5/3 × ``lock_timeout`` (the post's 5 s against 3 s), so the
window outlasts the key at any TTL. A separate lock from ``lua-ceil`` (000's acquire, one
attempt) so that lock's cell stays about the rounding alone and this one's about the loop.
The window is measured with ``time.time()`` as the post does; when it runs out, ``acquire``
returns ``GAVE_UP`` (the history's ``gave-up``), the post's ``False``. The token is
``ctx.new_token()`` (unique per acquire, as the post's ``uuid4``). A grant may come long after
``acquire`` was invoked, so the lease claims the wait up to the successful ``SET`` plus the
configured TTL (never more than the key really lives, since ``ceil`` only rounds up).
"""

from __future__ import annotations

import time
from fractions import Fraction

from chaos.locks.contract import GAVE_UP, GaveUp, Lease, LockContext
from chaos.locks.lua_ceil import LuaCeilLock
from chaos.locks.parts import lock_info


class LuaRetrySleepLock(LuaCeilLock):
    """000's loop; seed 002's (``lua-retry-busy``) is this one with another ratio and no
    sleep, so it subclasses it rather than repeat the loop."""

    # acquire_timeout / lock_timeout, as the post's defaults have it (5 s / 3 s).
    acquire_ratio = Fraction(5, 3)

    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)  # self.lock_timeout = int(math.ceil(ttl in seconds))
        self.acquire_timeout = float(self.acquire_ratio * self.lock_timeout)
        self.claim_ms = self.ttl_ms  # what the caller asked for; Redis keeps it ceil(…) s

    def between_tries(self) -> None:
        time.sleep(0.001)  # the post's time.sleep(0.001)

    def acquire(self) -> Lease | GaveUp:  # type: ignore[override]  # GAVE_UP is falsy
        identifier = self.new_token()
        started = time.monotonic()
        end = time.time() + self.acquire_timeout
        while time.time() < end:
            sent = time.monotonic()
            if self.redis.set(self.key, identifier, ex=self.lock_timeout, nx=True):
                # The key lives from the successful SET on: claim the wait up to it (whole
                # milliseconds, rounded down) on top of the TTL, measured from the invocation.
                waited_ms = int((sent - started) * 1000)
                return Lease(token=identifier, validity_ms=waited_ms + self.claim_ms)
            self.between_tries()
        return GAVE_UP


def make(ctx: LockContext) -> LuaRetrySleepLock:
    return LuaRetrySleepLock(ctx)


INFO = lock_info(__doc__, name="lua-retry-sleep", module=__name__)
