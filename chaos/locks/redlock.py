"""redlock — SET NX PX on N independent masters; granted on a quorum within the validity time.

Seed: 003_ad4e3d3f63ce056d.txt, 基于故障转移的集群安全性问题 (antirez's Redlock, steps 1–5:
per-node timeouts far below the TTL, quorum N/2+1, validity = TTL − time spent, unlock on all
instances when the lock is not obtained).

Known flaw: safety rests on timing assumptions, so a process pause, a network delay, a node's
clock jumping forward or a node restarting without persistence lets two clients each believe
they hold a quorum, and nothing fences the stale one (Kleppmann 2016).

One attempt: the same token is ``SET NX PX`` on every node of ``ctx.nodes`` in order, each with
a socket timeout well below the TTL (TTL/10, within 20–200 ms). A node that errs or does not
answer in time counts as "not acquired" — tolerating that is the algorithm's point, so those
errors do not propagate. Validity = TTL − elapsed − drift, drift = 1% of TTL + 2 ms. Without a
quorum, or with no validity left, the lock is released on every node. ``release`` deletes our
token on every node; it is True when a quorum still held it, False when the nodes that answered
prove that no quorum did, and it raises when unanswered nodes leave that undecided.
"""

from __future__ import annotations

import redis

from chaos.errors import UsageError
from chaos.history import now
from chaos.locks import scripts
from chaos.locks.context import with_socket_timeout
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import lock_info

MIN_NODES = 3
CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_BASE_MS = 2.0


def node_timeout_s(ttl_ms: int) -> float:
    """Per-node socket timeout: a tenth of the TTL, kept within 20–200 ms."""
    return min(max(ttl_ms / 10, 20.0), 200.0) / 1000


class Redlock:
    def __init__(self, ctx: LockContext, *, timeout_s: float | None = None) -> None:
        if ctx.master is not None:
            raise UsageError(
                "redlock needs independent masters, not a Sentinel group: "
                "use the standalone topology (e.g. --topology standalone --nodes 5)"
            )
        if len(ctx.nodes) < MIN_NODES:
            raise UsageError(
                f"redlock needs at least {MIN_NODES} independent masters "
                f"(got {len(ctx.nodes)}): use e.g. --topology standalone --nodes 5"
            )
        self.ctx = ctx
        self.key = ctx.lock_name
        self.ttl_ms = ctx.ttl_ms
        self.timeout_s = timeout_s if timeout_s is not None else node_timeout_s(ctx.ttl_ms)
        self.nodes = [with_socket_timeout(node, self.timeout_s) for node in ctx.nodes]
        self.quorum = len(self.nodes) // 2 + 1
        self.drift_ms = self.ttl_ms * CLOCK_DRIFT_FACTOR + CLOCK_DRIFT_BASE_MS

    def acquire(self) -> Lease | None:
        token = self.ctx.new_token()
        started = now()
        granted = 0
        for node in self.nodes:
            try:
                if node.set(self.key, token, nx=True, px=self.ttl_ms):
                    granted += 1
            except redis.RedisError:
                pass  # unreachable, slow or failing node: not granted here
        elapsed_ms = (now() - started) / 1e6
        validity_ms = self.ttl_ms - elapsed_ms - self.drift_ms
        if granted >= self.quorum and validity_ms > 0:
            return Lease(token=token, validity_ms=validity_ms)
        self._unlock_all(token)  # best effort: the lock is not ours whatever this does
        return None

    def _unlock_all(self, token: str) -> tuple[int, list[redis.RedisError]]:
        deleted, errors = 0, []
        for node in self.nodes:
            try:
                deleted += int(scripts.COMPARE_AND_DELETE(node, [self.key], [token]))
            except redis.RedisError as exc:
                errors.append(exc)
        return deleted, errors

    def release(self, lease: Lease) -> bool:
        deleted, errors = self._unlock_all(lease.token)
        if deleted >= self.quorum:
            return True
        if deleted + len(errors) < self.quorum:
            return False
        raise errors[0]  # the nodes that did not answer decide it: indeterminate

    def __repr__(self) -> str:
        return f"Redlock(client={self.ctx.client_id!r}, nodes={len(self.nodes)}, key={self.key!r})"


def make(ctx: LockContext) -> Redlock:
    return Redlock(ctx)


INFO = lock_info(
    __doc__, name="redlock", module=__name__, topology="standalone", min_nodes=MIN_NODES
)
