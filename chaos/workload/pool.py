"""The harness side of the workers: start them, steer them, pause, kill and replace them.

A monitor thread watches every worker's pipe and process: it resumes a worker that paused
itself at an injection point once the pause is over, and replaces a worker that died (a fresh
client process takes the same client id, with a new incarnation number).
"""

from __future__ import annotations

import contextlib
import heapq
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from chaos import history as h
from chaos.locks.contract import PAUSE_POINTS
from chaos.topology.base import Topology, host_port
from chaos.workload import clocks
from chaos.workload.inject import MAX_WATCHED_NODE, WATCH_SLOTS, PausePoint, Watch, Written
from chaos.workload.worker import (
    GO,
    UNUSABLE_LOCK_EXIT,
    Worker,
    WorkerSpec,
    WorkloadConfig,
    worker_main,
)

_ctx = mp.get_context("fork")  # milliseconds per worker, against ~0.3 s for spawn
MONITOR_TICK_S = 0.05
WRITTEN_WAIT_S = 0.2  # for the monitor to read a fresh holder's "wrote" report
STOP_GRACE_S = 5.0
READY_TIMEOUT_S = 60.0  # for every client's lock to be ready; a later one joins the run late


@dataclass
class WorkerHandle:
    spec: WorkerSpec
    process: BaseProcess
    control: Connection
    holding: Synchronized[int]  # monotonic ns of the acquire it holds, 0 when not holding
    done: bool = False
    completed: int = 0
    paused: bool = False
    written: Written = field(default_factory=dict)  # what its last acquire wrote, per node
    written_for: int = 0  # the ``holding`` time of the acquire ``written`` belongs to
    # Which watches are live (``watch``): a slot holds a watch's serial (0 when free), and the
    # slot ``WATCH_SLOTS`` further the mask of the nodes it is live for.
    watch_slots: MutableSequence[int] = field(default_factory=list)

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid


@dataclass
class Watching:
    """One watch a pool armed on a client (``WorkerPool.watch``); without a slot, none."""

    lock: threading.RLock
    slots: MutableSequence[int] = field(default_factory=list)
    slot: int = -1
    serial: int = 0
    unwatch: Callable[[], None] = lambda: None

    def start(self, node: int) -> None:
        """The fault is on ``node``'s link: a command sent there from now on counts."""
        with self.lock:
            if self.slot >= 0 and self.slots[self.slot] in (self.serial, -self.serial):
                self.slots[WATCH_SLOTS + self.slot] |= 1 << node
                self.slots[self.slot] = self.serial

    def stop(self) -> None:
        """The fault is about to heal: no command counts any more (the client forgets the
        watch when it reads the ``unwatch`` message)."""
        if self.slot < 0:
            return
        with self.lock:
            if self.slots[self.slot] in (self.serial, -self.serial):
                self.slots[self.slot] = 0
                self.slots[WATCH_SLOTS + self.slot] = 0
        self.unwatch()


@dataclass(order=True)
class _Due:
    at: float
    client_id: str = field(compare=False)
    incarnation: int = field(compare=False)


