"""Sound locks whose clients talk in ways the audit's surface must see through (issue 35):
each sends commands that are its client's rather than the lock's, or sends the lock's from
threads of its own, and each was called inconclusive although nothing was wrong with it.

* ``probing`` — ``lua-extend`` whose first extend in each process probes a newer command the
  server rejects (``SET key token IFEQ token PX ttl``, Redis 8.4's compare-and-set; Redis 7
  answers a syntax error) and falls back, for good, to a Lua compare-and-``PEXPIRE``, as a
  JVM lock probing its server's capabilities does: a point before that probe comes once per
  process;
* ``pool_redlock`` — a Redlock whose every command goes out from a thread pool made for each
  call, answering as soon as a quorum did (pottery's ``BailOutExecutor``), its release a
  script sent by ``EVALSHA`` (redis-py's ``Script``: ``NOSCRIPT``, then ``SCRIPT LOAD``);
* ``pubsub_no_expiry`` — a lock with no expiry at all: ``SET NX`` without a TTL; a waiter
  whose ``SET`` failed waits for the holder's ``PUBLISH`` on the lock's channel (subscribed
  once, at its first wait, and kept, as Redisson's waiters share one subscription) and tries
  again once; released by a Lua compare-and-delete that publishes. A holder that crashes
  leaves its key for ever (wedged): a liveness bug, never a safety one;
* ``late_start`` — ``lua`` that grants nothing for ``LATE_S`` from the first acquire any of
  its clients asked (as a lock whose key an earlier run left behind, or whose clients wait
  for their view of the cluster): the warm-up's first run, 2 s long, saw no grant and no
  release.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import redis

from chaos.history import now
from chaos.locks import scripts
from chaos.locks.context import with_socket_timeout
from chaos.locks.contract import Lease, LockContext, grants
from chaos.locks.lua import LuaLock
from chaos.locks.lua_extend import LuaExtendLock
from chaos.locks.parts import SingleNodeLock
from chaos.locks.redlock import CLOCK_DRIFT_BASE_MS, CLOCK_DRIFT_FACTOR, MIN_NODES, node_timeout_s


class ProbingExtendLock(LuaExtendLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.server_has_ifeq: bool | None = None  # not asked yet

    def extend(self, lease: Lease) -> Lease | None:
        if self.server_has_ifeq is None:
            try:
                done = self.redis.execute_command(
                    "SET", self.key, lease.token, "IFEQ", lease.token, "PX", self.ttl_ms)
                self.server_has_ifeq = True
                return replace(lease, validity_ms=self.ttl_ms) if done else None
            except redis.ResponseError:
                self.server_has_ifeq = False  # an older server: the script from now on
        done = scripts.COMPARE_AND_PEXPIRE(self.redis, [self.key], [lease.token, self.ttl_ms])
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def probing(ctx: LockContext) -> ProbingExtendLock:
    return ProbingExtendLock(ctx)


class PoolRedlock:
    """SET NX PX on every master at once from a pool made for the call, granted on a quorum
    within the validity (``chaos.locks.redlock``'s rules); the call returns at the quorum,
    the other nodes' replies come after it."""

    def __init__(self, ctx: LockContext) -> None:
        self.ctx, self.key, self.ttl_ms = ctx, f"redlock:{ctx.lock_name}", ctx.ttl_ms
        self.nodes = [with_socket_timeout(node, node_timeout_s(ctx.ttl_ms)) for node in ctx.nodes]
        self.quorum = len(self.nodes) // 2 + 1
        self.unlock = self.nodes[0].register_script(scripts.COMPARE_AND_DELETE.source)

    def _votes(self, send: Callable[[redis.Redis], bool]) -> tuple[int, int]:
        """(yes, no) once a quorum of either is in, or every node answered; errors are
        neither. ``send(node)`` is one node's command, True for yes."""
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(self.nodes))
        futures = [pool.submit(send, node) for node in self.nodes]
        yes = no = 0
        try:
            for future in concurrent.futures.as_completed(futures, timeout=self.ttl_ms / 1000):
                try:
                    if future.result():
                        yes += 1
                    else:
                        no += 1
                except redis.RedisError:
                    pass
                if yes >= self.quorum or no >= self.quorum:
                    break
        except concurrent.futures.TimeoutError:
            pass
        pool.shutdown(wait=False)  # the others complete after the answer
        return yes, no

    def acquire(self) -> Lease | None:
        token = self.ctx.new_token()
        started = now()
        yes, _ = self._votes(lambda node: bool(
            node.set(self.key, token, nx=True, px=self.ttl_ms)))
        validity_ms = (self.ttl_ms - (now() - started) / 1e6
                       - self.ttl_ms * CLOCK_DRIFT_FACTOR - CLOCK_DRIFT_BASE_MS)
        if yes >= self.quorum and validity_ms > 0:
            return Lease(token=token, validity_ms=validity_ms)
        self._votes(lambda node: bool(self.unlock([self.key], [token], client=node)))
        return None

    def release(self, lease: Lease) -> bool:
        yes, no = self._votes(lambda node: bool(
            self.unlock([self.key], [lease.token], client=node)))
        if yes >= self.quorum:
            return True
        if no >= self.quorum:
            return False
        raise redis.TimeoutError(f"release of {lease.token}: {yes} yes, {no} no, the rest "
                                 "did not answer")


