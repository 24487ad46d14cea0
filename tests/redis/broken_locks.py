"""Locks with the bugs real adapters ship with, for the tests of inconclusive runs and of bugs
in the lock (issue 12): each must be reported, never pass as "this lock survived".

* ``missing_dependency`` — the factory imports a module that is not installed (the import is
  inside the factory, so ``--lock`` loads fine and every client process fails);
* ``acquire_raises`` — acquire() always raises ``RuntimeError("boom")``: never acquired;
* ``release_raises`` — a working SET NX PX lock whose release() always raises ``ValueError``:
  every lease runs out by its TTL instead of being released;
* ``watchdog_dies`` — the bundled ``watchdog`` whose renewal thread dies after its first
  renewal (an exception it does not catch): a renewing lock that stops renewing;
* ``watchdog_dies_on_error`` — the bundled ``watchdog`` whose renewal thread ends for good,
  and silently, at the first renewal that fails (redisson/redisson#3194, "the watchdog stops
  after a connection error", fixed by #3195; python-redis-lock 4.0.1's ``_lock_renewer``,
  ``while not stop.wait(interval): lock.extend(...)`` with no ``try``): a fault that cuts one
  renewal kills the thread, and once the links are back the holder works on under a lease
  nobody renews (the checker must call that a dead watchdog, though the fault excuses the
  lapse itself);
* ``extend_ignores_owner`` — ``lua-extend`` whose extend is a plain ``PEXPIRE`` that never
  checks the token (sbertrang/redis-distlock#2, "shouldn't extend also check the value of the
  key?"; redlock-rb#36): a holder whose lease ran out extends the next holder's key and
  believes it holds the lock again (issue 20: the audit must find it);
* ``extend_sets_anyones_key`` — ``lua-extend`` whose extend is ``SET key token XX PX ttl``:
  "set it if it exists", whoever's it is (a task scheduler's lock extended so): a holder whose
  lease ran out writes its own token over the next holder's key and holds again, and the
  next holder's release then finds a key that is no longer its own (the explanation must name
  that extend, not only the lease that ran out);
* ``renewal_ignores_owner`` — the bundled ``watchdog`` whose renewal is a plain ``PEXPIRE``
  that never checks the token (redisson/redisson#597, "Check that RLock still belongs to
  owner during renewal expiration"): a holder paused past its TTL resumes, and its watchdog
  re-arms the key of the client that took the lock meanwhile — both hold it, both renewed;
* ``reentrant_release_frees_outer`` — the bundled ``reentrant`` hash lock whose release
  deletes the key whatever the count (python-zk/kazoo#291, fixed by #292: "acquire be
  re-entrant but release() remove the lock immediately … the first __exit__ would destroy
  the lock"): the inner release of a nested hold frees the lock the outer hold still has,
  and another client takes it while that outer hold's lease is valid (the checker keeps the
  outer hold until the outermost release: hard, cause ``inner-release``);
* ``racy_semaphore`` — ``lua-semaphore`` whose acquire counts the permits in one round trip
  (prune, ``ZCARD``) and adds its own in another (``ZADD``): two clients that both counted
  room for themselves both add, and the semaphore grants more permits than it has (the
  checker's capacity rule must call it hard); it declares what it grants (``grants``: 3
  shared permits, as ``lua-semaphore``), so ``run`` and ``explore`` treat it as one;
* ``leaky_semaphore`` — ``lua-semaphore`` whose permits never expire (scored ``+inf``, as a
  semaphore without timeouts keeps them): a holder that crashes keeps its permits for ever,
  and the others make do with fewer (the checker must call it leaked permits); declared as
  ``racy_semaphore`` is;
* ``extend_error_unlocks`` — ``redlock`` with the extend several Redlock ports have: a
  compare-and-``PEXPIRE`` on each master in turn, and at the first error the lock is
  "unlocked" (its key deleted on every master) while the caller's lock object keeps its old
  expiry and claims it: another client takes the lock the holder still claims (issue 35: the
  audit's extends must be made to fail);
* ``extend_adds_to_whole_seconds`` — ``lua-extend`` whose extend reads the key's remaining
  life in whole seconds (``PTTL`` divided down, as ``TimeUnit.MILLISECONDS.toSeconds`` or
  Python's ``//`` does) and adds the TTL to it, while the caller's lock object adds the TTL
  to its own expiry: each extend loses what the division dropped (up to a second), and a
  holder that stops extending for less than it believes it has left loses the lock
  (issue 35); it speaks whole seconds (``ttl_granularity_ms=1000``).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import cast

import redis

from chaos.history import now
from chaos.locks import scripts
from chaos.locks.contract import SHARED, Lease, LockContext, grants
from chaos.locks.lua_extend import LuaExtendLock
from chaos.locks.lua_semaphore import DEFAULT_CAPACITY, LuaSemaphore
from chaos.locks.redlock import MIN_NODES, Redlock
from chaos.locks.reentrant import ReentrantLock
from chaos.locks.scripts import Lua
from chaos.locks.watchdog import Watchdog, WatchdogLock


class _SetNx:
    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx

    def acquire(self) -> Lease | None:
        token = self.ctx.new_token()
        if self.ctx.primary.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token=token, validity_ms=self.ctx.ttl_ms)
        return None


class _AcquireRaises(_SetNx):
    def acquire(self) -> Lease | None:
        raise RuntimeError("boom")

    def release(self, lease: Lease) -> bool:
        return True


class _ReleaseRaises(_SetNx):
    def release(self, lease: Lease) -> bool:
        raise ValueError(f"cannot release {lease.token}: not a lease of mine")


def missing_dependency(ctx: LockContext) -> _SetNx:
    importlib.import_module("lockchaos_no_such_module_mmh3")  # as `import mmh3` would
    return _SetNx(ctx)


def acquire_raises(ctx: LockContext) -> _AcquireRaises:
    return _AcquireRaises(ctx)


def release_raises(ctx: LockContext) -> _ReleaseRaises:
    return _ReleaseRaises(ctx)


class _DyingWatchdog(Watchdog):
    """A renewal thread killed by an exception its loop does not catch (not a Redis error),
    after its first renewal: the thread is gone, the lock never notices, the holder works on.
    Real watchdogs died this way (a timer task that threw, an executor shut down)."""

    def renew(self) -> bool:
        if self.renewals >= 1:
            raise RuntimeError("the renewal thread died")
        return super().renew()


class _WatchdogDies(WatchdogLock):
    watchdog_type = _DyingWatchdog


def watchdog_dies(ctx: LockContext) -> _WatchdogDies:
    return _WatchdogDies(ctx)


class _WatchdogDiesOnError(Watchdog):
    """A renewal that raises ends the renewal thread, and nobody is told: the error escapes
    the thread (``threading.excepthook`` prints it), where the bundled watchdog gives the
    lease up and says so (a renewal with validity 0)."""

    def renew(self) -> bool:
        try:
            return super().renew()
        except redis.RedisError as exc:
            raise RuntimeError(f"the renewal task ended: {exc}") from exc


class _WatchdogDiesOnErrorLock(WatchdogLock):
    watchdog_type = _WatchdogDiesOnError


def watchdog_dies_on_error(ctx: LockContext) -> _WatchdogDiesOnErrorLock:
    return _WatchdogDiesOnErrorLock(ctx)


class _ExtendIgnoresOwner(LuaExtendLock):
    def extend(self, lease: Lease) -> Lease | None:
        if self.redis.pexpire(self.key, self.ttl_ms):  # whoever's key it is now
            return replace(lease, validity_ms=self.ttl_ms)
        return None


def extend_ignores_owner(ctx: LockContext) -> _ExtendIgnoresOwner:
    return _ExtendIgnoresOwner(ctx)


class _ExtendSetsAnyonesKey(LuaExtendLock):
    def extend(self, lease: Lease) -> Lease | None:
        if self.redis.set(self.key, lease.token, xx=True, px=self.ttl_ms):  # whoever's it was
            return replace(lease, validity_ms=self.ttl_ms)
        return None


def extend_sets_anyones_key(ctx: LockContext) -> _ExtendSetsAnyonesKey:
    return _ExtendSetsAnyonesKey(ctx)


class _OwnerBlindWatchdog(Watchdog):
    def renew(self) -> bool:
        return bool(self.client.pexpire(self.ctx.lock_name, self.ctx.ttl_ms))  # whoever's


class _RenewalIgnoresOwner(WatchdogLock):
    watchdog_type = _OwnerBlindWatchdog


def renewal_ignores_owner(ctx: LockContext) -> _RenewalIgnoresOwner:
    return _RenewalIgnoresOwner(ctx)


# The reentrant release without its count: ours, so gone — however deep the holder is.
_RELEASE_ALL = Lua("reentrant-release-all", """
    if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
    return redis.call('del', KEYS[1])