class WorkerPool:
    """``clients`` worker processes running ``config`` against ``topology``."""

    worker_class: type[Worker] = Worker  # what each process runs (the explorer's steps it)

    def __init__(
        self,
        topology: Topology,
        config: WorkloadConfig,
        history: h.HistoryWriter,
        *,
        clients: int,
        seed: int,
        replace_crashed: bool = True,
    ) -> None:
        self.topology = topology
        self.config = config
        self.history = history
        self.seed = seed
        self.replace_crashed = replace_crashed
        self.deadline_ns: int | None = None  # monotonic; set when the run begins (``start``)
        self.workers: dict[str, WorkerHandle] = {}
        self._resumes: list[_Due] = []
        self._lock = threading.RLock()
        # Until when a fault holds each client's section on (``work_on``), monotonic s.
        self._held_on: dict[str, float] = {}
        self._stopping = threading.Event()
        self._client_ids = [f"c{i}" for i in range(1, clients + 1)]
        self._views = {cid: topology.client_view(cid) for cid in self._client_ids}
        self._monitor = threading.Thread(target=self._watch, name="pool-monitor", daemon=True)
        self._serial = 0  # the last watch's (``watch``)
        # Points kept for replacements (``keep_for_replacements``), each with the clients
        # whose next replacement is still to be armed with it.
        self._kept: list[tuple[PausePoint, set[str]]] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Spawn every client, wait until each has its lock ready, then begin the run: its
        ``duration_s`` counts from then, and each client is told its deadline. Starting a lock
        is not testing it — a JVM driver takes seconds to start on a busy machine, which a
        short run would otherwise spend before its first acquire (and a fault schedule drawn
        for the run would fire at no one)."""
        handles = [self._spawn(cid, incarnation=0) for cid in self._client_ids]
        _await_ready(handles, READY_TIMEOUT_S)
        self._begin()
        for w in handles:
            self._send(w.spec.client_id, (GO, self.deadline_ns))
        self._monitor.start()

    def _begin(self) -> None:
        """The run begins now: its deadline is ``duration_s`` from here."""
        self.deadline_ns = h.now() + int(self.config.duration_s * 1e9)

    def _spawn(self, cid: str, incarnation: int) -> WorkerHandle:
        spec = WorkerSpec(
            client_id=cid,
            incarnation=incarnation,
            view=self._views[cid],
            config=self.config,
            history_path=str(self.history.path),
            seed=self.seed,
            deadline_ns=self.deadline_ns,
        )
        clocks_dir = self.config.client_clocks  # a fakeable wall clock needs an exec
        ctx = _ctx if clocks_dir is None else clocks.SPAWN
        ours, theirs = ctx.Pipe()
        holding: Synchronized[int] = ctx.Value("q", 0)
        watch_slots: MutableSequence[int] = ctx.RawArray("q", 2 * WATCH_SLOTS)
        process = ctx.Process(
            target=worker_main,
            args=(spec, theirs, holding, self.worker_class, watch_slots),
            name=f"lockchaos-{cid}",
            daemon=True,
        )
        if clocks_dir is None:
            process.start()
        else:
            clocks.start(process, clocks_dir, cid)
        with contextlib.suppress(OSError):  # as the worker does itself: whoever runs first
            os.setpgid(process.pid or 0, process.pid or 0)
        theirs.close()
        handle = WorkerHandle(spec, process, ours, holding, watch_slots=watch_slots)
        with self._lock:
            self.workers[cid] = handle
        return handle

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until every worker finished (True) or ``timeout_s`` passed (False)."""
        end = time.monotonic() + (timeout_s if timeout_s is not None else 1e9)
        while time.monotonic() < end:
            with self._lock:
                if all(w.done or not w.process.is_alive() for w in self.workers.values()):
                    return True
            time.sleep(0.02)
        return False

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def request_stop(self) -> None:
        """Ask every worker to finish its current operation and exit; returns at once."""
        self._stopping.set()
        with self._lock:
            handles = list(self.workers.values())
        for w in handles:
            if w.process.is_alive():
                self._signal(w, signal.SIGCONT)
                self._send(w.spec.client_id, ("stop",))

    def stop(self) -> None:
        """Ask every worker to finish its operation, then kill whatever is left. Idempotent."""
        self.request_stop()
        with self._lock:
            handles = list(self.workers.values())
        deadline = time.monotonic() + STOP_GRACE_S
        for w in handles:
            w.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                self._signal(w, signal.SIGKILL)
                self._signal(w, signal.SIGCONT)
                w.process.join(timeout=5)
        if self._monitor.is_alive():
            self._monitor.join(timeout=2)

    # -- steering (used by the nemesis and the explorer) -------------------------------------

    def written(self, cid: str, timeout_s: float = WRITTEN_WAIT_S) -> Written:
        """What ``cid``'s current grant rests on: per node address (as the client reaches
        it), the keys and values its acquire wrote. Empty when it holds nothing or its lock
        talks to Redis through something lockchaos cannot see (a driver in another
        language). The worker reports it just before it counts as holding, so the report is
        at most one pipe read behind."""
        w = self.workers[cid]
        deadline = time.monotonic() + timeout_s
        while w.holding.value and w.written_for != w.holding.value:
            if time.monotonic() >= deadline:
                return {}
            time.sleep(0.002)
        return dict(w.written) if w.holding.value else {}

    def holders(self, acquired_within_ms: float | None = None,
                held_for_ms: float | None = None) -> list[str]:
        """Clients that believe they hold the lock right now (and, if asked, acquired it less
        than ``acquired_within_ms`` ago: their whole critical section is still ahead; or at
        least ``held_for_ms`` ago: at work, past their first extend)."""
        at = h.now()
        since = 0 if acquired_within_ms is None else at - int(acquired_within_ms * 1e6)
        until = None if held_for_ms is None else at - int(held_for_ms * 1e6)
        with self._lock:
            return [
                cid
                for cid, w in self.workers.items()
                if w.holding.value and w.holding.value >= since and not w.done
                and (until is None or w.holding.value <= until)
            ]

    def pid(self, cid: str) -> int:
        return self.workers[cid].pid

    def pause(self, cid: str, duration_ms: float | None = None) -> None:
        """SIGSTOP the client's process (every thread); resume after ``duration_ms`` if given."""
        w = self.workers[cid]
        self._signal(w, signal.SIGSTOP)
        w.paused = True
        if duration_ms is not None:
            self._resume_later(w, duration_ms)

    def resume(self, cid: str) -> None:
        w = self.workers[cid]
        w.paused = False
        self._signal(w, signal.SIGCONT)

    def kill(self, cid: str, fault: str = "") -> None:
        """SIGKILL the client's process (recorded as a crash, naming ``fault``); a fresh one
        takes its place."""
        w = self.workers[cid]
        w.done = True  # the monitor must not record this death a second time
        # Stopped first, so none of its events can be stamped after its crash.
        self._signal(w, signal.SIGSTOP)
        self.history.log(h.INFO, cid, h.CRASH, value={"by": "nemesis", "fault": fault})
        self._signal(w, signal.SIGKILL)
        self._signal(w, signal.SIGCONT)
        w.process.join(timeout=5)
        if self.replace_crashed and not self._stopping.is_set():
            self._replace(cid, w.spec.incarnation + 1)

    def arm(self, cid: str, point: PausePoint) -> None:
        self._send(cid, ("arm", point))

    def keep_for_replacements(self, point: PausePoint, clients: list[str]) -> None:
        """Arm ``point`` (armed on ``clients``) on the next replacement of each of them too
        (a fresh process after a crash): a command a lock sends once per process, at its first
        use (``lua-loaded-once``'s ``SCRIPT LOAD``), comes again only from a new process.
        Once per client: a crash point its replacement reaches would crash every next one."""
        with self._lock:
            self._kept.append((point, set(clients)))

    def _replace(self, cid: str, incarnation: int) -> None:
        """A fresh process for ``cid``, armed with the points kept for its replacement."""
        self._spawn(cid, incarnation)
        with self._lock:
            due = [point for point, waiting in self._kept if cid in waiting]
            for _, waiting in self._kept:
                waiting.discard(cid)
        for point in due:
            self.arm(cid, point)

    def watchable(self, cid: str, everywhere: bool) -> bool:
        """Whether a watch on ``cid`` can see its commands cross the links watched: a Python
        lock's always do (its connections are the harness's); a driver's announcements name
        no address, so only a driver that announces (``pause-points``), and only when every
        one of its links is watched (``everywhere``: a single-node topology, or a fault on
        all its links)."""
        if cid not in self.workers or len(self.topology.nodes) > MAX_WATCHED_NODE + 1:
            return False
        caps = self.config.lock.capabilities
        return caps is None or (PAUSE_POINTS in caps and everywhere)

    def watch(self, cid: str, fault: str, name: str, nodes: list[int],
              everywhere: bool, holds_replies: bool = False) -> Watching:
        """Arm a watch on ``cid``'s commands to ``nodes`` (``chaos.workload.inject.Watch``:
        the first one sent while it is live writes an ``effect`` naming ``fault``). It is
        sent now, so the client has it before the fault goes on, and it is live from
        ``Watching.start`` (call it once a node's link is faulted) to ``Watching.stop``, which
        ends it at once, even for a client that is stopped. A client whose slots are all
        taken (``WATCH_SLOTS`` faults on its links at once) is not watched: its firing then
        reports nothing, never an effect that did not happen."""
        w = self.workers.get(cid)
        if w is None or max(nodes, default=0) > MAX_WATCHED_NODE:
            return Watching(self._lock)
        with self._lock:
            slot = next((i for i in range(WATCH_SLOTS) if w.watch_slots[i] == 0), None)
            if slot is None:
                return Watching(self._lock)
            self._serial += 1
            serial = self._serial
            w.watch_slots[slot] = -serial  # taken, not live yet
        view = self._views[cid]
        addresses = {host_port(view.nodes[i]): i for i in nodes}
        self._send(cid, ("watch", Watch(fault, name, addresses, everywhere, slot, serial,
                                        holds_replies)))
        return Watching(self._lock, w.watch_slots, slot, serial,
                        partial(self._send, cid, ("unwatch", serial)))

    def slow_work(self, cid: str, work_ms: float, count: int = 1, fault: str = "") -> None:
        """The client's next ``count`` critical sections last ``work_ms``; each writes an
        ``effect`` event naming ``fault`` as it begins."""
        self._send(cid, ("slow-work", work_ms, count, fault))

    def work_on(self, cid: str, work_ms: float) -> None:
        """The client's critical section under way, if any, lasts ``work_ms`` more from now
        at least (a fault on its links holds it on through the fault and after the heal:
        what the lock does once its links are back)."""
        with self._lock:
            self._held_on[cid] = time.monotonic() + work_ms / 1000
        self._send(cid, ("work-on", work_ms))

    def held_on(self, cid: str) -> bool:
        """Whether a fault is holding the client's section on (``work_on``) right now."""
        with self._lock:
            return self._held_on.get(cid, 0.0) > time.monotonic()

    def _send(self, cid: str, message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError):  # it died; the monitor records and replaces it
            self.workers[cid].control.send(message)

    @staticmethod
    def _signal(w: WorkerHandle, sig: int) -> None:
        """Signal the worker's process group: the worker and any lock driver it started."""
        with contextlib.suppress(ProcessLookupError):
            try:
                os.killpg(w.pid, sig)
            except (ProcessLookupError, PermissionError):  # not (yet) a group leader
                os.kill(w.pid, sig)

    def _resume_later(self, w: WorkerHandle, duration_ms: float) -> None:
        with self._lock:
            due = _Due(time.monotonic() + duration_ms / 1000, w.spec.client_id, w.spec.incarnation)
            heapq.heappush(self._resumes, due)

    # -- the monitor -----------------------------------------------------------------------

    def _watch(self) -> None:
        bound = time.monotonic() + self.config.duration_s + 3600  # bounded, generously
        while time.monotonic() < bound:
            self._resume_due()
            with self._lock:
                live = [w for w in self.workers.values() if not w.done]
            if not live and (self._stopping.is_set() or not self._resumes):
                return
            waitables: dict[Any, WorkerHandle] = {}
            for w in live:
                waitables[w.control] = w
                waitables[w.process.sentinel] = w
            for ready in wait(list(waitables), timeout=self._until_next_resume()):
                w = waitables[ready]
                if ready is w.control:
                    self._message(w)
                elif not w.done:
                    self._died(w)

    def _message(self, w: WorkerHandle) -> None:
        try:
            kind, *args = w.control.recv()
        except (EOFError, OSError):
            return
        if kind == "paused":
            w.paused = True
            self._resume_later(w, args[0])
        elif kind == "wrote":
            w.written_for, w.written = args[0], args[1]
        elif kind == "done":
            w.done, w.completed = True, args[0]

    def _died(self, w: WorkerHandle) -> None:
        """A worker exited without saying done: it crashed (an armed crash point or a bug)."""
        w.done = True
        exitcode = exitcode_of(w.process)
        if exitcode not in (-signal.SIGKILL, UNUSABLE_LOCK_EXIT):  # that one wrote a
            # lock-unusable event itself: it never ran, so it did not crash
            self.history.log(h.INFO, w.spec.client_id, h.CRASH, value={"exitcode": exitcode})
        if exitcode == UNUSABLE_LOCK_EXIT:
            return  # it said why in the history; a fresh process would fail the same way
        deadline = self.deadline_ns  # None: the run has not begun, nothing to replace it for
        running = deadline is not None and h.now() < deadline
        if self.replace_crashed and not self._stopping.is_set() and running:
            self._replace(w.spec.client_id, w.spec.incarnation + 1)

    def _until_next_resume(self) -> float:
        """How long the monitor may wait for messages: a tick, or less when a paused client
        is due sooner. Resuming on time matters: waking only when a message arrives would
        resume a paused client right after the holder's next write — its release's DEL —
        and a stale DEL that lands in the gap between that release and the next acquire
        removes nothing (get-then-del's pause before DEL would almost never break it)."""
        with self._lock:
            due = self._resumes[0].at if self._resumes else None
        if due is None:
            return MONITOR_TICK_S
        return min(MONITOR_TICK_S, max(0.0, due - time.monotonic()))

    def _resume_due(self) -> None:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._resumes or self._resumes[0].at > now:
                    return
                due = heapq.heappop(self._resumes)
                w = self.workers.get(due.client_id)
            if w is not None and w.spec.incarnation == due.incarnation:
                self.resume(due.client_id)

    @property
    def completed(self) -> int:
        return sum(w.completed for w in self.workers.values())