@grants(topology="standalone", min_nodes=MIN_NODES)
def pool_redlock(ctx: LockContext) -> PoolRedlock:
    return PoolRedlock(ctx)


NO_EXPIRY_MS = 86_400_000.0  # what a lease with no expiry claims: a day
WAIT_FOR_RELEASE_S = 0.1  # how long a waiter listens for the holder's release

RELEASE_AND_PUBLISH = scripts.Lua(
    "compare-delete-publish",
    """
    if redis.call("get",KEYS[1]) == ARGV[1] then
        redis.call("del",KEYS[1])
        redis.call("publish",KEYS[2],"released")
        return 1
    end
    return 0
    """,
)


class PubSubLock(SingleNodeLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.channel = f"{self.key}:released"
        self.waiting: redis.client.PubSub | None = None  # subscribed at the first wait, kept

    def acquire(self) -> Lease | None:
        token = self.new_token()
        if self.redis.set(self.key, token, nx=True):
            return Lease(token=token, validity_ms=NO_EXPIRY_MS)
        if self.waiting is None:
            self.waiting = self.redis.pubsub(ignore_subscribe_messages=True)
            self.waiting.subscribe(self.channel)
        deadline = time.monotonic() + WAIT_FOR_RELEASE_S
        while (left := deadline - time.monotonic()) > 0:
            if self.waiting.get_message(timeout=left) is not None:
                break
        if self.redis.set(self.key, token, nx=True):
            return Lease(token=token, validity_ms=NO_EXPIRY_MS)
        return None

    def release(self, lease: Lease) -> bool:
        return bool(RELEASE_AND_PUBLISH(self.redis, [self.key, f"{self.key}:released"],
                                        [lease.token]))


def pubsub_no_expiry(ctx: LockContext) -> PubSubLock:
    return PubSubLock(ctx)


# Where ``late_start`` notes the first acquire of any of its clients (a file, set by the test).
LATE_FROM = "LOCKCHAOS_TEST_LATE_FROM"
LATE_S = 2.5  # longer than the warm-up's first run (WARM_UP_S), shorter than its second


class LateLock(LuaLock):
    def __init__(self, ctx: LockContext) -> None:
        super().__init__(ctx)
        self.first: float | None = None  # when any client of it first asked (wall clock)

    def acquire(self) -> Lease | None:
        if self.first is None:
            mark = Path(os.environ[LATE_FROM])
            with contextlib.suppress(FileExistsError):
                os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            self.first = mark.stat().st_mtime
        return super().acquire() if time.time() - self.first >= LATE_S else None


def late_start(ctx: LockContext) -> LateLock:
    return LateLock(ctx)
