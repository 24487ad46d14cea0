"""The one generator of fault timing: which fault fires when, with which parameters.

Every producer of fault timing goes through it, as every nemesis of Jepsen goes through its
one generator protocol: a campaign's seeded schedule (``generate``: ``lockchaos run``, and
every campaign of ``compare``, the demo and an audit), the schedules ``run --search`` tries
(``chaos.experiments.search``), the faults ``explore`` switches on and off as steps
(``chaos.explore.fault_steps``) and an audit's trial planner (``chaos.experiments.audit.trials``:
its campaigns' schedules are seeded ones, and it orders its pairs of faults by a seed too).

It takes every choice from a ``Choices``: ``Seeded`` (a ``random.Random``: the same seed makes
the same schedule, so a run's ``campaign.json`` makes its ``schedule.json`` again) or
``Drawn`` (a Hypothesis draw: each choice shrinks, towards fewer faults, each the mildest).
What it makes of them:

* ``timed``: firings laid out in time (``FaultEvent``), the first early (``FIRST_AT_S``), each
  after the previous one's end and a quiet gap (``GAP_TTLS``; never shorter than the work a
  firing asks of the holder it hit after its heal, ``then_work_ms``), until the run is over. Which
  fault takes each turn is a ``Turns``: ``rounds`` (every fault once a round, in a seeded
  shuffle or in the order given, for as long as the run lasts: a seeded schedule) or
  ``picks`` (a fault chosen each turn, for as many turns as the choices go on: a search, which
  can then shrink to the one fault that matters, repeated);
* ``firing``: a timed firing's parameters — the fault's own ``Fault.params``, drawn from the
  choices, under the overrides ``--faults`` gives;
* ``switched_on``: a fault's parameters as an on/off step, from its ``Stepping`` choices (no
  duration: it stays on until its off step).
"""

from __future__ import annotations

import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

from chaos.nemesis.fault import FAULTS, THEN_WORK, FaultSpec, TTLs
from chaos.nemesis.schedule import FaultEvent, Schedule

T = TypeVar("T")
# How Hypothesis draws a value: a composite strategy's ``draw``, or ``st.data()``'s.
Draw = Callable[[st.SearchStrategy[Any]], Any]

FIRST_AT_S = (0.2, 0.6)  # the first fault comes early: faster to a verdict
GAP_TTLS = (2.0, 5.0)  # quiet time between one fault's end and the next one's start
MAX_FIRINGS = 10_000  # a schedule is bounded in count as well as by the run's duration
MIN_GAP_SHARE = 0.1
LAST_START_SHARE = 0.8  # the first round's last fault starts before this share of the run
DIALS = 2  # numbers drawn per firing for a fault's parameters, used in turn (more stall the
# shrinker)
# Whether ``picks`` takes another turn: five times in six (about as many turns as a
# Hypothesis list of 1 to 12 has), shrinking to "no" (fewer faults).
ANOTHER = (False, True, True, True, True, True)


class Choices(ABC):
    """Where a generator takes its choices from."""

    @abstractmethod
    def uniform(self, low: float, high: float) -> float:
        """A number from ``low`` to ``high``."""

    @abstractmethod
    def pick(self, options: Sequence[T]) -> T:
        """One of ``options``."""

    @abstractmethod
    def shuffle(self, items: list[Any]) -> None:
        """Put ``items`` in an order of its choosing, in place."""

    @abstractmethod
    def fault_random(self) -> random.Random:
        """What a fault's own ``params`` draws from (``Fault.params`` takes a ``Random``)."""


class Seeded(Choices):
    """Choices from ``random.Random(seed)``: the same seed, the same choices, in order."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uniform(self, low: float, high: float) -> float:
        return self.rng.uniform(low, high)

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    def shuffle(self, items: list[Any]) -> None:
        self.rng.shuffle(items)

    def fault_random(self) -> random.Random:
        return self.rng


class Drawn(Choices):
    """Choices Hypothesis draws (``draw``: a composite strategy's, or ``st.data()``'s), so
    they shrink: a number towards its low end, a pick towards the first option."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw

    def uniform(self, low: float, high: float) -> float:
        return float(self.draw(st.floats(low, high)))

    def pick(self, options: Sequence[T]) -> T:
        picked: T = self.draw(st.sampled_from(options))
        return picked

    def shuffle(self, items: list[Any]) -> None:
        items[:] = self.draw(st.permutations(items))

    def fault_random(self) -> random.Random:
        return _Dials([float(self.draw(st.floats(0, 1, exclude_max=True)))
                       for _ in range(DIALS)])


class _Dials(random.Random):
    """A ``Random`` whose every draw comes from a list of numbers in [0, 1) Hypothesis drew
    (in turn, cycling), so a fault's ``params`` shrink with them: towards 0, that is towards
    the low end of every ``uniform`` and the first of every ``choice``."""

    def __init__(self, dials: list[float]) -> None:
        super().__init__(0)
        self._dials = dials
        self._next = 0

    def random(self) -> float:
        value = self._dials[self._next % len(self._dials)]
        self._next += 1
        return value

    def _randbelow(self, n: int) -> int:  # what choice, randrange and sample draw with
        return int(self.random() * n)


# Which fault takes each turn: an iterator of ``specs`` (ending when no more turns come).
Turns = Callable[[list[FaultSpec], Choices], Iterator[FaultSpec]]


