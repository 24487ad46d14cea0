"""pottery-redlock — pottery 3.0.1's Redlock on N masters: SET NX PX from a thread pool, quorum.

Seed: beyond the seeds: a third-party Python Redlock, PyPI ``pottery`` 3.0.1
(``pottery/redlock.py``), wrapped from its public API; its algorithm is seed
003_ad4e3d3f63ce056d.txt's Redlock.

Known flaw: safety rests on timing, as every Redlock's: a process pause, a node restarting
empty or a node's clock jumping lets two clients each believe they hold a quorum (Kleppmann
2016), and nothing fences the stale one; extends are capped at 3 per acquire
(num_extensions, redlock.py:232, 523-524; brainix/pottery#692, #693).

Read at 3.0.1 (issue 35's corpus): ``SET redlock:<key> <uuid> PX ttl NX`` on every master at
once, granted on a quorum whose validity ``TTL − (1% TTL + 2 ms) − elapsed`` is left
(``redlock.py:278-285, 318-353``), else released on all; extend and release are Lua
compare-and-``PEXPIRE``/``DEL`` on a quorum (``redlock.py:128-148, 503-599``). Every command
goes out from a ``ThreadPoolExecutor`` thread, and each call returns as soon as a quorum
answered (``BailOutExecutor``, ``executor.py:30-63``): the other nodes' commands complete
after it returned. Sound under the default faults, up to the known limit.

``Redlock(key=ctx.lock_name, masters=…, auto_release_time=TTL s, raise_on_redis_errors=True)``,
one per acquire (kept in ``Lease.state``), ``acquire(blocking=False)``: one attempt. The
masters are the context's connections to every node (the harness's connection class sees
every command, whichever thread sends it), each with Redlock's per-node socket timeout
(``chaos.locks.redlock.node_timeout_s``). Its value is a ``uuid4`` the caller cannot choose
(``redlock.py:322``): the lease's token is that value, read back from the lock object. The
library returns no validity: the lease claims its own rule from the invocation, the PX set
less the drift. ``raise_on_redis_errors=True`` is the library's way of telling a caller that
errors on a majority left an operation undecided (``QuorumIsImpossible``): indeterminate. An
extend or release it refuses (``ExtendUnlockedLock``/``ReleaseUnlockedLock``) is ``None`` /
``False`` when no node erred, and indeterminate when erring nodes may have decided it;
``TooManyExtensions`` (nothing sent) is ``None``. Below a quorum of errors, its acquire
answers ``False`` for a refusal and for a minority's errors alike (it logs them, through its
own logger, silent unless the application configures logging).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from chaos.errors import UsageError
from chaos.locks.context import with_socket_timeout
from chaos.locks.contract import Indeterminate, Lease, LockContext
from chaos.locks.parts import lock_info
from chaos.locks.redlock import CLOCK_DRIFT_BASE_MS, CLOCK_DRIFT_FACTOR, MIN_NODES, node_timeout_s

LIBRARY = {"library": "pottery", "version": "3.0.1", "extra": "corpus"}


class PotteryRedlock:
    def __init__(self, ctx: LockContext) -> None:
        if ctx.master is not None or len(ctx.nodes) < MIN_NODES:
            raise UsageError(f"pottery-redlock needs at least {MIN_NODES} independent masters, "
                             "not a Sentinel group or a cluster: use e.g. --topology standalone "
                             "--nodes 5")
        self.ctx = ctx
        self.masters = [with_socket_timeout(node, node_timeout_s(ctx.ttl_ms)) for node in ctx.nodes]
        self.ttl_s = ctx.ttl_ms / 1000
        # What each node's PX is (int(auto_release_time * 1000), redlock.py:282) less the
        # drift the library allows for (the same as chaos.locks.redlock's, redlock.py:315-316).
        drift_ms = ctx.ttl_ms * CLOCK_DRIFT_FACTOR + CLOCK_DRIFT_BASE_MS
        self.validity_ms = int(self.ttl_s * 1000) - drift_ms

    def acquire(self) -> Lease | None:
        from pottery import QuorumIsImpossible, Redlock  # the corpus extra: checked at load

        lock = Redlock(key=self.ctx.lock_name, masters=self.masters,
                       auto_release_time=self.ttl_s, raise_on_redis_errors=True)
        try:
            granted = lock.acquire(blocking=False)
        except QuorumIsImpossible as exc:
            raise _undecided("acquire", exc) from exc
        if not granted:
            return None
        return Lease(token=lock._uuid, validity_ms=self.validity_ms, state=lock)

    def release(self, lease: Lease) -> bool:
        from pottery import ReleaseUnlockedLock

        return _decided("release", lease.state.release, ReleaseUnlockedLock)

    def extend(self, lease: Lease) -> Lease | None:
        from pottery import ExtendUnlockedLock, TooManyExtensions

        try:
            extended = _decided("extend", lease.state.extend, ExtendUnlockedLock)
        except TooManyExtensions:  # its cap, refused before sending anything
            return None
        return replace(lease, validity_ms=self.validity_ms) if extended else None

    def __repr__(self) -> str:
        return (f"PotteryRedlock(client={self.ctx.client_id!r}, nodes={len(self.masters)}, "
                f"key={self.ctx.lock_name!r})")


def _decided(op: str, call: Callable[[], object], refused: type[Exception]) -> bool:
    """One of pottery's quorum operations: True when ``call`` returned (a quorum did it),
    False when pottery refused it (``refused``) and no node erred; ``Indeterminate`` when
    erring nodes leave it undecided (a refusal with errors, or errors on a majority)."""
    from pottery import QuorumIsImpossible

    try:
        call()
    except QuorumIsImpossible as exc:
        raise _undecided(op, exc) from exc
    except refused as exc:
        if exc.redis_errors:  # type: ignore[attr-defined]
            raise _undecided(op, exc) from exc
        return False
    return True


def _undecided(op: str, exc: Any) -> Indeterminate:
    """A refusal or a quorum error of pottery's whose Redis errors leave ``op`` undecided."""
    errors = list(exc.redis_errors)
    first = f": {type(errors[0]).__name__}: {errors[0]}" if errors else ""
    return Indeterminate(f"pottery {op}: {type(exc).__name__}, {len(errors)} node(s) "
                         f"erred{first}")


def make(ctx: LockContext) -> PotteryRedlock:
    return PotteryRedlock(ctx)


INFO = lock_info(__doc__, name="pottery-redlock", module=__name__, extend=True,
                 topology="standalone", min_nodes=MIN_NODES, **LIBRARY)
