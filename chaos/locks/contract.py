"""The lock plugin contract: what lockchaos hands a lock, and what a lock hands back.

This module is public and stable: user lock modules import from it.

A *lock factory* is any callable ``make(ctx: LockContext) -> LockClient``. The harness calls it
once in every client process, then calls the client's methods from that process:

* ``acquire() -> Lease | None`` — one attempt (or the lock's own retry policy). A falsy return
  means "not acquired", and the client will not act as the holder. A lock with its own acquire
  timeout returns ``GAVE_UP`` (falsy) when it ran out: the history records ``gave-up``.
  A lock that is not a mutex (a semaphore, a read-write lock: its ``LockInfo`` declares
  ``capacity``/``modes``) is called ``acquire(mode=MODE, permits=K)`` instead, keyword-only,
  ``MODE`` one of its ``modes`` (``SHARED``, ``EXCLUSIVE``) and ``K`` ≥ 1; the lease's
  ``state`` keeps what its release and extend need (its mode, its permits).
* ``release(lease) -> bool`` — True if the lease was still ours and is now released, False if
  it certainly was not ours any more.
* ``extend(lease) -> Lease | None`` — optional: a new lease whose validity is measured from the
  moment ``extend`` was invoked; falsy if the lease could not be extended. ``REVOKED`` (falsy)
  says more: not extended, and the library gave the lease up (it deleted the key, or told its
  caller the lock is lost); ``INVALIDATED`` (falsy): not extended, and the library's lock object
  for it cannot be used any more (no release can be sent; the key stays until it expires) —
  raise ``LeaseInvalidated`` when that extend's own outcome is unknown. Either ends the hold.
* a release may return ``Kept(validity_ms)`` (truthy): released, but the library keeps the key
  on purpose until then (a task scheduler's minimum hold), so nobody gets the lock before.

An exception from any of them is recorded as an *indeterminate* outcome: the operation may or
may not have happened. So a lock must let ``redis`` exceptions (timeouts, refused connections,
failovers) propagate rather than turn them into ``None``/``False`` — a swallowed error would
claim a certainty the client does not have.

Any *other* exception (``ValueError``, ``TypeError``, ``AttributeError``…) is recorded the
same way, but it is a bug in the lock, not a fault's doing: the verdict counts such errors per
operation and shows the first traceback (``is_lock_bug``). A lock whose own protocol has
undecidable outcomes that are not Redis errors raises ``Indeterminate`` (or a subclass).

A lock that keeps its lease alive by itself (a watchdog thread) reports every successful
background renewal with ``ctx.report_renewal(lease, validity_ms, invoked_at_ns)``, where
``invoked_at_ns`` is ``chaos.history.now()`` taken just before the renewal command was sent;
a renewal that failed, after which it stops renewing, is reported with ``validity_ms = 0``.

A lock whose Redis commands do not go through the context's connections (a driver process,
``chaos.drivers``) calls ``ctx.pause_points.before_command(name)`` right before each command it
sends, so the harness's pause points (``client-pause-at``) can stop it there, and
``ctx.pause_points.failed(op, error)`` when an operation ends in an error, so a network fault
on its links counts even when its library sent nothing on a link it knew was cut, and
``ctx.pause_points.sent_in_background(name)`` after each command it sent outside any operation
(a watchdog's renewal): the only commands a holder at work sends.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import redis
from redis.cluster import RedisCluster

from chaos import history
from chaos.history import EXCLUSIVE, SHARED


@dataclass(frozen=True)
class Lease:
    """One grant of the lock.

    ``token`` identifies this grant (unique per acquire, readable: ``"c1:9f2c…"``).
    ``validity_ms`` is how long the lock *claims* the lease is valid, measured from the moment
    ``acquire``/``extend`` was invoked; ``None`` means "the TTL". ``fence`` is a fencing token
    if the lock issues one (it must grow with every grant). ``state`` is the lock's private
    data (a redis-py ``Lock`` object, a watchdog handle, …) and is never recorded.
    """

    token: str
    validity_ms: float | None = None
    fence: int | None = None
    state: Any = field(default=None, compare=False, repr=False)


class GaveUp:
    """The falsy "not acquired" of a lock with its own acquire timeout (``acquire_timeout`` in
    seeds 000 and 002, the PHP ``baseLock``'s retry window in 004): it retried until its
    deadline and gave up. Return the ``GAVE_UP`` instance instead of ``None``/``False`` and the
    history records the failure as ``gave-up`` — a client denied the lock for that long, which
    the checker reports as lost availability when nobody alive held it."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GAVE_UP"


GAVE_UP = GaveUp()


class Indeterminate(Exception):
    """An outcome the lock cannot decide for a reason of its own (not a Redis error): recorded
    as indeterminate, like a timeout, and not counted as a bug in the lock."""


class LeaseGone:
    """The falsy answer of an ``extend`` after which the lease is beyond this client's reach
    (``REVOKED``, ``INVALIDATED``; the history's ``value: {"lease": name}`` on the extend's
    ``fail``). The harness ends the hold there: it neither works under the lease nor releases
    it (docs/writing-a-lock-adapter.md, "When the library gives a lease up")."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __bool__(self) -> Literal[False]:  # so a type checker narrows ``if lease:`` as well
        return False

    def __repr__(self) -> str:
        return self.name.upper()


# Not extended, and the library gave the lease up: it deleted the key (an unlock after a
# failed extend) or told its caller the lock is lost. The lease claims no validity from the
# extend's invocation on (the key may have gone at any instant after it).
REVOKED = LeaseGone(history.REVOKED)
# Not extended, and the library's lock object for the lease cannot be used any more (an
# extend that consumes or replaces it): no release or extend can be sent for it. Its key stays
# until it expires: the lease keeps the deadline it had.
INVALIDATED = LeaseGone(history.INVALIDATED)


class LeaseInvalidated(Indeterminate):
    """Raised by ``extend``: its outcome is unknown (it may have extended the lease) and, as
    with ``INVALIDATED``, the library's lock object for the lease cannot be used any more."""


@dataclass(frozen=True)
class Kept:
    """A release's answer (truthy: released) when the library keeps the key on purpose until
    its expiry, a minimum hold (ShedLock's ``lockAtLeastFor``): ``validity_ms`` from the
    release's invocation (None: until the lease's deadline then in effect). The checker does
    not count the lock unavailable before that instant (docs/history-format.md)."""

    validity_ms: float | None = None


# What an operation may raise when the network or Redis fails it: the outcome is unknown, and
# nothing is wrong with the lock. ``ConnectionError``/``TimeoutError`` are the built-in ones
# (sockets, pipes to a driver).
INDETERMINATE_ERRORS: tuple[type[BaseException], ...] = (
    redis.RedisError, ConnectionError, TimeoutError, Indeterminate,
)


def is_lock_bug(exc: BaseException) -> bool:
    """Whether ``exc``, raised by acquire/release/extend (or the factory), is a bug in the lock
    rather than a fault's doing (a Redis or connection error, ``Indeterminate``)."""
    return not isinstance(exc, INDETERMINATE_ERRORS)


RenewalReporter = Callable[[Lease, float | None, int], None]
"""``report_renewal(lease, validity_ms, invoked_at_ns)``: a background renewal succeeded."""


def ignore_renewal(lease: Lease, validity_ms: float | None, invoked_at_ns: int) -> None:
    """The default ``report_renewal``: renewals go unrecorded (outside the harness)."""


# What a fault may need from a lock client beyond acquire/release (``Fault.client_needs``). A
# Python lock has every one (its commands go through the harness's connections, its clock is
# CPython's); a driver has those it announces (docs/driver-protocol.md, ``capabilities``).
PAUSE_POINTS = "pause-points"  # it can be stopped, slowed or killed right before a command
# Its process reads the wall clock through libc, where libfaketime can move it (the JVM,
# Node.js, CPython); a pure-Go binary reads it through the vDSO, and its clock stays true.
FAKED_CLOCK = "faked-clock"
# What each means, for the line that refuses a fault to a driver without it.
CLIENT_CAPABILITIES = {
    PAUSE_POINTS: "it announces each command before sending it",
    FAKED_CLOCK: "libfaketime moves its wall clock",
}


class PausePoints(Protocol):
    """The harness's pause-injection points, as a lock that sends its own commands sees them:
    ``armed`` (the points that wait), ``announcing`` (false when neither a point nor a
    network fault's watch waits, after a process's first few operations of each kind: then
    nothing need be announced), ``before_command``,
    called with the command's name in capitals right before it is sent (it may stop, slow or
    kill this process there), ``failed``, called with an operation's name and its error
    when it ends in one (a network fault on every link of the client met it), and
    ``sent_in_background``, called with a command the lock sent on its own, outside any
    operation (a watchdog's renewal), just after it went out (too late to stop it there)."""

    @property
    def armed(self) -> Sequence[object]: ...

    @property
    def announcing(self) -> bool: ...

    def before_command(self, command: str) -> None: ...

    def failed(self, op: str, error: str) -> None: ...

    def sent_in_background(self, command: str) -> None: ...


class _NoPausePoints:
    """The default ``pause_points``: nothing is ever armed (outside the harness)."""

    armed: tuple[()] = ()
    announcing = False

    def before_command(self, command: str) -> None:
        """Nothing to fire."""

    def failed(self, op: str, error: str) -> None:
        """Nothing watches."""

    def sent_in_background(self, command: str) -> None:
        """Nothing watches."""


NO_PAUSE_POINTS: PausePoints = _NoPausePoints()


@dataclass
class LockContext:
    """Everything a lock factory gets, for one client process.

    ``nodes`` are connections to every data node, each routed through this client's own
    proxies (in node order), so a fault can cut one client off one node. ``master`` is a
    Sentinel-aware connection to the current master when the topology has Sentinels (also
    through this client's proxies), a ``RedisCluster`` when the nodes form a Redis
    Cluster (its slot map's addresses translated to this client's proxies), else ``None``.
    Connections do not retry: a lost reply is an exception, never a silent second attempt.
    """

    client_id: str
    lock_name: str
    ttl_ms: int
    nodes: list[redis.Redis]
    # In a Redis Cluster, a ``RedisCluster``: typed as ``redis.Redis`` because it answers the
    # same single-key commands (SET, GET, EVAL with keys, register_script…), which is all a
    # lock on one key sends, so a lock written for one master runs on a cluster unchanged.
    master: redis.Redis | None = None
    report_renewal: RenewalReporter = ignore_renewal
    pause_points: PausePoints = NO_PAUSE_POINTS
    # The run's permits for this lock (``--capacity``, default its ``LockInfo.capacity``): a
    # semaphore is created with this many; None: unbounded (a read-write lock's readers).
    capacity: int | None = 1

    @property
    def primary(self) -> redis.Redis:
        """Where a single-instance lock lives: the Sentinel master, or the cluster (each
        command goes to the master of its key's slot), else node 0."""
        return self.master if self.master is not None else self.nodes[0]

    def new_token(self) -> str:
        """A fresh token, unique per call and readable in a history: ``"c1:9f2c04a1b7e3d5f6"``."""
        return f"{self.client_id}:{secrets.token_hex(8)}"

    def close(self) -> None:
        """Close every connection this context opened (idempotent)."""
        master: object = self.master
        if isinstance(master, RedisCluster):
            master.close()
        plain = [master] if isinstance(master, redis.Redis) else []
        for client in [*self.nodes, *plain]:
            pool = client.connection_pool
            pool.disconnect()
            manager = getattr(pool, "sentinel_manager", None)
            for sentinel in getattr(manager, "sentinels", []):
                sentinel.connection_pool.disconnect()


@runtime_checkable
class LockClient(Protocol):
    """What a lock factory returns. ``extend`` is optional (see ``ExtendableLockClient``)."""

    def acquire(self) -> Lease | None: ...

    def release(self, lease: Lease) -> bool | Kept: ...


@runtime_checkable
class ExtendableLockClient(LockClient, Protocol):
    """A lock client that can also extend a lease it holds."""

    def extend(self, lease: Lease) -> Lease | LeaseGone | None: ...


LockFactory = Callable[[LockContext], LockClient]

# The modes a lock grants (``LockInfo.modes``, the ``mode`` of ``acquire(mode=, permits=)``):
# ``EXCLUSIVE`` and ``SHARED`` (chaos.history's vocabulary: the history records them).
MODES = (EXCLUSIVE, SHARED)
MUTEX_MODES: tuple[str, ...] = (EXCLUSIVE,)


@dataclass(frozen=True)
class LockInfo:
    """One bundled lock, as ``lockchaos list`` shows it: the one declaration of what it can do
    and needs, read by everything that must know (the campaign's topology and work, the
    explorer's steps, ``list``) instead of probing a live client."""

    name: str  # short name: ``--lock lua``
    target: str  # ``module:attr`` of its factory
    summary: str  # one line: what it does
    seed: str  # the seed post it comes from (or what it goes beyond)
    flaw: str  # its known flaw, one sentence
    topology: str = "any"  # "any" or "standalone" (independent masters)
    min_nodes: int = 1
    extend: bool = False  # the client has extend()
    renews: bool = False  # it renews its lease by itself, in the background (a watchdog)
    fencing: bool = False  # leases carry a fencing token
    # Permits held at once at most by default (None: unbounded, a read-write lock's readers),
    # the modes it grants, and whether it claims to grant waiters in the order they asked.
    # The defaults are a mutex's: capacity 1, exclusive only, not fair.
    capacity: int | None = 1
    modes: tuple[str, ...] = MUTEX_MODES
    fair: bool = False
    # The most permits one shared acquire may ask (None: up to the capacity): the book's
    # semaphores take one permit per acquire, so the harness never asks them for two.
    max_permits: int | None = None
    # The TTLs it can express: a multiple of this many ms (1000: whole seconds, a library whose
    # API takes seconds); a run's --ttl-ms must be one, or the lock would hold a TTL other
    # than the one the checker holds it to.
    ttl_granularity_ms: int = 1
    # What it is made with, as ``lockchaos list`` shows it: the language its client runs in,
    # the library that implements the lock (or the client a hand-written lock is written on)
    # and that library's version ("" when nobody declared it: a user's lock).
    language: str = "python"
    library: str = ""
    version: str = ""
    # The optional dependency group that installs ``library`` (``pip install
    # 'lockchaos[EXTRA]'``): then ``library`` is its distribution's name, pinned to
    # ``version``, and the lock is refused in one line when another version (or none) is
    # installed. None: lockchaos's own dependencies run it.
    extra: str | None = None

    @property
    def mutex(self) -> bool:
        """Whether it is a plain mutex, called ``acquire()`` (else ``acquire(mode=, permits=)``)."""
        return is_mutex(self.capacity, self.modes)

    @property
    def needs(self) -> str:
        where = (f"standalone, ≥{self.min_nodes} nodes" if self.topology == "standalone"
                 else "any topology")
        if self.ttl_granularity_ms > 1:
            return f"{where}, TTL a multiple of {self.ttl_granularity_ms} ms"
        return where


def is_mutex(capacity: int | None, modes: Sequence[str]) -> bool:
    """Whether a lock of this ``capacity`` and these ``modes`` is a plain mutex."""
    return capacity == 1 and tuple(modes) == MUTEX_MODES


USER_LOCK = "a user's lock"  # the summary, seed and flaw of what a user's factory declares
Factory = TypeVar("Factory", bound=Callable[..., Any])


def grants(
    *,
    capacity: int | None = 1,
    modes: Sequence[str] = MUTEX_MODES,
    fair: bool = False,
    max_permits: int | None = None,
    topology: str = "any",
    min_nodes: int = 1,
    ttl_granularity_ms: int = 1,
    renews: bool = False,
) -> Callable[[Factory], Factory]:
    """Declare what a user's ``module:attr`` lock grants and needs, as a bundled lock's
    ``INFO`` and a driver's ``describe`` do::

        @grants(capacity=3, modes=(SHARED,))
        def make(ctx: LockContext) -> MySemaphore: ...

        @grants(topology="standalone", min_nodes=3)   # a Redlock: --topology auto gives it 5
        def make_redlock(ctx: LockContext) -> MyRedlock: ...

    ``ttl_granularity_ms``: the TTLs it can express are multiples of it (1000: whole seconds);
    ``renews``: it renews its leases in the background (the checker holds it to that).

    It sets the factory's ``info`` attribute (a ``LockInfo``; ``chaos.locks.info`` reads it
    and checks it, one line for a bad one). On the factory rather than as an ``INFO`` in its
    module because one module may hold several factories (a lock and its broken variants), and
    the declaration must travel with the very callable ``--lock module:attr`` names. What it
    can do (``extend``) is still asked of a client."""

    def declare(factory: Factory) -> Factory:
        factory.info = LockInfo(  # type: ignore[attr-defined]
            name="", target="", summary=USER_LOCK, seed=USER_LOCK, flaw=USER_LOCK,
            capacity=capacity, modes=tuple(modes), fair=fair, max_permits=max_permits,
            topology=topology, min_nodes=min_nodes, ttl_granularity_ms=ttl_granularity_ms,
            renews=renews,
        )
        return factory

    return declare


__all__ = [
    "CLIENT_CAPABILITIES",
    "EXCLUSIVE",
    "FAKED_CLOCK",
    "GAVE_UP",
    "INDETERMINATE_ERRORS",
    "INVALIDATED",
    "MODES",
    "MUTEX_MODES",
    "NO_PAUSE_POINTS",
    "PAUSE_POINTS",
    "REVOKED",
    "SHARED",
    "ExtendableLockClient",
    "GaveUp",
    "Indeterminate",
    "Kept",
    "Lease",
    "LeaseGone",
    "LeaseInvalidated",
    "LockClient",
    "LockContext",
    "LockFactory",
    "LockInfo",
    "PausePoints",
    "RenewalReporter",
    "grants",
    "ignore_renewal",
    "is_lock_bug",
    "is_mutex",
]
