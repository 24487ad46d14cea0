"""Step-driven clients: the same worker processes, told one operation at a time.

The explorer needs a client to do exactly what a program says — "c1 acquires", "c1
releases" — and nothing in between, so the interleaving is the program's and not the
scheduler's. A ``StepWorker`` is a ``Worker`` (same process, same lock client, same recorded
operations) whose ``run`` waits for a command on its pipe, performs that one operation and
replies with its outcome. ``StepperPool`` is a ``WorkerPool`` of them without the monitor
thread: the caller reads every reply itself, so a client stopped at a pause-injection point
is known to be stopped mid-operation, and stays stopped until the caller resumes it.
"""

from __future__ import annotations

import time
from multiprocessing.connection import wait
from typing import Any

from chaos.locks.contract import SHARED, Lease
from chaos.topology.processes import process_state
from chaos.workload.inject import injector
from chaos.workload.pool import WorkerPool, exitcode_of
from chaos.workload.worker import LeaseLost, Worker

OPS = ("acquire", "release", "extend", "write")
STEP_TIMEOUT_S = 30.0  # a redlock acquire over five cut links takes well under a second
NOT_HOLDING = "not holding"  # release/extend/write by a client whose acquire was refused
STOPPED = "stopped at its pause point"
STOPPED_WAIT_S = 2.0
MAX_STOPS_PER_OP = 10


class StepError(RuntimeError):
    """A client process did not answer a step (it died, or hung past the timeout)."""


class StepWorker(Worker):
    """A client process that performs one operation per command and answers with its outcome.

    Commands: ``(op,)`` for an op in ``OPS`` (``("acquire", ask)`` for a lock that is not
    a mutex: the mode and permits it asks), ``("arm", PausePoint)``, ``("watch", Watch)`` and
    ``("unwatch", serial)`` (no answer),
    ``("stop",)``. A point armed for an operation applies to the next operation of that kind
    only: it is disarmed when that operation ends, fired or not (a get-then-del release that
    finds another client's token sends no DEL), so its effect never leaks into a later one.
    """

    lease: Lease | None = None
    shared = False  # the lease is a shared hold: its writes only read (``critical_section``)

    def run(self) -> int:
        completed = 0
        for _ in range(self.config.max_ops):
            try:
                kind, *args = self.control.recv()
            except EOFError:
                break
            if kind == "stop":
                break
            if self.steer(kind, args):
                continue
            outcome = self.step(kind, completed, *args)
            _disarm(kind)
            completed += 1
            self.control.send(("done", outcome))
        return completed

    def step(self, op: str, number: int, ask: dict[str, Any] | None = None) -> str:
        """Perform ``op`` (the client's ``number``-th step; an acquire asking ``ask`` of a
        lock that is not a mutex) and say how it ended."""
        try:
            return self._step(op, number, ask)
        except LeaseLost as lost:  # an extend (or a write's) put the lease out of reach
            self.lease = None
            return f"lease {lost.args[0]}"

    def _step(self, op: str, number: int, ask: dict[str, Any] | None) -> str:
        if op == "acquire":  # a holder asking again keeps its lease if refused
            lease = self.acquire(asked=ask)
            if lease:
                self.lease, self.shared = lease, ask is not None and ask["mode"] == SHARED
            return "granted" if lease else "refused"
        if self.lease is None:
            return NOT_HOLDING
        if op == "release":
            released = self.release(self.lease)
            self.lease = None
            return {True: "returned true", False: "returned false", None: "outcome unknown"}[
                released
            ]
        if op == "extend":
            if not callable(getattr(self.lock, "extend", None)):
                return "cannot extend"
            before, self.lease = self.lease, self.extend(self.lease)
            return "extended" if self.lease is not before else "not extended"
        if op == "write":
            op_id = f"{self.cid}:{self.spec.incarnation}:{number}"
            self.lease = self.critical_section(self.lease, op_id, self.shared)
            return "done"
        raise ValueError(f"unknown step {op!r}; expected one of {', '.join(OPS)}")


def _disarm(op: str) -> None:
    """Disarm the points armed for ``op`` (the points for other operations stay armed)."""
    kept = [point for point in injector.armed if point.op != op]
    injector.disarm_all()
    for point in kept:
        injector.arm(point)


class StepperPool(WorkerPool):
    """Step-driven client processes. ``step`` runs one operation; an operation stopped at a
    pause point is finished by ``finish`` once the caller has resumed the client."""

    worker_class = StepWorker

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight: dict[str, str] = {}  # client -> the op stopped at its pause point

    def start(self) -> None:
        """Spawn the clients, the run begun at once (a step waits for its client, not a client
        for the others); no monitor thread (every reply is read by ``step``)."""
        self._begin()
        for cid in self._client_ids:
            self._spawn(cid, incarnation=0)

    def step(self, cid: str, op: str, ask: dict[str, Any] | None = None,
             timeout_s: float = STEP_TIMEOUT_S) -> str:
        """Have ``cid`` perform ``op`` (an acquire asking ``ask``, if given); its outcome, or
        ``STOPPED`` if a pause point fired."""
        if op not in OPS:
            raise ValueError(f"unknown step {op!r}; expected one of {', '.join(OPS)}")
        self._send(cid, (op, ask) if ask else (op,))
        outcome = self._reply(cid, timeout_s)
        if outcome is None:
            self.in_flight[cid] = op
            self._wait_stopped(cid)
            return STOPPED
        return outcome

    def finish(self, cid: str, timeout_s: float = STEP_TIMEOUT_S) -> str | None:
        """Wait for the operation ``cid`` was stopped in (it must have been resumed): its op
        and outcome, e.g. ``"release returned true"``; None if nothing was in flight. A
        second pause point in the same operation is passed straight through."""
        op = self.in_flight.pop(cid, None)
        if op is None:
            return None
        for _ in range(MAX_STOPS_PER_OP):
            outcome = self._reply(cid, timeout_s)
            if outcome is not None:
                return f"{op} {outcome}"
            self._wait_stopped(cid)
            self.resume(cid)
        raise StepError(f"{cid} stopped more than {MAX_STOPS_PER_OP} times in one {op}")

    def _wait_stopped(self, cid: str) -> None:
        """Wait until ``cid`` has really stopped itself: it reports a pause point just before
        sending itself SIGSTOP, and a SIGCONT that overtook that SIGSTOP would be lost."""
        pid = self.pid(cid)
        deadline = time.monotonic() + STOPPED_WAIT_S
        while time.monotonic() < deadline:
            if process_state(pid) in ("T", "t", ""):  # stopped, or gone
                return
            time.sleep(0.0005)

    def kill(self, cid: str, fault: str = "") -> None:
        self.in_flight.pop(cid, None)
        super().kill(cid, fault)

    def _reply(self, cid: str, timeout_s: float) -> str | None:
        """The outcome ``cid`` answers with; None when it reports a fired pause point."""
        w = self.workers[cid]
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            ready = wait([w.control, w.process.sentinel], timeout=left)
            if w.control in ready:
                kind, *args = w.control.recv()
                if kind == "done":
                    w.completed += 1
                    return str(args[0])
                if kind == "paused":
                    return None
            elif ready:
                raise StepError(f"{cid} died (exit code {exitcode_of(w.process)}) during a step")
        raise StepError(f"{cid} did not answer within {timeout_s:g} s")
