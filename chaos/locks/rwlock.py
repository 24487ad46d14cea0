"""rwlock — a read-write lock in Lua: one hash, a field per holder with its own server expiry.

Seed: none directly — it takes 003_ad4e3d3f63ce056d.txt's hash lock (结合hash数据类型, 参考Redisson)
to readers and writers, as Redisson's RReadWriteLock does (readers share, a writer excludes
everyone), with a lease per holder in one hash: ``w:token`` for the writer, ``r:token`` for
each reader, each valued with its expiry in the server's milliseconds (``TIME`` + TTL),
expired entries pruned inside every script.

Known flaw: its expiry is the server's wall clock, so a clock jump on the master ends every
lease early; a failover loses entries not yet on the replica.

A writer refused while readers hold leaves a waiting mark (``x:client``, valid for a TTL) that
keeps new readers out until it is granted: a stream of overlapping readers would otherwise
starve every writer.

Release deletes only our own entry, and says true only if it had not expired; extend
re-arms only our own entry, only while it is valid. The hash's own TTL is kept at the latest
expiry, so an idle lock leaves no key behind.
"""

from __future__ import annotations

from dataclasses import replace

from chaos.locks import scripts
from chaos.locks.contract import EXCLUSIVE, SHARED, Lease, LockContext
from chaos.locks.parts import SingleNodeLock, lock_info

FIELD_PREFIX = {EXCLUSIVE: "w:", SHARED: "r:"}


class ReadWriteLock(SingleNodeLock):
    def acquire(self, *, mode: str = EXCLUSIVE, permits: int = 1) -> Lease | None:
        if mode not in FIELD_PREFIX or permits != 1:
            raise ValueError(f"a read-write lock grants one shared or exclusive hold, not "
                             f"{permits} {mode}")
        token = self.new_token()
        field = FIELD_PREFIX[mode] + token
        waiting = f"x:{self.ctx.client_id}"
        if scripts.RW_ACQUIRE(self.redis, [self.key], [field, self.ttl_ms, waiting]):
            return Lease(token=token, validity_ms=self.ttl_ms, state=field)
        return None

    def release(self, lease: Lease) -> bool:
        return bool(scripts.RW_RELEASE(self.redis, [self.key], [lease.state]))

    def extend(self, lease: Lease) -> Lease | None:
        done = scripts.RW_EXTEND(self.redis, [self.key], [lease.state, self.ttl_ms])
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def make(ctx: LockContext) -> ReadWriteLock:
    return ReadWriteLock(ctx)


INFO = lock_info(__doc__, name="rwlock", module=__name__, extend=True, capacity=None,
                 modes=(EXCLUSIVE, SHARED))