def exitcode_of(process: BaseProcess, timeout_s: float = 1.0) -> int | None:
    """The exit code of a worker whose death woke a waiter. Another thread may reap it at
    the same moment (``wait``'s ``is_alive``, ``stop``'s ``join``): multiprocessing's
    ``waitpid`` then fails in one of them, and ``exitcode`` reads None until the other has
    stored the code (23 times in 3,000 such deaths; once, a worker whose lock factory failed
    counted as a crash)."""
    process.join(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.002)
    return process.exitcode


def _await_ready(handles: list[WorkerHandle], timeout_s: float) -> None:
    """Until each worker said its lock is ready (``READY``) or died (its death is the
    monitor's to record), at most ``timeout_s``."""
    end = time.monotonic() + timeout_s
    waiting: dict[Any, WorkerHandle] = {}
    for w in handles:
        waiting[w.control] = waiting[w.process.sentinel] = w
    while waiting and time.monotonic() < end:
        for ready in wait(list(waiting), timeout=max(0.0, end - time.monotonic())):
            answered = waiting.get(ready)
            if answered is None:  # its pipe and its death both woke us: already done with it
                continue
            if ready is answered.control:
                with contextlib.suppress(EOFError, OSError):
                    answered.control.recv()  # READY: nothing else comes before the run begins
            waiting = {key: w for key, w in waiting.items() if w is not answered}
