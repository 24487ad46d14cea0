"""One client: its own OS process, looping acquire → critical section → release.

Being a process (not a thread) is the point: SIGSTOP freezes every thread in it, the lock's
watchdog included, exactly like a stop-the-world GC pause, and SIGKILL is a real crash.

Every operation is written to the history as it happens: ``invoke`` before the call, then
``ok``/``fail`` — or ``info`` when the call raised, because then nobody knows whether it took
effect (an indeterminate outcome never crashes the worker).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, fields, replace
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

import redis

from chaos import history as h
from chaos.errors import UsageError
from chaos.locks.context import build_context
from chaos.locks.contract import (
    EXCLUSIVE,
    GAVE_UP,
    INDETERMINATE_ERRORS,
    MUTEX_MODES,
    SHARED,
    Kept,
    Lease,
    LeaseGone,
    LeaseInvalidated,
    LockClient,
    is_lock_bug,
    is_mutex,
)
from chaos.lockspec import LockSpec, can_extend, check_client
from chaos.topology.base import ClientView
from chaos.topology.processes import die_with_parent
from chaos.workload import stalls
from chaos.workload.inject import Crossing, InjectingConnection, PausePoint, Watch, injector
from chaos.workload.resource import Resource, StaleToken

SHARED_SHARE = 0.75  # of the acquires of a lock with both modes: 3 reads to 1 write
MAX_PERMITS = 2  # a semaphore's acquire asks 1 to this many permits (at most its capacity)
UNUSABLE_LOCK_EXIT = 3  # the lock could not start in this client: the pool does not replace it
# The start of a run: each client says READY once its lock is, the pool answers GO with the
# run's deadline once every client did (``WorkerPool.start``, which waits 60 s at most).
READY, GO = "ready", "go"
GO_TIMEOUT_S = 120.0
_INDETERMINATE = object()
_STALE = object()
_INVALIDATED = object()  # an extend raised LeaseInvalidated: unknown outcome, and out of reach


class LeaseLost(Exception):
    """An extend's answer put the lease beyond this client's reach (``REVOKED``,
    ``INVALIDATED``, ``LeaseInvalidated``; its ``args[0]``: which): the holder lets go at once,
    at whatever depth it holds — no more work under it, no write, no release. The history's
    extend completion says so (``value.lease``), and the checker ends the hold there."""


@dataclass(frozen=True)
class WorkloadConfig:
    """What every client of one run does, as the worker processes receive it (plain data,
    picklable: ``LockSpec`` says how its factory crosses). Times in ms unless named
    otherwise. A campaign builds it (``chaos.campaign.Campaign.workload``, where its knobs
    are declared): the lock, resolved, the times, ``extend_during_work``, ``client_clocks``
    and ``nest_depth``; the retry back-off, timeouts and key are the workload's own."""

    lock: LockSpec
    ttl_ms: int
    work_ms: float
    duration_s: float
    max_ops: int = 100_000  # per client: every loop is bounded in count as well as time
    # Back-off after a refused acquire: short enough to jump into any race window a fault
    # opens (tens of ms), long enough that spinning clients leave the CPU to the holder.
    retry_min_ms: float = 3.0
    retry_max_ms: float = 10.0
    socket_timeout_s: float = 0.5
    lock_name: str = "lockchaos:lock"
    # The holder calls extend() every TTL/3 of its work (seed 001's usage); only locks with
    # extend() can, and only runs that ask for it do (it hides the expiry race otherwise).
    extend_during_work: bool = False
    # A directory of per-client clock files: every client then runs under libfaketime and the
    # client-clock fault can move its wall clock (chaos/workload/clocks.py); None: real clocks.
    client_clocks: str | None = None
    # Acquires per critical section: 2 or more re-acquire while holding (seed 003's
    # reentrancy), each nested invoke marked value {"depth": d}; releases unwind innermost
    # first, each outer level working before and after its inner hold (``Worker.hold``).
    nest_depth: int = 1
    # The lock renews its leases in the background (``Campaign.lock_renews``): the start event
    # declares it, and the checker holds the lock to it (``chaos.checker.renewals``).
    renews: bool = False
    # What the lock grants (its ``LockInfo``, the run's ``--capacity``): a mutex by default.
    # A lock that is not one is called ``acquire(mode=, permits=)``; each acquire draws its
    # mode (a lock with both: shared 3 times in 4, as reads outnumber writes) and its permits
    # (a semaphore: 1 or 2 — more than one at once is where a count check goes wrong).
    capacity: int | None = 1
    modes: tuple[str, ...] = MUTEX_MODES
    fair: bool = False
    max_permits: int | None = None  # the lock's own limit per acquire (None: MAX_PERMITS)

    @property
    def mutex(self) -> bool:
        return is_mutex(self.capacity, self.modes)

    def recorded(self) -> dict[str, Any]:
        """Its fields as a history's start event records them: the lock by its ``--lock``."""
        return {f.name: self.lock.text if f.name == "lock" else getattr(self, f.name)
                for f in fields(self)}


