"""``DriverLock``: a driver process as an ordinary lock client (``chaos.locks.contract``).

The factory starts the driver once per client process, sends ``hello`` with this client's
addresses, and turns every reply into what the contract asks for:

* ``ok`` → a ``Lease`` (``release``: True), ``refused`` → None (``release``: False);
* ``error`` with ``definite: true`` → the same as ``refused`` (it certainly did not happen);
* ``error`` with ``definite: false`` → ``DriverError``: the harness records an indeterminate
  outcome, exactly as for a Python lock that raises;
* an extend's ``revoked`` → ``REVOKED``, its ``invalidated`` → ``INVALIDATED`` (or, not
  ``definite``, ``LeaseInvalidated`` raised), a release's ``kept`` → ``Kept``: what the
  contract says of a lease the library gave up, can no longer reach, or keeps on purpose;
* an unasked ``renewed`` line → ``ctx.report_renewal`` (a watchdog's renewal);
* with the ``pause-points`` capability, while the harness has a pause point or a network
  fault's watch armed (``ctx.pause_points``), every command the driver announces passes by
  it before ``go``, and every ``error`` answer is passed to it too (``failed``): a library
  that knows its link is cut fails without sending anything to announce, and a network fault
  on every link of the client is what its operation met;
* an unasked ``sent`` line (a command the library sent on its own: a watchdog's renewal) →
  ``ctx.pause_points.sent_in_background``: a network fault met a holder at work by it.

A driver that dies, hangs or writes garbage makes the operation raise ``DriverBroken`` with
one line saying so; operations on a dead driver keep raising (slowly: no hot loop).
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import redis

from chaos.drivers.process import DriverBroken, DriverProcess
from chaos.drivers.protocol import (
    ANSWERS_ONLY,
    EXTEND,
    Acquire,
    Address,
    Answer,
    Before,
    Error,
    Extend,
    Go,
    Hello,
    HelloReply,
    Invalidated,
    Kept,
    Ok,
    Release,
    Renewed,
    Request,
    Revoked,
    wire_text,
)
from chaos.errors import UsageError
from chaos.locks import contract
from chaos.locks.contract import PAUSE_POINTS, Indeterminate, Lease, LeaseGone, LockContext

HELLO_TIMEOUT_S = 30.0  # a JVM starting next to four others on two busy cores
OP_TIMEOUT_FLOOR_S = 3.0
DEAD_DRIVER_BACKOFF_S = 0.05
MAX_ANNOUNCED = 1000  # commands one operation may announce: bounds a runaway driver


class DriverError(Indeterminate):
    """An operation whose outcome the driver could not decide (``definite: false``)."""


def _address(client: redis.Redis) -> Address:
    kwargs = client.connection_pool.connection_kwargs
    return Address(host=kwargs.get("host", "127.0.0.1"), port=int(kwargs.get("port", 6379)))


def hello(ctx: LockContext) -> Hello:
    """The ``hello`` for ``ctx``: every node through this client's proxies, and with Sentinel
    the Sentinels, the master name and the route from reported addresses to our proxies."""
    first = ctx.nodes[0].connection_pool.connection_kwargs if ctx.nodes else {}
    timeout = first.get("socket_timeout") or 0.5
    message = Hello(
        client_id=ctx.client_id,
        lock_name=ctx.lock_name,
        ttl_ms=ctx.ttl_ms,
        nodes=[_address(node) for node in ctx.nodes],
        socket_timeout_ms=round(float(timeout) * 1000),
        password=first.get("password"),
    )
    if ctx.capacity != 1:
        message.capacity = ctx.capacity
    if ctx.master is not None:
        pool = ctx.master.connection_pool
        manager = getattr(pool, "sentinel_manager", None)
        message.sentinels = [_address(s) for s in getattr(manager, "sentinels", [])]
        message.master_name = getattr(pool, "service_name", None)
        route = getattr(manager, "route", {})
        message.route = {k: Address(host=h, port=p) for k, (h, p) in route.items()}
    return message


@dataclass
class DriverLock:
    """A ``LockClient`` backed by a driver process (see the module docstring)."""

    ctx: LockContext
    argv: list[str]
    label: str
    env: dict[str, str] = field(default_factory=dict)
    hello_timeout_s: float = HELLO_TIMEOUT_S

    def __post_init__(self) -> None:
        self.driver = DriverProcess(self.argv, label=self.label, env=self.env)
        self.driver.on_renewed = self._renewed
        self.driver.on_sent = lambda message: self.ctx.pause_points.sent_in_background(
            message.command.upper())
        weakref.finalize(self, self.driver.close)  # a lock dropped without close() stops it
        self._next_id = 0
        self.op_timeout_s = max(OP_TIMEOUT_FLOOR_S, 4 * self.ctx.ttl_ms / 1000)
        try:
            self.info = self._hello()
        except BaseException:
            self.driver.close()
            raise
        self.capabilities = frozenset(self.info.capabilities)

    def _hello(self) -> HelloReply:
        try:
            self.driver.send(hello(self.ctx))
            reply = self.driver.receive(self.hello_timeout_s)
        except DriverBroken as exc:
            raise UsageError(str(exc)) from None
        if reply is None:
            raise UsageError(
                f"driver {self.label} did not answer hello within {self.hello_timeout_s:.0f} s"
            )
        if not isinstance(reply, HelloReply) or not reply.ok:
            why = isinstance(reply, HelloReply) and reply.message
            raise UsageError(
                f"driver {self.label} refused to start: "
                + (why or f"answered hello with {wire_text(reply)}")
            )
        return reply

    # -- requests ---------------------------------------------------------------------------

    def _request(self, request: type[Request], **fields: Any) -> Answer:
        """Send one request (``fields`` but its id), pass each command it announces by the
        pause points, and return its answer."""
        if self.driver.broken is not None:
            time.sleep(DEAD_DRIVER_BACKOFF_S)
            raise DriverBroken(self.driver.describe_failure())
        self._next_id += 1
        rid = self._next_id
        points = self.ctx.pause_points
        announce = PAUSE_POINTS in self.capabilities and points.announcing
        message = request(id=rid, announce=announce, **fields)
        op = str(message.__struct_config__.tag)  # acquire, release or extend
        self.driver.send(message)
        for _ in range(MAX_ANNOUNCED):
            reply = self.driver.receive(self.op_timeout_s)
            if reply is None:
                raise DriverBroken(
                    f"driver {self.label} did not answer {op} #{rid} within "
                    f"{self.op_timeout_s:.1f} s"
                )
            if not isinstance(reply, Before | Answer) or reply.id != rid:
                continue  # a late answer to a request we already gave up on
            if isinstance(reply, Before):
                points.before_command(reply.command.upper())
                self.driver.send(Go(id=rid))
                continue
            only = ANSWERS_ONLY.get(type(reply))
            if only is not None and only != op:
                raise DriverBroken(f"driver {self.label} answered {op} #{rid} with "
                                   f"{wire_text(reply)}, which answers {only} only")
            if isinstance(reply, Error) or (isinstance(reply, Invalidated)
                                            and not reply.definite):
                points.failed(op, reply.message or "an error")
            return reply
        raise DriverBroken(f"driver {self.label} announced too many commands during {op}")

    def _lease(self, reply: Ok, fallback_token: str | None = None) -> Lease:
        token = reply.token or fallback_token
        if not token:
            raise DriverBroken(f"driver {self.label} answered ok without a token")
        return Lease(token=token, validity_ms=reply.validity_ms, fence=reply.fence)

    @staticmethod
    def _definite(reply: Answer) -> None:
        """Return for ``refused`` and a definite ``error``; raise for an indeterminate one.
        (The answers only some requests take were checked by ``_request``.)"""
        if isinstance(reply, Error) and not reply.definite:
            raise DriverError(reply.message or "indeterminate error")

    def acquire(self, *, mode: str | None = None, permits: int | None = None) -> Lease | None:
        """One acquire; a lock that is not a mutex is asked a ``mode`` and ``permits`` (sent
        only when given: a mutex's acquire line stays as it was)."""
        reply = self._request(Acquire, mode=mode, permits=permits)
        if isinstance(reply, Ok):
            return self._lease(reply)
        self._definite(reply)
        return None

    def release(self, lease: Lease) -> bool | contract.Kept:
        reply = self._request(Release, token=lease.token)
        if isinstance(reply, Ok):
            return True
        if isinstance(reply, Kept):
            return contract.Kept(reply.validity_ms)
        self._definite(reply)
        return False

    def _renewed(self, message: Renewed, sent_ns: int) -> None:
        self.ctx.report_renewal(Lease(token=message.token), message.validity_ms, sent_ns,
                                error=message.error)

    def close(self) -> None:
        self.driver.close()

    def __repr__(self) -> str:
        return f"DriverLock({self.label!r}, client={self.ctx.client_id!r})"


class ExtendableDriverLock(DriverLock):
    """A driver that announced the ``extend`` capability."""

    def extend(self, lease: Lease) -> Lease | LeaseGone | None:
        reply = self._request(Extend, token=lease.token)
        if isinstance(reply, Ok):
            return self._lease(reply, lease.token)
        if isinstance(reply, Revoked):
            return contract.REVOKED
        if isinstance(reply, Invalidated):
            if not reply.definite:
                raise contract.LeaseInvalidated(reply.message or "the lease's lock object was "
                                                "invalidated by an extend of unknown outcome")
            return contract.INVALIDATED
        self._definite(reply)
        return None


def start(ctx: LockContext, argv: list[str], label: str) -> DriverLock:
    """Start the driver and say hello; an ``ExtendableDriverLock`` if it can extend."""
    lock = DriverLock(ctx, argv, label)
    if EXTEND in lock.capabilities:
        lock.__class__ = ExtendableDriverLock
    return lock


__all__ = [
    "DriverBroken",
    "DriverError",
    "DriverLock",
    "ExtendableDriverLock",
    "hello",
    "start",
]
