"""The fault framework: what a fault is, the parameters it takes, and the catalog of them.

A fault is applied in three steps so the history can say exactly what happened and when:
``params`` draws its parameters from the schedule's seeded RNG, ``aim`` picks a target in the
live run (the current holder, a node the holder counted on, …), ``apply`` breaks something
and returns the function that heals it. The nemesis writes the start event between ``aim``
and ``apply`` and the stop event after healing.

Everything else about a fault is declared on its class, so adding a fault is one class (in
the family it belongs to: ``client_faults``, ``link_faults``, ``server_faults``,
``clock_faults``, listed in ``catalog``; or in a user's module, through ``register``) and
nothing else: its ``effects`` go into its start event for the checker (which knows no fault
by name), and so does its ``evidence``: how the checker tells that a firing did something
to the lock (``report_effect`` writes the event a ``reported`` fault's effect is seen by;
``Target.stakes`` carries what aiming found), ``needs``/``provider_needs``/``persistence``
say what topology it needs, ``client_needs`` what the lock client must be able to do (a
driver that cannot is refused up front), ``stepping`` how the explorer switches it on and
off (``None``: not as an on/off step), and ``parameters`` which ``--faults name:key=value``
overrides it takes (``check_params`` refuses any other, before anything starts).
"""

from __future__ import annotations

import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from chaos import history as h
from chaos.errors import UsageError
from chaos.workload.harness import WorkloadEnv

Heal = Callable[[], None]
FaultT = TypeVar("FaultT", bound="type[Fault]")
# One fault as ``--faults`` names it, with its parameter overrides: ("client-crash",
# {"nth": 2}). A run's faults are a list of them (``Campaign.faults``, ``parse_faults``).
FaultSpec = tuple[str, dict[str, Any]]
AIM_WAIT_S = 1.0  # how long a fault waits for a holder to aim at before picking anyone


def no_heal() -> None:
    """Heal for faults that heal themselves (a crash, a timed pause, a slow section)."""


@dataclass
class Target:
    """Who a fault hits: a client, some nodes, or both. ``describe`` goes into the history."""

    client: str | None = None
    nodes: list[int] = field(default_factory=list)
    fault_id: str = ""  # the firing's id (set when it is recorded): what its effects name
    # What aiming found that makes the firing matter ("n1, n3 carried c2's key"): a fault
    # reports it as its effect when it acts (``report_effect``); empty: nothing known.
    stakes: str = ""

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client is not None:
            out["client"] = self.client
        if self.nodes:
            out["nodes"] = [f"n{i}" for i in self.nodes]
        return out


def wait_for_holder(
    env: WorkloadEnv,
    rng: random.Random,
    timeout_s: float = AIM_WAIT_S,
    acquired_within_ms: float | None = None,
    held_for_ms: float | None = None,
) -> str:
    """The current holder (waiting briefly for one, for one that has just acquired, or for
    one that has held ``held_for_ms`` at least: ``at_work_ms``), else a random live client.
    Asked for a fresh holder or one at work and none came in time, any holder is still
    better than a client that holds nothing: with long critical sections (a 5 s hold) the
    next fresh grant may be seconds away. Never one an earlier fault holds on after its heal
    (``WorkerPool.held_on``): its lease often gone, it sent nothing, and a partition and a
    reset in turn aimed at Redisson's such holder "had no effect on the lock"."""
    def aimable(holders: list[str]) -> list[str]:
        return [cid for cid in holders if not env.pool.held_on(cid)]

    choosy = acquired_within_ms is not None or held_for_ms is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        holders = aimable(env.pool.holders(acquired_within_ms, held_for_ms))
        if holders:
            return rng.choice(sorted(holders))
        time.sleep(0.002)
    holders = aimable(env.pool.holders()) if choosy else []
    return rng.choice(sorted(holders or aimable(list(env.pool.workers)) or env.pool.workers))