@dataclass(frozen=True)
class WorkerSpec:
    client_id: str
    incarnation: int
    view: ClientView
    config: WorkloadConfig
    history_path: str
    seed: int
    # Monotonic. None: the run has not begun; the worker says READY once its lock is, and
    # waits for the pool's GO with the deadline (``WorkerPool.start``). A client that replaces
    # a crashed one is spawned with the run's deadline and starts at once.
    deadline_ns: int | None


class Worker:
    """The loop of one client process. ``control`` is its end of the pipe to the harness;
    ``watch_slots`` the array, shared with it, that says which watches are still live
    (``chaos.workload.inject.Watch``; None: this client can have none)."""

    def __init__(
        self,
        spec: WorkerSpec,
        control: Connection,
        holding: Synchronized[int],
        watch_slots: MutableSequence[int] | None = None,
    ) -> None:
        self.spec = spec
        self.cid = spec.client_id
        self.config = spec.config
        self.control = control
        self.holding = holding
        self.history = h.HistoryWriter(spec.history_path)
        self.rng = random.Random(f"{spec.seed}:{spec.client_id}:{spec.incarnation}")
        # What each acquire asks of a lock that is not a mutex: its own seeded draws, so the
        # retry back-off's do not shift them.
        self.asks = random.Random(f"{spec.seed}:{spec.client_id}:{spec.incarnation}:asks")
        self.stopping = threading.Event()
        # (work time in ms, the id of the fault that asked): the critical section under way
        # takes the first (``work``), else the next sections do
        self._slow_work: list[tuple[float, str]] = []
        self._nudged = threading.Event()  # slow work arrived: see ``work``
        # A fault asked the section under way to go on until then (monotonic s: ``work-on``).
        self._work_on_until = 0.0
        self._traced: set[str] = set()  # operations whose first lock bug carried its traceback
        injector.on_fire = self._fired
        injector.on_new_command = self._new_command
        injector.on_crossed = self._crossed
        injector.lock_name = self.config.lock_name
        if watch_slots is not None:
            injector.slots = watch_slots
        context = build_context(
            spec.view,
            lock_name=self.config.lock_name,
            ttl_ms=self.config.ttl_ms,
            report_renewal=self._renewed,
            connection_class=InjectingConnection,
            socket_timeout_s=self.config.socket_timeout_s,
            pause_points=injector,
            capacity=self.config.capacity,
        )
        lock = self.config.lock
        self.lock: LockClient = check_client(lock.factory(context), lock.text)
        resource_conn = redis.Redis(
            *spec.view.resource,
            password=spec.view.resource_password,
            socket_timeout=max(self.config.socket_timeout_s, 1.0),
        )
        self.resource = Resource(resource_conn)
        self.history.log(h.INFO, self.cid, h.LOCK_READY,
                         value={"extend": can_extend(self.lock)})

    # -- harness messages ----------------------------------------------------------------

    def _listen(self) -> None:
        """Control thread: apply the harness's commands while the loop runs (bounded)."""
        while not self.stopping.is_set():
            injector.check_awaited()  # a reply held by a network fault since it went on
            if self.control.poll(0.05):
                self._obey()

    def _obey(self) -> None:
        """Apply the harness's next command (one is waiting)."""
        try:
            message = self.control.recv()
        except EOFError:
            self.stopping.set()
            return
        kind, *args = message
        if self.steer(kind, args):
            return
        if kind == "slow-work":
            ms, count, fault = args
            self._slow_work.extend([(ms, fault)] * count)
            self._nudged.set()  # a critical section under way takes it (``work``)
        elif kind == "work-on":
            (ms,) = args
            self._work_on_until = time.monotonic() + ms / 1000
            self._nudged.set()
        elif kind == "stop":
            self.stopping.set()

    @staticmethod
    def steer(kind: str, args: list[Any]) -> bool:
        """Apply a message that arms the injector (a pause point, a watch, the end of one);
        False for any other message."""
        if kind == "arm":
            injector.arm(args[0])
        elif kind == "watch":
            injector.watch(args[0])
        elif kind == "unwatch":
            injector.unwatch(args[0])
        else:
            return False
        return True

    def _crossed(self, watch: Watch, met: Crossing) -> None:
        """A command of this client crossed a link a network fault is on (or its reply was
        awaited there while it was on, or a driver's operation failed while it was on every
        link): its effect."""
        self.history.log(h.INFO, self.cid, h.EFFECT, value={
            "id": watch.fault, "what": watch.describe(self.cid, met), "how": met.how})

    def _fired(self, point: PausePoint) -> None:
        value: dict[str, Any] = {"command": point.command, "action": point.action, "op": point.op}
        if point.duration_ms:
            value["duration_ms"] = point.duration_ms
        if point.fault:
            value["fault"] = point.fault
        self.history.log(h.INFO, self.cid, h.PAUSE_POINT, value=value)
        if point.action == "pause":
            self.control.send(("paused", point.duration_ms))
        elif point.action == "crash":
            self.history.log(h.INFO, self.cid, h.CRASH, value={"at": point.command})

    def _succeeded(self, f: str) -> None:
        """Operation ``f`` succeeded: record the commands it sent that no ``f`` that succeeded
        had sent before (``command`` events with ``"ok": true``), and those an earlier one had
        sent that it sent again or left out (``"again"``: true or false, once each)."""
        for command in injector.succeeded(f):
            self.history.log(h.INFO, self.cid, h.COMMAND,
                             value={"op": f, "command": command, "ok": True})
        for command, again in injector.recurring(f):
            self.history.log(h.INFO, self.cid, h.COMMAND,
                             value={"op": f, "command": command, "again": again})

    def _new_command(self, op: str, command: str, with_: str | None) -> None:
        said = {"op": op, "command": command}
        self.history.log(h.INFO, self.cid, h.COMMAND,
                         value=said if with_ is None else {**said, "with": with_})

    def _renewed(self, lease: Lease, validity_ms: float | None, invoked_at_ns: int, *,
                 error: str | None = None) -> None:
        """A background renewal sent at ``invoked_at_ns``: ``ok`` with its new deadline, or
        ``fail`` when its validity is 0 (it found the lease gone: the lock gave it up), with
        the ``error`` when it raised instead (no answer). All say when it was sent: the
        watchdog was alive then (chaos.checker.renewals)."""
        sent = {"invoked": invoked_at_ns}
        if error is not None or validity_ms == 0:
            raised = {} if error is None else {"error": error}
            self.history.log(h.FAIL, self.cid, h.RENEW, token=lease.token, value=sent, **raised)
            return
        validity = self.config.ttl_ms if validity_ms is None else validity_ms
        self.history.log(
            h.OK,
            self.cid,
            h.RENEW,
            token=lease.token,
            valid_until=invoked_at_ns + int(validity * 1e6),
            value=sent,
        )

    # -- one recorded operation ----------------------------------------------------------

    def _call(self, f: str, call: Callable[[], Any], **invoke: Any) -> tuple[h.Event, Any]:
        """Invoke, call, and record how it ended; returns the invoke event and the result,
        or ``_INDETERMINATE`` / ``_STALE``."""
        injector.begin(f)
        invoked = self.history.log(h.INVOKE, self.cid, f, **invoke)
        try:
            return invoked, call()
        except StaleToken:
            self.history.log(h.FAIL, self.cid, f, error=h.STALE_TOKEN, **invoke)
            return invoked, _STALE
        except Exception as exc:  # any failure of the lock under test is an outcome
            lost = f == h.EXTEND and isinstance(exc, LeaseInvalidated)
            said = {"value": {h.LEASE: h.INVALIDATED}} if lost else {}
            self.history.log(h.INFO, self.cid, f, error=_error(exc), **invoke, **said,
                             **self._bug(f, exc))
            return invoked, _INVALIDATED if lost else _INDETERMINATE
        finally:
            injector.end()

    def _bug(self, f: str, exc: Exception) -> dict[str, Any]:
        """The history fields of a lock bug (``bug``, and the first ``traceback`` of each of
        this process's operations); nothing for a Redis/connection error or the resource's."""
        if f not in (h.ACQUIRE, h.RELEASE, h.EXTEND) or not is_lock_bug(exc):
            return {}
        if f in self._traced:
            return {"bug": True}
        self._traced.add(f)
        return {"bug": True, "traceback": _traceback(exc)}

    def _deadline(self, invoked: h.Event, lease: Lease) -> int:
        validity = self.config.ttl_ms if lease.validity_ms is None else lease.validity_ms
        return invoked.t + int(validity * 1e6)

    def ask(self) -> dict[str, Any]:
        """What the next acquire of a lock that is not a mutex asks: its mode and permits."""
        modes = self.config.modes
        if len(modes) > 1:
            mode = SHARED if self.asks.random() < SHARED_SHARE else EXCLUSIVE
        else:
            mode = modes[0]
        capacity = self.config.capacity
        most = 1 if mode == EXCLUSIVE or capacity is None else min(
            MAX_PERMITS, capacity, self.config.max_permits or MAX_PERMITS)
        return {"mode": mode, "permits": self.asks.randint(1, most)}

    def acquire(self, depth: int = 1, asked: dict[str, Any] | None = None) -> Lease | None:
        """One acquire; ``depth`` > 1 is a nested one, made while this client holds the lock
        (the history marks it: a refusal then is the lock refusing its own holder). ``asked``:
        the mode and permits asked of a lock that is not a mutex (recorded in the invoke's
        value), a mutex's acquire asks nothing."""
        value = {**(asked or {}), **({"depth": depth} if depth > 1 else {})}
        nested: dict[str, Any] = {"value": value} if value else {}
        call = partial(self.lock.acquire, **asked) if asked else self.lock.acquire
        invoked, lease = self._call(h.ACQUIRE, call, **nested)
        if lease is _INDETERMINATE:
            return None
        if not lease:
            gave_up = {"error": h.GAVE_UP} if lease is GAVE_UP else {}
            self.history.log(h.FAIL, self.cid, h.ACQUIRE, **nested, **gave_up)
            return None
        acquired = self.history.log(
            h.OK,
            self.cid,
            h.ACQUIRE,
            token=lease.token,
            valid_until=self._deadline(invoked, lease),
            fence=lease.fence,
        )
        self._succeeded(h.ACQUIRE)
        # Which nodes, keys and values this grant rests on, before it counts as held: what
        # faults aimed at "the nodes the holder counted on" target (WorkerPool.written).
        self.control.send(("wrote", acquired.t, injector.written))
        self.holding.value = acquired.t
        return lease

    def release(self, lease: Lease) -> bool | None:
        """What the lock's release returned; None when its outcome is unknown."""
        self.holding.value = 0
        invoked, released = self._call(h.RELEASE, lambda: self.lock.release(lease),
                                       token=lease.token)
        if released is _INDETERMINATE:
            return None
        if isinstance(released, Kept):  # released, its key kept on purpose until a deadline
            until = ({} if released.validity_ms is None else
                     {"valid_until": invoked.t + int(released.validity_ms * 1e6)})
            self.history.log(h.OK, self.cid, h.RELEASE, token=lease.token,
                             value={h.LEASE: h.KEPT}, **until)
        else:
            self.history.log(h.OK if released else h.FAIL, self.cid, h.RELEASE,
                             token=lease.token)
        if released:
            self._succeeded(h.RELEASE)
        return bool(released)

    def extend(self, lease: Lease) -> Lease:
        extend = getattr(self.lock, "extend", None)
        if extend is None:
            return lease
        invoked, extended = self._call(h.EXTEND, lambda: extend(lease), token=lease.token)
        if extended is _INDETERMINATE:
            return lease
        if extended is _INVALIDATED:
            self.holding.value = 0
            raise LeaseLost(h.INVALIDATED)
        if isinstance(extended, LeaseGone):
            self.history.log(h.FAIL, self.cid, h.EXTEND, token=lease.token,
                             value={h.LEASE: extended.name})
            self.holding.value = 0
            raise LeaseLost(extended.name)
        if not extended:
            self.history.log(h.FAIL, self.cid, h.EXTEND, token=lease.token)
            return lease
        self.history.log(
            h.OK,
            self.cid,
            h.EXTEND,
            token=extended.token,
            valid_until=self._deadline(invoked, extended),
        )
        self._succeeded(h.EXTEND)
        return extended

    def critical_section(self, lease: Lease, op_id: str, shared: bool = False) -> Lease:
        """Read the set, work, append ``op_id``, write it back (fenced if the lease is). A
        shared hold (a reader, a semaphore's permit) only reads and works: holders that share
        the lock by design would lose each other's writes."""
        fence = {"fence": lease.fence} if lease.fence is not None else {}
        _, items = self._call(h.READ, lambda: self.resource.read(lease.fence), **fence)
        if items is _INDETERMINATE or items is _STALE:
            return lease
        # Size and last id, not the list: a whole list per read would grow the file as n².
        summary = {"size": len(items), "last": items[-1] if items else None}
        self.history.log(h.OK, self.cid, h.READ, value=summary, **fence)
        lease = self.work(lease, self._section_ms(), stretch=True)
        if shared:
            return lease
        _, written = self._call(
            h.WRITE, lambda: self.resource.write([*items, op_id], lease.fence), value=op_id, **fence
        )
        if written is not _INDETERMINATE and written is not _STALE:
            self.history.log(h.OK, self.cid, h.WRITE, value=op_id, **fence)
        return lease

    def _section_ms(self) -> float:
        """How long this critical section works: the next slow section a fault asked for,
        else the work time."""
        return self._slow_section() if self._slow_work else self.config.work_ms

    def _slow_section(self) -> float:
        """The next slow section a fault asked for, and its effect event."""
        work_ms, fault = self._slow_work.pop(0)
        self.history.log(h.INFO, self.cid, h.EFFECT, value={
            "id": fault, "what": f"{self.cid} worked {work_ms:g} ms holding the lock"})
        return work_ms

    def work(self, lease: Lease, work_ms: float, stretch: bool = False) -> Lease:
        """Hold for ``work_ms``; locks that can extend are extended every TTL/3, and at
        least once, halfway, in a shorter stretch: a run asked to extend that made no extend
        did not test it (``chaos.checker.exercised``). With ``stretch`` (a critical section),
        a slow section a fault asks for meanwhile makes this one last that long from its
        start: slow-work aims at the holder, which may not hold again before the run ends;
        and a fault may ask it to go on a while from then (``work-on``)."""
        started = time.monotonic()
        end = started + work_ms / 1000
        extending = self.config.extend_during_work and can_extend(self.lock)

        def step_s(ms: float) -> float:
            return min(self.config.ttl_ms / 3, ms / 2) / 1000 if extending else ms / 1000

        step = step_s(work_ms)
        while (left := end - time.monotonic()) > 0:
            if not stretch:
                time.sleep(min(left, step))
            elif self._nudged.wait(min(left, step)):
                self._nudged.clear()
                if self._slow_work:
                    slow_ms = self._slow_section()
                    end = max(end, started + slow_ms / 1000)
                    step = step_s(slow_ms)
                end = max(end, self._work_on_until)
                continue  # the next extend a whole step from now: two steps apart at most
            if extending and end - time.monotonic() > 0:
                lease = self.extend(lease)
        return lease

    def hold(self, lease: Lease, op_id: str, depth: int = 1,
             asked: dict[str, Any] | None = None) -> None:
        """Hold ``lease``, acquired at nesting ``depth``, then release it. Innermost (at
        ``nest_depth``) the holder runs the critical section. Above it, it works a quarter of
        the work time, acquires again while holding (seed 003: a reentrant lock lets its
        holder in; ThreadLocal counts, Redisson counts in the hash), holds that, and works
        another quarter after the inner release: so each level holds (and extends) alone,
        around its inner hold, and its release is not just the tail of the inner one's. A
        refused nested acquire (a lock that is not reentrant refuses its own holder) leaves
        the critical section out."""
        if depth < self.config.nest_depth:
            outer_ms = self.config.work_ms / 4
            lease = self.work(lease, outer_ms)
            inner = self.acquire(depth + 1, asked)
            if inner is not None:
                self.hold(inner, op_id, depth + 1, asked)
            lease = self.work(lease, outer_ms)
        else:
            shared = asked is not None and asked["mode"] == SHARED
            lease = self.critical_section(lease, op_id, shared)
        self.release(lease)

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        deadline_ns = self.spec.deadline_ns
        if deadline_ns is None:  # worker_main waits for the pool's GO first
            raise RuntimeError("a worker runs once its run has begun: its spec has no deadline")
        # What the harness sent before the run began is applied before the first acquire: a
        # replacement's points (``WorkerPool.keep_for_replacements``) are there for it, and
        # the control thread, started now, could take them only after that acquire had sent
        # the command they wait for (a SCRIPT LOAD, sent at a process's first acquire).
        while self.control.poll(0) and not self.stopping.is_set():
            self._obey()
        listener = threading.Thread(target=self._listen, name="control", daemon=True)
        listener.start()
        completed = 0
        asked: dict[str, Any] | None = None
        for i in range(self.config.max_ops):
            if self.stopping.is_set() or h.now() >= deadline_ns:
                break
            # A client keeps asking for what it drew until it is granted: a writer refused
            # while readers hold still wants to write.
            asked = None if self.config.mutex else asked or self.ask()
            lease = self.acquire(asked=asked)
            if lease is None:
                retry = self.rng.uniform(self.config.retry_min_ms, self.config.retry_max_ms)
                time.sleep(retry / 1000)
                continue
            held, asked = asked, None
            try:
                self.hold(lease, f"{self.cid}:{self.spec.incarnation}:{i}", asked=held)
            except LeaseLost:  # the lock gave the lease up, or it is out of reach: let go
                continue
            completed += 1
        self.stopping.set()
        listener.join(timeout=1)
        return completed


