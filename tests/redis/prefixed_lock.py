"""A Redlock as third-party libraries write it: its own random value (a bare UUID, no client
prefix) under its own key (``redlock:<name>``). Faults aimed at "the nodes the holder counted
on" must find them all the same (tests/redis/test_holder_nodes.py)."""

from __future__ import annotations

import uuid

from chaos.locks.contract import Lease, LockContext
from chaos.locks.redlock import Redlock


class PrefixedRedlock(Redlock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.key = f"redlock:{ctx.lock_name}"

    def acquire(self) -> Lease | None:
        self.ctx.new_token = lambda: str(uuid.uuid4())  # type: ignore[method-assign]
        return super().acquire()


def make(ctx: LockContext) -> PrefixedRedlock:
    return PrefixedRedlock(ctx)


SQUATTED = (3, 4)  # nodes on which another application holds the key for good


def make_squatted(ctx: LockContext) -> PrefixedRedlock:
    """The same lock, with its key held for good on nodes 3 and 4 by someone else: a holder
    rests on nodes 0–2 only (a quorum of 3 of 5), and only those are "the holder's"."""
    lock = PrefixedRedlock(ctx)
    for i in SQUATTED:
        ctx.nodes[i].set(lock.key, "another-application", nx=True)
    return lock
