"""The parts the bundled locks are built from: tokens, TTL arguments, the single-key base,
their catalog entry.

Not part of the public contract (``chaos.locks.contract`` is); user locks may use it anyway.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from importlib.metadata import version
from types import ModuleType
from typing import Any

import redis

from chaos.errors import UsageError
from chaos.locks import scripts
from chaos.locks.contract import Lease, LockContext, LockInfo


def whole_seconds(ttl_ms: int) -> bool:
    return ttl_ms % 1000 == 0


def check_ttl_step(lock: str, step: int, ttl_ms: int) -> None:
    """``UsageError`` if lock ``lock``, whose TTLs are multiples of ``step`` ms (1000: whole
    seconds, a library whose API takes seconds), cannot express ``ttl_ms``: rounded, up (a
    longer lease than claimed) or down (to 0: an error, or an ``EXPIRE key 0`` that deletes the
    key just set), it would be judged on a TTL it never set."""
    if ttl_ms % step:
        kept = max(step, ttl_ms // step * step)
        raise UsageError(
            f"lock {lock!r} expresses its TTL in multiples of {step} ms"
            + (" (whole seconds)" if step == 1000 else "")
            + f": --ttl-ms {ttl_ms} cannot be kept; use --ttl-ms {kept}"
            + (f" or {kept + step}" if kept < ttl_ms else "")
        )


def whole_seconds_ttl(ctx: LockContext, lock: str) -> int:
    """The TTL of bundled lock ``lock`` in the whole seconds its library's API takes (its
    entry declares ``ttl_granularity_ms=1000``). A run refuses another TTL up front
    (``chaos.lockspec.LockSpec.check_ttl``); one that reaches the factory by another way is
    refused the same, rather than rounded by the library."""
    check_ttl_step(lock, 1000, ctx.ttl_ms)
    return ctx.ttl_ms // 1000


def released(release: Callable[[], object], not_ours: type[Exception]) -> bool:
    """A library's release: True when ``release`` returned, False when it raised ``not_ours``
    (its way of saying the lease was not its holder's any more); anything else propagates."""
    try:
        release()
    except not_ours:
        return False
    return True


def divert(owner: ModuleType, hook: str, ours: Callable[[Any], bool], logger: str,
           what: str) -> None:
    """Send the uncaught errors ``ours`` picks out to library logger ``logger`` (at ERROR,
    ``what`` and the traceback) instead of ``owner.hook`` — ``threading.excepthook`` (a thread
    the library started) or ``sys.unraisablehook`` (its finalizer) — which print a traceback
    on stderr; everything else still goes to the hook that was there. A library's errors
    outside any call are its output as its logging is: they belong in the client's log (a run
    keeps the root logger's records in its run directory, ``chaos.workload.worker``), not on
    the terminal. Put in front of whatever hook is there unless this logger's diversion
    already is (a test framework swaps its own hooks in and out around each test)."""
    previous = getattr(owner, hook)
    if logger in getattr(previous, "diverts", ()):
        return

    def diverted(args: Any) -> None:
        if ours(args):
            logging.getLogger(logger).error(what, exc_info=args.exc_value)
        else:
            previous(args)

    diverted.diverts = (*getattr(previous, "diverts", ()), logger)  # type: ignore[attr-defined]
    setattr(owner, hook, diverted)


def expiry(ttl_ms: int) -> dict[str, Any]:
    """``SET`` keyword arguments for a TTL: ``ex`` (seconds, as the seeds write it) when the TTL
    is whole seconds, else ``px`` (milliseconds), so the TTL is never silently rounded."""
    return {"ex": ttl_ms // 1000} if whole_seconds(ttl_ms) else {"px": ttl_ms}


class SingleNodeLock:
    """One key on ``ctx.primary`` (the Sentinel master, or node 0 of a standalone topology)."""

    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx
        self.redis: redis.Redis = ctx.primary
        self.key = ctx.lock_name
        self.ttl_ms = ctx.ttl_ms

    def new_token(self) -> str:
        return self.ctx.new_token()

    def set_expiry(self) -> None:
        """The key's expiry in a round trip of its own, as the seeds' split acquires send it:
        ``EXPIRE`` in seconds when the TTL is whole seconds, else ``PEXPIRE`` (``expiry``)."""
        if whole_seconds(self.ttl_ms):
            self.redis.expire(self.key, self.ttl_ms // 1000)
        else:
            self.redis.pexpire(self.key, self.ttl_ms)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client={self.ctx.client_id!r}, key={self.key!r})"


class SetNxPxLock(SingleNodeLock):
    """The ``SET key token NX PX ttl`` family: one atomic round trip to acquire; subclasses
    choose how to release (which is where the seeds' wrong examples differ)."""

    def acquire(self) -> Lease | None:
        token = self.new_token()
        if self.redis.set(self.key, token, nx=True, px=self.ttl_ms):
            return Lease(token=token, validity_ms=self.ttl_ms)
        return None

    def release(self, lease: Lease) -> bool:
        raise NotImplementedError


class CompareAndDeleteRelease:
    """Release with the seeds' Lua compare-and-delete (only our own token is deleted)."""

    redis: redis.Redis
    key: str

    def release(self, lease: Lease) -> bool:
        return bool(scripts.COMPARE_AND_DELETE(self.redis, [self.key], [lease.token]))


def lock_info(doc: str | None, *, name: str, module: str, **flags: Any) -> LockInfo:
    """A bundled lock's catalog entry, read from its module docstring, which must hold

    * a first line ``name — one-line summary``;
    * a paragraph starting ``Seed:`` (the seed file and where in it);
    * a paragraph starting ``Known flaw:`` (one sentence).

    so the docstring is the one place the seed and the flaw are written down (``lockchaos
    list`` shows them as plain text, without the reST quotes). Unless ``flags`` name another
    library, the lock is lockchaos's own, hand-written on redis-py: its library is redis-py, at
    the version installed.
    """
    if not doc:
        raise ValueError(f"{module} has no docstring")
    first = doc.strip().splitlines()[0]
    summary = first.split(" — ", 1)[1] if " — " in first else first
    summary = summary.strip().replace("``", "")
    return LockInfo(
        name=name,
        target=f"{module}:make",
        summary=summary,
        seed=_paragraph(doc, "Seed:", module),
        flaw=_paragraph(doc, "Known flaw:", module),
        **{"library": "redis-py", "version": version("redis"), **flags},
    )


def _paragraph(doc: str, label: str, module: str) -> str:
    match = re.search(rf"^{re.escape(label)}(.*?)(?:\n\s*\n|\Z)", doc, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"{module}'s docstring has no {label!r} paragraph")
    return " ".join(match.group(1).split()).replace("``", "")
