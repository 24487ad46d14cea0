"""A campaign: what one run is — the lock, its faults and every knob that changes what
happens — declared once.

Each field of ``Campaign`` carries a ``Knob``: its command-line flag, help, bounds or choices.
From that one declaration come the options of ``run``, ``compare``, ``audit`` and ``explore``
(``chaos.commands.campaign_options``) and of the pytest plugin, ``validate``'s one-line
errors, ``campaign.json`` (msgspec: ``chaos.campaign.rundir``) and the ``lockchaos run``
command a report prints to replay a run (``options``). A new option is one field here, plus
its use.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, get_args, get_type_hints

import msgspec

from chaos.campaign.layout import TOPOLOGIES, choose_layout
from chaos.checker import VIOLATION_KINDS
from chaos.errors import UsageError
from chaos.lockspec import LockSpec, resolve
from chaos.nemesis import FAULTS, Fault, FaultSpec, parse_faults
from chaos.topology import PROVIDERS, check_provider
from chaos.topology.images import SERVERS
from chaos.workload.worker import WorkloadConfig

WORK_TTL_SHARE = 0.25  # a holder works a quarter of the TTL unless told otherwise
RENEWING_WORK_TTL_SHARE = 1.0  # … a whole TTL for a lock that renews in the background


def fault_spec(name: str, overrides: dict[str, Any]) -> str:
    """One fault as ``--faults`` spells it: ``client-crash:nth=2``."""
    return ":".join([name, *(f"{key}={value}" for key, value in overrides.items())])


def _faults_text(faults: list[FaultSpec]) -> str:
    return ",".join(fault_spec(name, overrides) for name, overrides in faults)


def _path_text(path: str | os.PathLike[str] | None) -> str | None:
    return str(path) if path else None


@dataclass(frozen=True)
class Knob:
    """How one field of ``Campaign`` is given on a command line, and what values it takes.

    ``low``/``high`` bound a number (``above``: strictly above ``low``), ``choices`` a text;
    ``off`` is a boolean's flag for False (None: the flag alone, False by default). A field
    whose command-line value is not the campaign's own says how to read it (``parse``: the
    command line's value → the field's) and how to write it back (``text``), with the
    command-line ``type`` and ``default`` (``--nodes 0`` is None: what the lock needs)."""

    flag: str
    help: str = ""
    low: float | None = None
    high: float | None = None
    above: bool = False
    unit: str = ""
    choices: Sequence[str] = ()
    off: str | None = None
    type: Any = None  # the command line's type (None: the field's)
    default: Any = None  # the command line's default when ``type`` is given
    parse: Callable[[Any], Any] | None = None
    text: Callable[[Any], str | None] = str
    click: dict[str, Any] = field(default_factory=dict)  # more of ``typer.Option``'s keywords

    def check(self, value: Any) -> None:
        """``UsageError`` (one line, naming the flag) for a value out of bounds."""
        if value is None:
            return
        if self.choices and value not in self.choices:
            raise UsageError(f"{self.flag} must be one of {', '.join(self.choices)} "
                             f"(got {value!r})")
        too_low = self.low is not None and (value <= self.low if self.above else value < self.low)
        if too_low or (self.high is not None and value > self.high):
            raise UsageError(f"{self.flag} must be between {self.low:g} and {self.high:g}"
                             f"{self.unit} (got {value:g})")

    def words(self, value: Any) -> list[str]:
        """The command-line words that give ``value`` ([] for None, or a default-false flag)."""
        if isinstance(value, bool):
            flag = self.flag if value else self.off
            return [flag] if flag else []
        shown = None if value is None else self.text(value)
        return [self.flag, shown] if shown else []


class Campaign(msgspec.Struct, frozen=True, dict=True):
    """What a run is: the lock, its faults and every knob that changes what happens — the one
    record every way of running a lock starts from (``run``, ``compare``, ``audit``,
    ``explore`` and its programs, the pytest plugin, the Compose demo): its clients' workload
    is ``workload()``'s, and ``validate`` refuses what a run of it would.

    ``campaign.json`` holds it, and the report prints the ``lockchaos run`` command that
    rebuilds it (``options``). (``dict=True``: room for ``lock_spec``, resolved once.)"""

    lock: Annotated[str, Knob("--lock", "bundled lock name or module:attr")]
    faults: Annotated[list[FaultSpec], Knob(
        "--faults", "comma-separated faults (lockchaos list), each with its overrides as "
        "name:key=value", type=str, default="", parse=parse_faults, text=_faults_text,
    )] = []
    faults_in_order: Annotated[bool, Knob(
        "--faults-in-order", "the faults take turns in the order --faults lists them, not in a "
        "seeded shuffle: a pause point armed before the fault that makes the lock reach it "
        "(client-pause-at:command=SCRIPT:client=*,script-flush)",
    )] = False
    topology: Annotated[str, Knob(
        "--topology", "auto, standalone, sentinel or cluster (not external)", choices=TOPOLOGIES
    )] = "auto"
    provider: Annotated[str, Knob(
        "--provider", "who runs the topology: local (processes on 127.0.0.1), docker (compose/) "
        "or external (servers named in --provider-config); see docs/providers.md",
        choices=PROVIDERS,
    )] = "local"
    provider_config: Annotated[str | None, Knob(
        "--provider-config", "TOML file naming the servers and the Toxiproxy for --provider "
        "external", type=Path | None, parse=_path_text, click={"dir_okay": False},
    )] = None
    # The Redis-compatible server (chaos.topology.images.SERVERS); None: the provider's
    # default. Other than redis-7.0 only the docker provider runs one.
    server: Annotated[str | None, Knob(
        "--server", f"the Redis-compatible server: {', '.join(SERVERS)} (lockchaos's images, "
        "docs/images.md; --provider docker; local runs redis-7.0 only). Default: the provider's",
    )] = None
    nodes: Annotated[int | None, Knob(
        "--nodes", "masters for standalone (0: what the lock needs)", type=int, default=0,
        parse=lambda n: n or None,
    )] = None
    clients: Annotated[int, Knob("--clients", "client processes", low=1, high=64)] = 5
    duration_s: Annotated[float, Knob(
        "--duration", "seconds", low=0, above=True, high=3600, unit=" s"
    )] = 20.0
    ttl_ms: Annotated[int, Knob("--ttl-ms", "the lock's TTL", low=10, high=600_000)] = 200
    work_ms: Annotated[float | None, Knob(
        "--work-ms", "time a holder works on the resource (default: a quarter of the TTL; "
        "the whole TTL for a lock that renews its lease in the background)",
        low=0, high=600_000,
    )] = None
    nest_depth: Annotated[int, Knob(
        "--nest-depth",
        "acquires per critical section: 2+ re-acquire while holding (reentrancy, seed 003)",
        low=1, high=16,
    )] = 1
    seed: Annotated[int, Knob("--seed", "the seed of the fault schedule and the clients")] = 1
    stop_on_first: Annotated[bool, Knob(
        "--stop-on-first", "end the run at its first violation at or above --fail-on, once "
        "every requested fault has had an effect on the lock (a lock wedged for good is "
        "judged at the run's end: until then it is an outage in progress)"
    )] = False
    fail_on: Annotated[str, Knob(
        "--fail-on", "hard, data, liveness, fairness or soft", choices=VIOLATION_KINDS
    )] = "hard"
    allow_inconclusive: Annotated[bool, Knob(
        "--allow-inconclusive",
        "exit 0, not 3, when the run did not exercise the lock (never acquired, …)",
    )] = False
    capacity: Annotated[int | None, Knob(
        "--capacity", "permits of a semaphore: how many holds (of one permit) it grants at "
        "once (default: the lock's own; a mutex has 1)", low=1, high=1000,
    )] = None
    extend_during_work: Annotated[bool | None, Knob(
        "--extend-during-work",
        "holders call extend() every TTL/3 of work (default: when the lock has one)",
        off="--no-extend-during-work",
    )] = None
    renews: Annotated[bool, Knob(
        "--renews", "hold the lock to renewing its leases in the background (a watchdog): a "
        "lease that lapses while its holder runs and its links are up is hard (bundled "
        "renewing locks and drivers declare it themselves; the audit finds it out)",
    )] = False

    @classmethod
    def from_options(cls, lock: str, faults: str = "", **options: Any) -> Campaign:
        """The campaign that command-line values describe (``faults`` as ``--faults`` spells
        it, ``nodes`` 0 for "what the lock needs", ``provider_config`` a path: each field as
        its ``Knob`` reads it), the one translation for the commands, the pytest plugin and
        ``compare``'s cells. ``UsageError`` for an unknown fault or option; nothing else is
        checked here: ``validate`` does that, before anything starts."""
        values = {"lock": lock, "faults": faults, **options}
        unknown = sorted(set(values) - set(KNOBS))
        if unknown:
            raise UsageError(f"a campaign has no option {unknown[0]!r}")
        read = {name: KNOBS[name].parse or (lambda value: value) for name in values}
        return cls(**{name: read[name](value) for name, value in values.items()})

    @property
    def holder_work_ms(self) -> float:
        """How long a holder works: ``work_ms``, or by default ``WORK_TTL_SHARE`` of the TTL,
        so a longer TTL does not shrink the window in which faults can hit a holder — and a
        whole TTL for a lock that declares background renewals, so that its watchdog (which
        renews every third of the TTL or so) really renews: a run in which it never did has
        not tested it (``chaos.checker.exercised``)."""
        if self.work_ms is not None:
            return self.work_ms
        share = RENEWING_WORK_TTL_SHARE if self.lock_renews else WORK_TTL_SHARE
        return share * self.ttl_ms

    @cached_property
    def lock_spec(self) -> LockSpec:
        """The lock ``lock`` names, resolved (``chaos.lockspec.resolve``: its factory loaded,
        its declaration read; ``UsageError`` if it names none): once per campaign, which
        hands it to its clients (``workload``) and answers from it what the lock has and
        needs. (A copy, ``msgspec.structs.replace``, resolves its own: cheap, Python keeps
        the modules it imported and a driver's ``describe`` is asked once per process.)"""
        return resolve(self.lock)

    @property
    def lock_renews(self) -> bool:
        """Whether the lock is held to renewing in the background: its catalog entry (or a
        driver's ``describe``) says it renews, or the campaign does (``--renews``: a user's
        ``module:attr`` lock declares nothing; the audit sets it when its warm-up saw
        renewals)."""
        return self.renews or self.lock_spec.renews

    def validate(self) -> None:
        """``UsageError`` (one line) for anything a run of this campaign would refuse: its
        knobs, its faults, its lock (resolved: ``lock_spec``) against the faults and
        ``--capacity``, the provider, and last the topology they need (``choose_layout``)."""
        for name, knob in KNOBS.items():
            knob.check(getattr(self, name))
        for name, overrides in self.faults:  # built without parse_faults (the API, compare)
            FAULTS[name].check_params(overrides)
        spec = self.lock_spec
        self._check_capacity(spec)
        if self.faults_in_order and len(self.faults) < 2:
            raise UsageError("--faults-in-order needs two faults or more in --faults: with "
                             f"{len(self.faults) or 'none'}, there is no order to keep")
        spec.check_faults(self.fault_objects)
        spec.check_ttl(self.ttl_ms)
        check_provider(
            self.provider,
            config=self.provider_config_path,
            faults=self.fault_objects,
            server=self.server,
        )
        choose_layout(self)

    def _check_capacity(self, spec: LockSpec) -> None:
        """``UsageError`` (one line) for ``--capacity`` on a lock that has no permits to count:
        a mutex (1, always), or a lock whose shared holds are unbounded (a read-write lock)."""
        info = spec.info
        if self.capacity is None:
            return
        own = 1 if info is None else info.capacity
        if own is None:
            raise UsageError(f"lock {self.lock!r} grants shared holds without a limit: "
                             f"--capacity does not apply (got {self.capacity})")
        if (info is None or info.mutex) and self.capacity != 1:
            raise UsageError(f"lock {self.lock!r} is a mutex: --capacity must be 1 "
                             f"(got {self.capacity})")

    def options(self, names: Sequence[str] | None = None) -> list[str]:
        """The command-line words that give this campaign's ``names`` (default: every field),
        in declaration order: ``lockchaos run`` parses them back into this campaign."""
        chosen = KNOBS if names is None else {name: KNOBS[name] for name in names}
        return [word for name, knob in chosen.items() for word in knob.words(getattr(self, name))]

    def workload(self, client_clocks: str | None = None) -> WorkloadConfig:
        """What every client process of a run of this campaign does (``client_clocks``: the
        directory of their clock files when a fault moves client clocks): the one way to a
        ``WorkloadConfig`` (the workload's own settings — retries, timeouts, the key — a
        caller that needs others replaces on it, as the Compose demo's retry does)."""
        return WorkloadConfig(
            lock=self.lock_spec,
            ttl_ms=self.ttl_ms,
            work_ms=self.holder_work_ms,
            duration_s=self.duration_s,
            extend_during_work=self.extend_during_work is not False,
            client_clocks=client_clocks,
            nest_depth=self.nest_depth,
            renews=self.lock_renews,
            **self._shape(),
        )

    def _shape(self) -> dict[str, Any]:
        """What the lock grants, for the workload: its catalog entry's capacity (or the run's
        ``--capacity``), modes and fairness (a user's ``module:attr`` lock, what its factory
        declares: a mutex if nothing)."""
        info = self.lock_spec.info
        if info is None:
            return {}
        capacity = self.capacity if self.capacity is not None else info.capacity
        return {"capacity": capacity, "modes": info.modes, "fair": info.fair,
                "max_permits": info.max_permits}

    @property
    def provider_config_path(self) -> Path | None:
        return Path(self.provider_config) if self.provider_config else None

    @property
    def fault_objects(self) -> list[Fault]:
        return [FAULTS[name] for name in self.fault_names]

    @property
    def fault_names(self) -> list[str]:
        return [name for name, _ in self.faults]


def _knobs() -> Iterator[tuple[str, Knob]]:
    hints = get_type_hints(Campaign, include_extras=True)
    for name in Campaign.__struct_fields__:
        (knob,) = (extra for extra in get_args(hints[name])[1:] if isinstance(extra, Knob))
        yield name, knob


KNOBS: dict[str, Knob] = dict(_knobs())  # every field's, in declaration order
DEFAULTS: dict[str, Any] = {  # every field's default (``lock`` has none)
    f.name: f.default if f.default_factory is msgspec.NODEFAULT else f.default_factory()
    for f in msgspec.structs.fields(Campaign)
    if f.default is not msgspec.NODEFAULT or f.default_factory is not msgspec.NODEFAULT
}
