"""A step program: the unit the explorer generates, shrinks, prints and replays.

A ``Step`` is one thing that happens — one operation of one client (which may stop at a
pause-injection point on the way), a wait of some TTLs (during which a client may be paused,
like a stop-the-world GC), a fault switched on or off. A ``Program`` is a lock, a topology,
how its clients run (``campaign``: the campaign its session runs) and a list of steps; it is
plain data (``to_json``/``from_json``) so the failing one goes into the run directory and a
replay test rebuilds it exactly.

Time passes only in ``sleep`` steps, in multiples of the TTL: every other step is done as
fast as the machine allows, so whether a key expired between two steps depends on the
program, not on the scheduler.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from chaos.campaign import Campaign, Layout
from chaos.history import EXCLUSIVE

CLIENT_OPS = ("acquire", "release", "extend", "write")
STEP_KINDS = (*CLIENT_OPS, "contend", "sleep", "crash", "fault-on", "fault-off")
# A program's clients do what its steps say and nothing else: no work of their own, no extend
# while working, no nested acquire (its session's campaign says so, and so its start event).
STEPPED: dict[str, Any] = {"work_ms": 0.0, "extend_during_work": False, "nest_depth": 1}
SESSION_S = 3600.0  # a session's clients run until its example ends: its steps end it


@dataclass(frozen=True)
class Step:
    """One step.

    ``ref`` names the fault a step fires (``f3``: a pause point, a pause, a crash, a fault
    switched on) or the fault it heals. ``params`` are the fault's parameters — for a client
    operation, the pause point it stops at (``{"command": "DEL", "op": "release"}``), if
    any; for ``contend``, the ``order`` in which the clients ask for the lock, one acquire
    each (as workers that all want it do). A ``sleep`` with a ``client`` pauses that client
    while it waits. ``nodes`` are node indexes. ``mode`` and ``permits`` are what an
    ``acquire`` (each acquire of a ``contend``) asks of a lock that is not a mutex; a mutex's
    acquire asks nothing (None: its steps read and replay as before they existed).
    """

    kind: str
    client: str | None = None
    ttls: float | None = None  # sleep
    fault: str | None = None  # fault-on, fault-off
    ref: str | None = None
    nodes: tuple[int, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    mode: str | None = None  # acquire, contend: shared or exclusive
    permits: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in STEP_KINDS:
            raise ValueError(f"unknown step kind {self.kind!r}; expected one of {STEP_KINDS}")

    @property
    def stops(self) -> bool:
        """A client operation with a pause point: the client stops on the way."""
        return self.kind in CLIENT_OPS and bool(self.params)

    def describe(self, ttl_ms: int) -> str:
        """The step in words: ``c1 acquires the lock``, ``wait 1.5×TTL (225 ms)``…"""
        c = self.client
        if self.kind in CLIENT_OPS:
            action = {
                "acquire": f"acquires {self.asked()}",
                "release": "releases the lock",
                "extend": "extends its lease",
                "write": "updates the resource (read, append, write back)",
            }[self.kind]
            stop = f", stopping {describe_point(self.params)} [{self.ref}]" if self.stops else ""
            return f"{c} {action}{stop}"
        if self.kind == "contend":
            return f"{', '.join(self.params['order'])} ask for {self.asked()}, in that order"
        if self.kind == "sleep":
            assert self.ttls is not None
            paused = f" with {c} paused (SIGSTOP, a stop-the-world GC) [{self.ref}]" if c else ""
            return f"wait {self.ttls:g}×TTL ({self.ttls * ttl_ms:.0f} ms){paused}"
        if self.kind == "crash":
            return f"kill {c} (SIGKILL); a fresh {c} takes its place [{self.ref}]"
        if self.kind == "fault-on":
            return f"{self.fault} {self.ref} on {self._target()}{self._params(ttl_ms)}"
        return f"heal {self.ref} ({self.fault})" if self.ref else f"heal the {self.fault}"

    @property
    def ask(self) -> dict[str, Any] | None:
        """What the acquire asks of a lock that is not a mutex (``acquire(**ask)``); None: a
        mutex's ``acquire()``."""
        return None if self.mode is None else {"mode": self.mode, "permits": self.permits or 1}

    def asked(self) -> str:
        """``the lock``, ``2 shared permits``, ``the lock exclusively``."""
        if self.mode is None:
            return "the lock"
        if self.mode == EXCLUSIVE:
            return "the lock exclusively"
        permits = self.permits or 1
        return f"{permits} {self.mode} permit{'s' * (permits != 1)}"

    def _target(self) -> str:
        nodes = ", ".join(f"n{i}" for i in self.nodes) or "the master"
        return f"{self.client}'s links to {nodes}" if self.client else nodes

    def _params(self, ttl_ms: int) -> str:
        shown = [
            f"{key}={value:+g} ({value / ttl_ms:+g}×TTL)"
            if key == "offset_ms"
            else f"{key}={value}"
            for key, value in self.params.items()
        ]
        return f": {', '.join(shown)}" if shown else ""

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value not in (None, (), {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        return cls(**{**data, "nodes": tuple(data.get("nodes", ()))})


def describe_point(point: dict[str, Any]) -> str:
    """``before its DEL``, ``before its first command``, ``between its commands 1 and 2``."""
    command, nth = point["command"], point.get("nth", 1)
    if command != "*":
        return f"before its {command}"
    if nth <= 1:
        return "before its first command"
    return f"between its commands {nth - 1} and {nth}"


@dataclass(frozen=True)
class Program:
    """A lock, the topology it runs on, the clients, the permits the lock was created with
    (``--capacity``, or its own; None: unbounded; a mutex's, and a program's written before
    there were others, 1), how its clients run (``STEPPED``: ``work_ms``,
    ``extend_during_work``, ``nest_depth``) and whether the campaign holds the lock to
    renewing (``--renews``), and the steps. A program written before those were kept reads
    as one with their defaults, which is how it ran."""

    lock: str
    ttl_ms: int
    clients: int
    topology: str
    nodes: int
    persistence: str = "none"
    steps: tuple[Step, ...] = ()
    capacity: int | None = 1
    work_ms: float = STEPPED["work_ms"]
    extend_during_work: bool = STEPPED["extend_during_work"]
    nest_depth: int = STEPPED["nest_depth"]
    renews: bool = False

    @classmethod
    def of(cls, campaign: Campaign, layout: Layout) -> Program:
        """The shape (no steps yet) of the programs that explore ``campaign`` on ``layout``:
        its lock, TTL, clients, the permits its clients' lock has, whether it holds the lock
        to renewing — and clients that do only what the steps say (``STEPPED``), whatever
        the campaign says of a free-running holder's work."""
        return cls(
            lock=campaign.lock, ttl_ms=campaign.ttl_ms, clients=campaign.clients,
            topology=layout.kind, nodes=layout.nodes, persistence=layout.persistence,
            capacity=campaign.workload().capacity, renews=campaign.renews, **STEPPED,
        )

    def campaign(self) -> Campaign:
        """The campaign its session runs (``Session``: its clients' workload, checked)."""
        return Campaign(
            lock=self.lock, ttl_ms=self.ttl_ms, clients=self.clients, topology=self.topology,
            nodes=self.nodes, capacity=self.capacity, work_ms=self.work_ms,
            extend_during_work=self.extend_during_work, nest_depth=self.nest_depth,
            renews=self.renews, duration_s=SESSION_S,
        )

    def with_steps(self, steps: list[Step] | tuple[Step, ...]) -> Program:
        return replace(self, steps=tuple(steps))

    def numbered(self, outcomes: list[str] | None = None) -> list[str]:
        """``1. c1 acquires the lock → granted``, one line per step."""
        lines = []
        for i, step in enumerate(self.steps):
            outcome = outcomes[i] if outcomes and i < len(outcomes) else ""
            arrow = f" → {outcome}" if outcome else ""
            lines.append(f"{i + 1}. {step.describe(self.ttl_ms)}{arrow}")
        return lines

    def to_json(self) -> dict[str, Any]:
        data = {**asdict(self), "steps": [step.to_json() for step in self.steps]}
        if self.capacity == 1:  # a mutex's program, as it was written before other locks
            del data["capacity"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        """The program in ``data`` (other keys, such as a run's outcomes, are ignored)."""
        known = {f.name for f in fields(cls)} - {"steps"}
        steps = tuple(Step.from_json(step) for step in data.get("steps", ()))
        return cls(**{key: data[key] for key in known & data.keys()}, steps=steps)
