"""The in-memory model of a program: who may hold the lock, who is stopped, what is on.

Hypothesis replays a program many times while it shrinks it, and calls a test flaky if the
same choices lead to different steps. So nothing here looks at Redis: the model follows the
steps alone. Every step can follow any other — a step that cannot apply is a no-op (a
release by a client that holds nothing, a heal with nothing on) — which is also what lets
the shrinker delete any step without invalidating the rest of the program.

For a lock that is not a mutex the model also keeps what each asker asked (its mode and
permits), and orders an acquire's possible asks by how telling they are against the
capacity (``asks``): the ask a correct lock must refuse if every asker holds what it asked.

A client stopped at a pause point resumes when it is next told to do something: it first
finishes the operation it was stopped in, then does the new one. "Stopped" is conservative:
an operation with a pause point leaves its client stopped whether or not the point fired (a
get-then-del release that finds another client's token sends no DEL), so a replay resumes
exactly where the exploration did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chaos.explore.fault_steps import explorable
from chaos.explore.program import CLIENT_OPS, Step
from chaos.history import EXCLUSIVE, SHARED
from chaos.locks.contract import MUTEX_MODES

Ask = tuple[str, int]  # (mode, permits)


@dataclass
class ClientModel:
    stopped: bool = False  # maybe stopped at a pause point: resumes on its next operation
    ask: Ask | None = None  # what its last acquire asked (a lock that is not a mutex)


@dataclass
class Model:
    clients: dict[str, ClientModel]
    # Clients that asked for the lock since they last let go (maybe refused), oldest first.
    askers: list[str] = field(default_factory=list)
    open_faults: dict[str, str] = field(default_factory=dict)  # ref -> fault, not yet healed
    fired: int = 0  # faults fired so far (pause points, pauses, crashes too): the next ref
    # What the lock grants (the run's capacity, the lock's modes and its most permits per
    # acquire): a mutex's by default.
    capacity: int | None = 1
    modes: tuple[str, ...] = MUTEX_MODES
    max_permits: int | None = None

    @classmethod
    def of(
        cls, clients: list[str], capacity: int | None = 1, modes: Sequence[str] = MUTEX_MODES,
        max_permits: int | None = None,
    ) -> Model:
        return cls({cid: ClientModel() for cid in clients}, capacity=capacity,
                   modes=tuple(modes), max_permits=max_permits)

    def asks(self, cid: str | None = None) -> list[Ask]:
        """Every (mode, permits) an acquire by ``cid`` may ask, most telling first: against
        what the other askers asked (held, for all the model knows), the mode that clashes
        with theirs (exclusive against shared holds, shared against an exclusive one), and
        the fewest permits that overfill the capacity (when nobody asked: all of them), then
        the others from one up. One permit is all an exclusive hold, or a shared one of an
        unbounded lock, asks."""
        others = [self.clients[c].ask for c in self.askers if c != cid]
        held = sum(permits for mode, permits in filter(None, others) if mode == SHARED)
        clash = EXCLUSIVE if held else SHARED if others else None
        modes = sorted(self.modes, key=lambda mode: mode != clash)
        most = 1 if self.capacity is None else min(self.capacity,
                                                   self.max_permits or self.capacity)
        telling = 1 if self.capacity is None else min(max(self.capacity - held + 1, 1), most)
        permits = [telling, *(p for p in range(1, most + 1) if p != telling)]
        return [(mode, p) for mode in modes for p in (permits if mode == SHARED else [1])]

    def next_ref(self) -> str:
        return f"f{self.fired + 1}"

    def open_ref(self, fault: str) -> str | None:
        """The most recent fault ``fault`` that is still on (what its heal step heals)."""
        return next((r for r, f in reversed(self.open_faults.items()) if f == fault), None)

    def pick(self, index: int, kind: str) -> str:
        """The client a ``kind`` step goes to: the ``index``-th (modulo) of every client in
        the order that makes the step most telling. An acquire goes in ``contenders`` order;
        a release, a write or an extend first to the oldest running asker (likely the stale
        holder), then to a stopped client (it resumes first); a pause during a wait to a
        running client (a stopped one would be resumed by its SIGCONT), askers first."""
        if kind == "acquire":
            return self.contenders()[index % len(self.clients)]
        running = [cid for cid in self.clients if not self.clients[cid].stopped]
        stopped = [cid for cid in self.clients if cid not in running]
        askers = [cid for cid in self.askers if cid in running]
        idle = [cid for cid in running if cid not in askers]
        order = askers + idle if kind == "pause" else askers + stopped + idle
        return order[index % len(order)] if order else ""

    def contenders(self) -> list[str]:
        """Every client, in the order in which they are most telling as the next to ask for
        the lock (and in which a ``contend`` step has them all ask): those that have not
        asked, then the askers, latest first (likely refused: they retry), then the stopped
        ones (which resume first: a stopped release's DEL goes through)."""
        stopped = [cid for cid in self.clients if self.clients[cid].stopped]
        askers = [cid for cid in reversed(self.askers) if cid not in stopped]
        idle = [cid for cid in self.clients if cid not in stopped and cid not in askers]
        return idle + askers + stopped

    def apply(self, step: Step) -> None:
        """Advance the model past ``step``."""
        if step.kind in CLIENT_OPS:
            cid = step.client or ""
            if step.kind in ("acquire", "release") and cid in self.askers:
                self.askers.remove(cid)
            if step.kind == "acquire":
                self.askers.append(cid)
                self.clients[cid].ask = None if step.mode is None else (
                    step.mode, step.permits or 1)
            self.clients[cid].stopped = step.stops  # resumed first, maybe stopped again
        elif step.kind == "crash":
            self.clients[step.client or ""] = ClientModel()
            if step.client in self.askers:
                self.askers.remove(step.client)
        elif step.kind == "fault-on":
            assert step.fault is not None and step.ref is not None
            if not explorable()[step.fault].instant:
                self.open_faults[step.ref] = step.fault
        elif step.kind == "fault-off" and step.ref is not None:
            self.open_faults.pop(step.ref, None)
        if step.ref is not None and step.kind != "fault-off":
            self.fired += 1