""")


class _ReentrantReleaseFreesOuter(ReentrantLock):
    def release(self, lease: Lease) -> bool:
        owner = lease.state if isinstance(lease.state, str) else self.owner
        return _RELEASE_ALL(self.redis, [self.key], [owner]) is not None


def reentrant_release_frees_outer(ctx: LockContext) -> _ReentrantReleaseFreesOuter:
    return _ReentrantReleaseFreesOuter(ctx)


class _RacySemaphore(LuaSemaphore):
    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | None:
        seconds, micros = cast(tuple[int, int], self.redis.time())
        now_ms = seconds * 1000 + micros // 1000
        self.redis.zremrangebyscore(self.key, "-inf", now_ms)
        if cast(int, self.redis.zcard(self.key)) + permits > self.capacity:  # the check …
            return None
        token = self.new_token()
        expires = seconds * 1000 - (-micros // 1000) + self.ttl_ms  # rounded up, as the script
        self.redis.zadd(self.key, {f"{token}#{i}": expires for i in range(1, permits + 1)})
        self.redis.pexpire(self.key, self.ttl_ms)  # … and the add, a round trip later
        return Lease(token=token, validity_ms=self.ttl_ms, state=permits)


@grants(capacity=DEFAULT_CAPACITY, modes=(SHARED,))  # what lua-semaphore declares
def racy_semaphore(ctx: LockContext) -> _RacySemaphore:
    return _RacySemaphore(ctx)


# lua-semaphore's acquire, atomic as it is, but each permit scored +inf: it never expires.
_ACQUIRE_FOR_EVER = Lua("semaphore-acquire-for-ever", """
    local permits = tonumber(ARGV[2])
    if redis.call('ZCARD', KEYS[1]) + permits > tonumber(ARGV[3]) then return 0 end
    for i = 1, permits do redis.call('ZADD', KEYS[1], '+inf', ARGV[1] .. '#' .. i) end
    return 1