def rounds(in_order: bool = False) -> Turns:
    """Every fault once a round, round after round: in a shuffled order (shuffled once, when
    the turns begin), or in the order given (``--faults-in-order``: a pause point armed before
    the fault that makes the lock reach it)."""

    def turns(specs: list[FaultSpec], choices: Choices) -> Iterator[FaultSpec]:
        order = list(specs)
        if not in_order:
            choices.shuffle(order)
        return itertools.cycle(order)

    return turns


def picks(most: int) -> Turns:
    """A fault chosen each turn, at most ``most`` turns: after the first, each comes only if
    the choices say another does (``ANOTHER``)."""

    def turns(specs: list[FaultSpec], choices: Choices) -> Iterator[FaultSpec]:
        for turn in range(most):
            if turn and not choices.pick(ANOTHER):
                return
            yield choices.pick(specs)

    return turns


def firing(spec: FaultSpec, choices: Choices, ttl_ms: int) -> dict[str, Any]:
    """A timed firing's parameters: what the fault draws (``Fault.params``), under the
    overrides of ``spec``."""
    name, overrides = spec
    return {**FAULTS[name].params(choices.fault_random(), ttl_ms), **overrides}


def switched_on(spec: FaultSpec, choices: Choices, ttl_ms: int) -> dict[str, Any]:
    """A fault's parameters as an on/off step: one of its ``Stepping`` choices for each (TTL
    multiples rounded to ms), under the overrides of ``spec``."""
    name, overrides = spec
    stepping = FAULTS[name].stepping
    if stepping is None:
        raise ValueError(f"{name} is not switched on and off as a step (it has no stepping)")
    drawn = {
        key: choices.pick([round(f * ttl_ms) for f in values.factors]
                          if isinstance(values, TTLs) else list(values))
        for key, values in stepping.choices.items()
    }
    return {**drawn, **overrides}


_Part = tuple[str, dict[str, Any], float]  # fault, parameters, quiet gap after it (s)


def timed(specs: list[FaultSpec], choices: Choices, turns: Turns, *, ttl_ms: int,
          duration_s: float) -> Iterator[FaultEvent]:
    """Firings of ``specs`` laid out in a run of ``duration_s``: the first early, then each
    after the previous one's end and a quiet gap, until the run is over (or the turns are).

    Every fault of the first round gets its turn: when that round would not fit in the run
    at the usual quiet gaps (a short run with several faults), its gaps shrink (to
    ``MIN_GAP_SHARE`` of theirs at most) — a fault that never fires tested nothing, and the
    checker calls such a run inconclusive. The choices are the same either way, so a
    schedule that fits is exactly what it always was."""
    if not specs:
        return
    order = turns(specs, choices)
    first_at = choices.uniform(*FIRST_AT_S)

    def parts() -> Iterator[_Part]:
        for spec in order:
            params = firing(spec, choices, ttl_ms)
            yield spec[0], params, choices.uniform(*GAP_TTLS) * ttl_ms / 1000

    drawn = parts()
    first_round = list(itertools.islice(drawn, len(specs)))
    squeeze = _first_round_squeeze(first_round, first_at, duration_s)
    laid = itertools.chain(first_round, drawn)
    at, fired = first_at, 0
    # A firing is at its time in ms (``FaultEvent.at_s``): one rounded up to the run's end
    # would come as the run stops, and test nothing.
    while round(at, 3) < duration_s and fired < MAX_FIRINGS:
        part = next(laid, None)  # drawn only now: no choice is spent past the run's end
        if part is None:
            return
        name, params, gap = part
        fired += 1
        yield FaultEvent(round(at, 3), name, params)
        scale = squeeze if fired <= len(specs) else 1.0
        at += float(params.get("duration_ms", 0)) / 1000 + quiet_s(params, gap * scale)


def quiet_s(params: dict[str, Any], gap_s: float) -> float:
    """The quiet time after a firing with ``params``: ``gap_s``, and never less than the work
    it asks of the holder it hit after the heal (``then_work_ms``): a next fault that came
    meanwhile hit the same holder, whose watchdog the first had killed — it sent nothing
    ("partition had no effect on the lock"), and no quiet stretch showed the dead
    watchdog."""
    return max(gap_s, float(params.get(THEN_WORK, 0)) / 1000)


def _first_round_squeeze(first_round: list[_Part], first_at: float, duration_s: float) -> float:
    """The factor on the first round's gaps that lets its last fault start within
    ``LAST_START_SHARE`` of the run (1.0 when it already does)."""
    before_last = first_round[:-1]
    busy = sum(float(params.get("duration_ms", 0)) / 1000 for _, params, _ in before_last)
    gaps = sum(quiet_s(params, gap) for _, params, gap in before_last)
    if not gaps or first_at + busy + gaps < LAST_START_SHARE * duration_s:
        return 1.0
    room = LAST_START_SHARE * duration_s - first_at - busy
    return max(MIN_GAP_SHARE, min(1.0, room / gaps))


def generate(specs: list[FaultSpec], *, seed: int, duration_s: float, ttl_ms: int,
             in_order: bool = False) -> Schedule:
    """A campaign's seeded schedule: ``specs`` take turns in rounds (a seeded shuffle, or in
    the order given: ``in_order``) until the run is over. Same seed, same schedule."""
    return Schedule(seed, tuple(timed(specs, Seeded(seed), rounds(in_order), ttl_ms=ttl_ms,
                                      duration_s=duration_s)), first_round=len(specs))
