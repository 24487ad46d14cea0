"""reentrant — Redisson-style hash lock: field = owner, value = reentrancy count (003's scripts).

Seed: 003_ad4e3d3f63ce056d.txt, 非setnx方式实现 (the two Lua scripts: ``hincrby``/``pexpire``
returning ``pttl`` when taken; release decrements and deletes at 0).

Known flaw: ownership is per client, not per acquire, and the count dies with the key, so if
the lock expires between two nested acquires the inner release deletes a lock the outer
holder still believes it has.

The owner (the hash field, Redisson's ``uuid:threadId``) is fixed for the life of the client
object, which is what lets a second acquire by the same client re-enter: it succeeds and
increments the count. Every acquire — and every release that leaves the count above 0 —
re-arms the whole hash's TTL. ``Lease.token`` is unique per acquire (``owner#n``) so the history
can tell nested grants apart; ``Lease.state`` is the owner field.
"""

from __future__ import annotations

import itertools

from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info


class ReentrantLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.owner = self.new_token()
        self._grants = itertools.count(1)

    def acquire(self) -> Lease | None:
        taken_pttl = scripts.REENTRANT_ACQUIRE(self.redis, [self.key], [self.ttl_ms, self.owner])
        if taken_pttl is not None:  # nil = ours; a number = someone else's, for that long
            return None
        return Lease(
            token=f"{self.owner}#{next(self._grants)}", validity_ms=self.ttl_ms, state=self.owner
        )

    def release(self, lease: Lease) -> bool:
        owner = lease.state if isinstance(lease.state, str) else self.owner
        # nil = not (or no longer) ours; 0 = count decremented, still held; 1 = deleted.
        return scripts.REENTRANT_RELEASE(self.redis, [self.key], [self.ttl_ms, owner]) is not None


def make(ctx: LockContext) -> ReentrantLock:
    return ReentrantLock(ctx)


INFO = lock_info(__doc__, name="reentrant", module=__name__)