LOGS = "logs"  # in the run directory: what the lock's library logged, and its driver's stderr


def _keep_logs(spec: WorkerSpec) -> None:
    """The lock's own logging goes to the run directory (``logs/<client>.log``), never to the
    terminal: an audit of a Python Redlock printed 1,086 lines of its library's "Can not unset
    lock" there. A driver's stderr is kept beside it (``LOCKCHAOS_DRIVER_LOG_DIR``, unless set:
    chaos.drivers.process). The file is made only when something is logged."""
    logs = Path(spec.history_path).parent / LOGS
    with contextlib.suppress(OSError):
        logs.mkdir(exist_ok=True)
        os.environ.setdefault("LOCKCHAOS_DRIVER_LOG_DIR", str(logs))
    root = logging.getLogger()
    for inherited in list(root.handlers):
        root.removeHandler(inherited)
    handler = logging.FileHandler(logs / f"{spec.client_id}.log", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root.addHandler(handler)


def worker_main(
    spec: WorkerSpec,
    control: Connection,
    holding: Synchronized[int],
    worker_class: type[Worker] = Worker,
    watch_slots: MutableSequence[int] | None = None,
) -> None:
    """Process entry point (forked by the pool); ``worker_class`` decides what ``run`` does."""
    die_with_parent(signal.SIGKILL)
    # Its own process group: a lock driver (chaos/drivers/) started by this client is
    # stopped, continued and killed with it (the pool signals the group).
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _keep_logs(spec)
    try:
        worker = worker_class(spec, control, holding, watch_slots)
    except INDETERMINATE_ERRORS as exc:  # a fault while it connected: a fresh one may do better
        _record_start_failure(spec, h.CRASH, exc)
        os._exit(1)
    except Exception as exc:  # the lock cannot start here (its factory raised, a driver that
        # fails its hello, …): the history says why, once, instead of a traceback on stderr
        # from every replacement; the pool does not replace this client.
        _record_start_failure(spec, h.LOCK_UNUSABLE, exc)
        os._exit(UNUSABLE_LOCK_EXIT)
    deadline_ns = spec.deadline_ns
    if deadline_ns is None:
        deadline_ns = _wait_for_go(control)
        if deadline_ns is None:  # stopped (or the pool gone) before the run began
            control.send(("done", 0))
            os._exit(0)
        worker.spec = replace(spec, deadline_ns=deadline_ns)
    with stalls.watching(worker.history, worker.cid, worker.stopping, deadline_ns):
        completed = worker.run()  # the watcher logs a stall it is in, then ends
    control.send(("done", completed))
    os._exit(0)  # no atexit handlers inherited from the forked parent


def _wait_for_go(control: Connection) -> int | None:
    """Say READY and wait (at most ``GO_TIMEOUT_S``) for the pool's GO: the run's deadline.
    None when told to stop first, or when the pool is gone."""
    control.send((READY,))
    end = time.monotonic() + GO_TIMEOUT_S
    while time.monotonic() < end:
        if not control.poll(min(1.0, max(0.0, end - time.monotonic()))):
            continue
        try:
            kind, *args = control.recv()
        except EOFError:
            return None
        if kind == GO:
            return int(args[0])
        if kind == "stop":
            return None
    return None


def _error(exc: BaseException) -> str:
    """An exception as the history's ``error``: ``Type: message`` (a ``UsageError`` is already
    a sentence)."""
    return str(exc) if isinstance(exc, UsageError) else f"{type(exc).__name__}: {exc}"


def _traceback(exc: BaseException) -> str:
    """The exception's traceback from the lock's own code on: the harness's frames (this
    module's, above the lock's) say nothing about the bug."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _record_start_failure(spec: WorkerSpec, f: str, exc: BaseException) -> None:
    """Record in the history why this client process could not start its lock (``f`` is
    ``crash`` or ``lock-unusable``); stderr as a last resort when the history cannot be
    written."""
    trace = None if isinstance(exc, UsageError) else _traceback(exc)
    try:
        with h.HistoryWriter(spec.history_path) as history:
            history.log(h.INFO, spec.client_id, f, error=_error(exc), traceback=trace,
                        value={"at": "start"})
    except OSError:
        print(f"lockchaos: {spec.client_id}: {_error(exc)}", file=sys.stderr, flush=True)