def at_work_ms(env: WorkloadEnv, params: dict[str, Any]) -> float | None:
    """How long the holder a fault with ``params`` hits should have held (``wait_for_holder``):
    ``AT_WORK_TTLS`` for one that holds its holder on after the heal (``THEN_WORK``: it is
    there to fail what a holder sends at work), else no matter."""
    return AT_WORK_TTLS * env.config.ttl_ms if THEN_WORK in params else None


@dataclass(frozen=True)
class TTLs:
    """Parameter values as multiples of the TTL (the explorer draws ``round(f × ttl_ms)``)."""

    factors: tuple[float, ...]


@dataclass(frozen=True)
class Stepping:
    """How the explorer makes a fault an on/off step: ``aims_at`` ``client`` (one client's
    links to some nodes), ``nodes`` or ``master`` (the fault picks it when it fires);
    ``instant`` faults heal themselves at once (a crash followed by a restart) and have no
    off step. ``choices`` are the parameter values it draws from, mildest first (a plain
    tuple, or ``TTLs``), so a shrunk program reads "offset +1.5×TTL"."""

    aims_at: str
    instant: bool = False
    choices: dict[str, tuple[Any, ...] | TTLs] = field(default_factory=dict)


@dataclass(frozen=True)
class Param:
    """One parameter a fault takes: its kind (``number``, ``integer`` or ``text``) and the
    values it can apply. A value outside them is refused before the run starts, in one line,
    rather than failing mid-run (or, worse, doing nothing and passing)."""

    kind: str = "number"
    min: float | None = None  # inclusive
    above: float | None = None  # exclusive lower bound
    max: float | None = None  # inclusive
    choices: tuple[Any, ...] = ()
    nonzero: bool = False
    pattern: str | None = None  # text: a regular expression the whole value must match
    shape: str = ""  # text: how the pattern reads to a person

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.kind == "text":
            return self.shape or "text"
        if self.min is not None and self.max is not None:
            bounds = [f"from {_num(self.min)} to {_num(self.max)}"]
        else:
            bounds = [f"> {_num(self.above)}" if self.above is not None else "",
                      f"≥ {_num(self.min)}" if self.min is not None else "",
                      f"≤ {_num(self.max)}" if self.max is not None else ""]
        bounds.append("not 0" if self.nonzero else "")
        what = "an integer" if self.kind == "integer" else "a number"
        return " ".join([what, ", ".join(b for b in bounds if b)]).strip()

    def accepts(self, value: Any) -> bool:
        if self.choices:
            return value in self.choices
        if self.kind == "text":
            return isinstance(value, str) and (
                self.pattern is None or re.fullmatch(self.pattern, value) is not None
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "integer" and not float(value).is_integer():
            return False
        return not (
            (self.above is not None and not value > self.above)
            or (self.min is not None and value < self.min)
            or (self.max is not None and value > self.max)
            or (self.nonzero and value == 0)
        )


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"



DURATION = Param(above=0)  # how long the fault stays on, ms: a fault that is never on tests nothing
ON_ITS_OWN = Param(min=0)  # a fault that heals itself (a crash, a slow section): 0 is fine
# How long, at least, the clients a fault hit go on with the critical section under way after
# its heal, having gone on through it (``chaos.nemesis.link_faults.LinkFault.watched``); the
# next fault waits for it (``chaos.nemesis.generator.quiet_s``). The audit sets it where it
# makes a holder's renewals fail (``chaos.experiments.audit.trials.failing_overrides``).
THEN_WORK = "then_work_ms"
THEN_WORK_MS = Param(min=0)
# ... and it hits a holder that has held this long (``at_work_ms``), past its first extend or
# renewal (a holder extends every TTL/3): one caught at its acquire (the previous hit holder,
# held on, lets go and the next takes the lock just as the fault fires) had extended nothing
# when its extends began to fail, and an extend that loses part of the lease each time it
# succeeds — whole seconds added to a truncated PTTL — never showed under load (2 audits of 2).
AT_WORK_TTLS = 0.5



def takes(**parameters: Param) -> Mapping[str, Param]:
    """A fault class's ``parameters``, read-only: the class shares them with every instance."""
    return MappingProxyType(parameters)


class Fault(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    effects: ClassVar[frozenset[str]]  # chaos.history.EFFECTS: what the checker may conclude
    # chaos.history.EVIDENCE: what shows that a firing did something to the lock
    evidence: ClassVar[str] = h.ACTIVITY
    stepping: ClassVar[Stepping | None] = None  # how the explorer steps it (None: it does not)
    # "any", or "replicated": a master with replicas to fail over to (sentinel or cluster)
    needs: ClassVar[str] = "any"
    persistence: ClassVar[str] = "none"  # what the data nodes must be started with
    # What it asks of the topology's provider beyond Toxiproxy (chaos.topology.base):
    # a provider that cannot do it refuses the fault before anything starts.
    provider_needs: ClassVar[frozenset[str]] = frozenset()
    # It moves client clocks: every client of its run then starts under libfaketime
    # (chaos.workload.clocks), which a campaign sets up before the clients start.
    fakes_client_clocks: ClassVar[bool] = False
    # What it asks of the lock client (chaos.locks.contract: PAUSE_POINTS, FAKED_CLOCK): every
    # Python lock can do it all; a driver that does not announce it refuses the fault before
    # anything starts.
    client_needs: ClassVar[frozenset[str]] = frozenset()
    # The overrides it takes (``--faults name:key=value``); the keys ``params`` draws.
    parameters: ClassVar[Mapping[str, Param]] = takes(duration_ms=DURATION)
    # How long a firing may take from its start until it acts on the lock (a failover waits
    # for a replica's promotion): a short run that is to see what follows lasts this longer.
    acts_after_s: ClassVar[float] = 0.0

    @classmethod
    def check_params(cls, overrides: dict[str, Any]) -> None:
        """``UsageError`` (one line) for an override this fault does not take, or a value it
        cannot apply: an unknown key, a wrong type, a duration that is not positive."""
        for key, value in overrides.items():
            param = cls.parameters.get(key)
            if param is None:
                known = ", ".join(sorted(cls.parameters)) or "no parameters"
                raise UsageError(f"fault {cls.name} has no parameter {key!r}; it takes {known}")
            if not param.accepts(value):
                raise UsageError(
                    f"fault {cls.name}: {key} must be {param.describe()} (got {value!r})"
                )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        """Parameters for one occurrence; ``duration_ms`` is how long it stays on."""
        return {"duration_ms": round(rng.uniform(1.0, 2.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(client=wait_for_holder(env, rng, held_for_ms=at_work_ms(env, params)))

    def evidence_for(self, env: WorkloadEnv, target: Target) -> str:
        """The evidence this firing's start event declares: the class's ``evidence``, unless
        the fault cannot see its effect at ``target`` (then ``activity``, never a claim of
        ``reported`` that no event could back)."""
        return self.evidence

    @abstractmethod
    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal: ...


# -- client process faults ---------------------------------------------------------------


def report_effect(env: WorkloadEnv, target: Target, what: str) -> None:
    """Write the ``effect`` event that shows a ``reported`` fault's firing did something."""
    env.history.log(h.INFO, h.NEMESIS, h.EFFECT, value={"id": target.fault_id, "what": what})



FAULTS: dict[str, Fault] = {}


def register(cls: FaultT) -> FaultT:
    """Add a fault class to the catalog (``--faults``, ``lockchaos list``, the explorer):
    the bundled ones (``chaos.nemesis.catalog``), and any a user or a test defines."""
    if not getattr(cls, "effects", None) or not all(e in h.EFFECTS for e in cls.effects):
        raise ValueError(f"{cls.__name__} must declare effects from chaos.history.EFFECTS")
    if cls.evidence not in h.EVIDENCE:
        raise ValueError(f"{cls.__name__}.evidence must be one of {h.EVIDENCE}")
    FAULTS[cls.name] = cls()
    return cls