""")


class _LeakySemaphore(LuaSemaphore):
    def acquire(self, *, mode: str = SHARED, permits: int = 1) -> Lease | None:
        token = self.new_token()
        if _ACQUIRE_FOR_EVER(self.redis, [self.key], [token, permits, self.capacity]):
            return Lease(token=token, validity_ms=self.ttl_ms, state=permits)
        return None

    def extend(self, lease: Lease) -> Lease | None:
        return lease  # nothing expires


@grants(capacity=DEFAULT_CAPACITY, modes=(SHARED,))
def leaky_semaphore(ctx: LockContext) -> _LeakySemaphore:
    return _LeakySemaphore(ctx)


def _expiring(lease: Lease | None) -> Lease | None:
    """``lease`` with the expiry its lock object keeps (``state``: monotonic ns)."""
    if lease is None or lease.validity_ms is None:
        return lease
    return replace(lease, state=now() + int(lease.validity_ms * 1e6))


class _ExtendErrorUnlocks(Redlock):
    def acquire(self) -> Lease | None:
        return _expiring(super().acquire())

    def extend(self, lease: Lease) -> Lease | None:
        started = now()
        extended = 0
        for node in self.nodes:
            try:
                extended += int(scripts.COMPARE_AND_PEXPIRE(node, [self.key],
                                                            [lease.token, self.ttl_ms]))
            except redis.RedisError:
                self._unlock_all(lease.token)  # "the lock is lost": let go of it everywhere
                return replace(lease, validity_ms=(lease.state - started) / 1e6)  # old expiry
        validity_ms = self.ttl_ms - (now() - started) / 1e6 - self.drift_ms
        if extended >= self.quorum and validity_ms > 0:
            return _expiring(replace(lease, validity_ms=validity_ms))
        return None


@grants(topology="standalone", min_nodes=MIN_NODES)
def extend_error_unlocks(ctx: LockContext) -> _ExtendErrorUnlocks:
    return _ExtendErrorUnlocks(ctx)


_ADD_TO_WHOLE_SECONDS = Lua("compare-and-add-to-whole-seconds", """
    if redis.call("get",KEYS[1]) ~= ARGV[1] then return 0 end
    local left = math.floor(redis.call("pttl",KEYS[1]) / 1000)
    return redis.call("expire",KEYS[1],left + tonumber(ARGV[2]))
""")


class _ExtendAddsToWholeSeconds(LuaExtendLock):
    def acquire(self) -> Lease | None:
        return _expiring(super().acquire())

    def extend(self, lease: Lease) -> Lease | None:
        started = now()
        if not _ADD_TO_WHOLE_SECONDS(self.redis, [self.key], [lease.token, self.ttl_ms // 1000]):
            return None
        expiry = lease.state + self.ttl_ms * 1_000_000  # its own: the old one, plus the TTL
        return replace(lease, validity_ms=(expiry - started) / 1e6, state=expiry)


@grants(ttl_granularity_ms=1000)
def extend_adds_to_whole_seconds(ctx: LockContext) -> _ExtendAddsToWholeSeconds:
    return _ExtendAddsToWholeSeconds(ctx)
