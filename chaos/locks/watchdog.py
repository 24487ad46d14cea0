"""watchdog — ``lua`` plus a renewal thread that re-arms the TTL every TTL/3 (Redisson watchdog).

Seed: 003_ad4e3d3f63ce056d.txt, 其它注意问题 (看门狗: a delayed task every 1/3 of the expiry
checks the thread still holds the lock and resets the expiry to the full 30 s).

Known flaw: a process paused past the TTL (stop-the-world GC, SIGSTOP) pauses its own
watchdog too, so the lock expires and is taken while the paused holder still believes it
holds it.

The renewal thread lives in the client's process, so a SIGSTOP stops renewals too — exactly
like a GC pause. Each renewal is a Lua compare-and-PEXPIRE to the full TTL, sent from the thread
and reported with ``ctx.report_renewal(lease, ttl_ms, invoked_at_ns)``. The thread stops on
release, or at the first renewal that finds the token gone — reported as a renewal with
validity 0: it gave the lease up — and it renews at most ``MAX_RENEWALS`` times. A renewal that
raises (a cut link, a timeout) is reported with its error, and the next one goes out a period
later, as Redisson's renewal task does since redisson/redisson#3195: the watchdog that stopped
for good at the first error (#3194) let its holder's lease lapse once the links were back.
"""

from __future__ import annotations

import threading

import redis

from chaos.history import now
from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SetNxPxLock, lock_info

MAX_RENEWALS = 1_000_000  # a bound, not a policy: a million TTL/3 periods


class Watchdog:
    """Renews one lease every ``ttl/3`` until stopped or a renewal finds the lease gone."""

    def __init__(self, ctx: LockContext, client: redis.Redis, lease: Lease) -> None:
        self.ctx = ctx
        self.client = client
        self.lease = lease
        self.interval_s = ctx.ttl_ms / 3 / 1000
        self.renewals = 0
        self.failure: str | None = None
        self._stopped = threading.Event()
        self._mutex = threading.Lock()  # release never overlaps a renewal in flight
        self._thread = threading.Thread(
            target=self._run, name=f"watchdog {lease.token}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        for _ in range(MAX_RENEWALS):
            if self._stopped.wait(self.interval_s):
                return
            with self._mutex:
                if self._stopped.is_set():
                    return
                invoked_at = now()
                try:
                    renewed = self.renew()
                except redis.RedisError as exc:  # no answer: the lease may still be there
                    self.ctx.report_renewal(self.lease, 0.0, invoked_at,
                                            error=f"{type(exc).__name__}: {exc}")
                    continue
                if not renewed:
                    self._give_up("the lock is no longer ours", invoked_at)
                    return
                self.renewals += 1
                self.ctx.report_renewal(self.lease, float(self.ctx.ttl_ms), invoked_at)

    def _give_up(self, failure: str, invoked_at: int) -> None:
        """Stop renewing, and say so: a renewal with validity 0 (the history's ``renew``
        ``fail``) shows the watchdog tried at ``invoked_at`` and found the lease gone — if it
        lapsed, it lapsed on the way to Redis, not for want of a renewal."""
        self.failure = failure
        self._stopped.set()
        self.ctx.report_renewal(self.lease, 0.0, invoked_at)

    def renew(self) -> bool:
        """One renewal: re-arm the full TTL if the key still holds our token."""
        return bool(scripts.COMPARE_AND_PEXPIRE(
            self.client, [self.ctx.lock_name], [self.lease.token, self.ctx.ttl_ms]
        ))

    def stop(self) -> None:
        """Stop renewing; waits for a renewal in flight to finish (and be reported) first."""
        with self._mutex:
            self._stopped.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)


class WatchdogLock(CompareAndDeleteRelease, SetNxPxLock):
    watchdog_type = Watchdog  # what renews each lease (tests give it a watchdog that dies)

    def acquire(self) -> Lease | None:
        lease = super().acquire()
        if lease is None:
            return None
        watchdog = self.watchdog_type(self.ctx, self.redis, lease)
        lease = Lease(token=lease.token, validity_ms=lease.validity_ms, state=watchdog)
        watchdog.lease = lease
        watchdog.start()
        return lease

    def release(self, lease: Lease) -> bool:
        if isinstance(lease.state, Watchdog):
            lease.state.stop()
        return super().release(lease)


def make(ctx: LockContext) -> WatchdogLock:
    return WatchdogLock(ctx)


INFO = lock_info(__doc__, name="watchdog", module=__name__, renews=True)
