"""reentrant-watchdog — Redisson's shape: 003's hash lock plus a watchdog renewing every TTL/3.

Seed: 003_ad4e3d3f63ce056d.txt, 非setnx方式实现 (the ``hincrby``/``pexpire`` scripts, reentrancy
count in the hash) together with 其它注意问题's 看门狗 (Redisson: a task every 1/3 of the expiry
resets it while the thread still holds the lock).

Known flaw: a process paused past the TTL (GC, SIGSTOP) pauses its watchdog too, so the hash
expires and is taken while the paused holder still believes it holds it — reentrancy does not
change that.

One watchdog per outermost grant: it starts when the client first takes the hash and stops
when the count the client holds drops to 0 (a re-entry and its release only move the count).
Each renewal is one script: ``pexpire`` the hash if the client's field is still in it, reported
for the innermost grant the client holds (the hold the history is tracking).
"""

from __future__ import annotations

from dataclasses import replace

from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import lock_info
from chaos.locks.reentrant import ReentrantLock
from chaos.locks.watchdog import Watchdog


class HashWatchdog(Watchdog):
    """Renews the hash while this owner's field is in it."""

    owner: str

    def renew(self) -> bool:
        return bool(scripts.REENTRANT_RENEW(
            self.client, [self.ctx.lock_name], [self.ctx.ttl_ms, self.owner]
        ))


class ReentrantWatchdogLock(ReentrantLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self._holding: list[Lease] = []  # what this client holds, outermost first
        self._watchdog: HashWatchdog | None = None

    def acquire(self) -> Lease | None:
        lease = super().acquire()
        if lease is None:
            return None
        self._holding.append(lease)
        if self._watchdog is None:
            self._watchdog = HashWatchdog(self.ctx, self.redis, lease)
            self._watchdog.owner = self.owner
            self._watchdog.start()
        else:
            self._watchdog.lease = lease  # renewals now extend the innermost grant
        return replace(lease, state=self._watchdog)  # release finds the owner on the lock

    def release(self, lease: Lease) -> bool:
        if lease in self._holding:
            self._holding.remove(lease)
        watchdog = self._watchdog
        if watchdog is not None and not self._holding:
            watchdog.stop()
            self._watchdog = None
        elif watchdog is not None:
            watchdog.lease = self._holding[-1]
        return super().release(lease)


def make(ctx: LockContext) -> ReentrantWatchdogLock:
    return ReentrantWatchdogLock(ctx)


INFO = lock_info(__doc__, name="reentrant-watchdog", module=__name__, renews=True)
