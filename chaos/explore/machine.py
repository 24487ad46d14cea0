"""The Hypothesis state machine: its rule draws steps from the model, the session runs them,
and the invariant is the checker's verdict on the history so far.

The rule draws each step from the in-memory ``Model`` alone and hands it to the session; what
the step's operation returned is written down for the printed program, never looked at by
the rule. So the same choices always make the same program, whatever Redis answered and
whatever the scheduler did to the timing — which is what lets Hypothesis replay a program.
The program that breaks the lock is then shrunk on its concrete steps (``shrink.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from chaos import checker
from chaos.checker import Verdict
from chaos.checker.verdict import INCONCLUSIVE, RANK
from chaos.explore.fault_steps import (
    CLIENT_CRASH,
    SHARED_STOP_POINTS,
    SLEEP_TTLS,
    STOP_POINTS,
    explorable,
    fault_on_step,
)
from chaos.explore.program import CLIENT_OPS, Program, Step
from chaos.explore.session import Session
from chaos.nemesis.fault import FaultSpec
from chaos.nemesis.generator import Drawn


@dataclass(frozen=True)
class Failure:
    """A program that broke the lock, what each step returned, and its whole history."""

    program: Program
    outcomes: list[str]
    verdict: Verdict
    history: bytes


class TimeUp(KeyboardInterrupt):
    """The exploration's time is up (``Exploration.until``): raised before an example starts
    (never while Hypothesis plays a failing one again). A ``KeyboardInterrupt`` because that
    is what Hypothesis lets through untouched: any other exception it takes for a failure
    and plays again. The exploration ends with the examples run so far."""


class ViolationFound(AssertionError):
    """The checker found a violation at or above ``fail_on`` in the history so far."""

    def __init__(self, verdict: Verdict, steps: int) -> None:
        first = verdict.explanations[0] if verdict.explanations else verdict.verdict
        super().__init__(f"after step {steps}: {first}")


@dataclass
class Exploration:
    """What the examples of one exploration share: where histories go, what was found;
    ``until`` (``time.monotonic()``), when no further example may start."""

    session: Session
    workdir: Path
    fail_on: str = "hard"
    faults: list[FaultSpec] = field(default_factory=list)
    examples: int = 0
    started: float = field(default_factory=time.monotonic)
    found_s: float | None = None
    failure: Failure | None = None  # the first program that broke the lock
    programs: list[Program] = field(default_factory=list)  # every example's, in order
    until: float | None = None
    # Whether the examples exercised the lock at all: their lock cycles, summed, and the
    # first one's reason for testing nothing (``Verdict.inconclusive_reasons``), if any.
    lock_cycles: int = 0
    untested: str | None = None

    @property
    def history_path(self) -> Path:
        return self.workdir / "history.jsonl"

    def found(self, failure: Failure) -> None:
        if self.failure is None:
            self.found_s = time.monotonic() - self.started
            self.failure = failure


def mostly(usual: Any, *others: Any) -> st.SearchStrategy[Any]:
    """``usual`` three times in four, else one of ``others``: a story is a handful of
    choices in a row, and each one is then likelier to be its own."""
    return st.sampled_from((usual,) * (3 * len(others) or 1) + others)


class LockProgram(RuleBasedStateMachine):
    """One example: a fresh history and fresh clients on the exploration's topology.

    There is one rule, ``step``, which draws the kind of step itself: Hypothesis's swarm
    testing switches whole rules off per example, and a program without releases, say, can
    never tell a stale release's story. Any step may follow any other (see
    ``chaos.explore.model``); the client a step goes to is drawn as a position in the
    model's most telling order, so random programs tell stories often enough to be found in
    tens of examples rather than thousands.
    """

    exploration: ClassVar[Exploration]

    def __init__(self) -> None:
        super().__init__()
        ex = self.exploration
        # Not once a program failed: Hypothesis is playing it again, and must draw the same.
        if ex.until is not None and ex.failure is None and time.monotonic() >= ex.until:
            raise TimeUp
        self.session = ex.session
        self.steps: list[Step] = []
        self.outcomes: list[str] = []
        self.failed = False
        self.faults = [(n, o) for n, o in ex.faults if n != CLIENT_CRASH]
        self.healable = [n for n, _ in self.faults if not explorable()[n].instant]
        # Operations five times as often as waits: a story is a few operations per wait.
        self.kinds = ["contend", "contend", "acquire", "release", "release", "sleep"]
        if RANK[ex.fail_on] <= RANK["data"]:  # writes only matter to lost updates
            self.kinds.append("write")
        if self.session.can_extend:
            self.kinds.append("extend")
        if len(self.faults) < len(ex.faults):
            self.kinds.append("crash")
        if self.faults:
            self.kinds += ["fault-on", "fault-on"]
        if self.healable:
            self.kinds.append("fault-off")
        # The client a step goes to, as an index into the model's most telling order.
        self.client_index = mostly(*range(len(self.session.clients)))
        # A lock that is not a mutex: each acquire also draws its ask (a mutex's draws
        # nothing more, so its programs are the ones they always were), and may stop at
        # more points (where a count and its add come apart).
        self.shared = not self.session.config.mutex
        self.stop_points = {**STOP_POINTS, **(SHARED_STOP_POINTS if self.shared else {})}
        ex.examples += 1
        self.session.begin(ex.history_path)

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """Draw one step from the model and run it — unless the exploration's time is up
        (``Exploration.until``): an example at a 1 s TTL runs for seconds, and one begun just
        in time took the audit 6 s past its budget. Its teardown still ends it."""
        ex = self.exploration
        if ex.until is not None and ex.failure is None and time.monotonic() >= ex.until:
            raise TimeUp
        model = self.session.model
        kind = data.draw(st.sampled_from(self.kinds))
        if kind in CLIENT_OPS:
            client = model.pick(data.draw(self.client_index), kind)
            point = data.draw(st.sampled_from(self.stop_points.get(kind, (None,))))
            step = Step(kind, client, **self._ask(data, kind, client))
            if point is not None:  # it stops there, until its next step
                step = replace(step, ref=model.next_ref(), params={**point, "op": kind})
        elif kind == "contend":
            order = model.contenders()
            step = Step("contend", params={"order": order}, **self._ask(data, kind, None))
        elif kind == "sleep":
            ttls = data.draw(mostly(*SLEEP_TTLS))
            paused = data.draw(mostly(None, 0))  # a GC pause of the client, meanwhile
            who = None if paused is None else model.pick(paused, "pause") or None
            step = Step("sleep", who, ttls=ttls, ref=model.next_ref() if who else None)
        elif kind == "crash":
            victim = model.pick(data.draw(self.client_index), kind)
            step = Step("crash", victim, ref=model.next_ref())
        elif kind == "fault-on":
            choices = Drawn(data.draw)
            shape = self.session.shape
            step = fault_on_step(choices, choices.pick(self.faults), ref=model.next_ref(),
                                 ttl_ms=shape.ttl_ms, clients=self.session.clients,
                                 nodes=shape.nodes)
        else:
            name = Drawn(data.draw).pick(self.healable)
            step = Step("fault-off", fault=name, ref=model.open_ref(name))
        self.steps.append(step)
        self.outcomes.append(self.session.run(step))

    def _ask(self, data: st.DataObject, kind: str, client: str | None) -> dict[str, Any]:
        """The mode and permits an acquire (or each of a contend's) asks of a lock that is not
        a mutex, drawn in the model's most telling order; nothing for a mutex's."""
        if not self.shared or kind not in ("acquire", "contend"):
            return {}
        mode, permits = data.draw(mostly(*self.session.model.asks(client)))
        return {"mode": mode, "permits": permits}

    # -- the invariant ----------------------------------------------------------------------

    @invariant()
    def lock_holds(self) -> None:
        if self.steps:
            self._judge(self.session.verdict())

    def _judge(self, verdict: Verdict) -> None:
        if checker.fails(verdict, self.exploration.fail_on):
            self.failed = True
            raise ViolationFound(verdict, len(self.steps))

    def teardown(self) -> None:
        """Finish the history (heal, final read: lost writes are judged here) and keep it."""
        ex = self.exploration
        verdict = self.session.end()
        program = self.session.shape.with_steps(self.steps)
        ex.programs.append(program)
        ex.lock_cycles += verdict.counts.get("lock_cycles", 0)
        if ex.untested is None and verdict.verdict == INCONCLUSIVE:
            ex.untested = verdict.inconclusive_reasons[0]
        if self.failed or checker.fails(verdict, ex.fail_on):
            ex.found(Failure(program, self.outcomes, verdict, ex.history_path.read_bytes()))
        if not self.failed:
            self._judge(verdict)


def machine_for(exploration: Exploration) -> type[LockProgram]:
    """A ``LockProgram`` bound to ``exploration`` (Hypothesis instantiates it per example)."""
    return type("LockProgram", (LockProgram,), {"exploration": exploration})
