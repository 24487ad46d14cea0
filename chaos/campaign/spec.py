"""A campaign: what one run is — the lock, its faults and every knob that changes what
happens. ``chaos.experiments`` runs it, ``chaos.explore`` explores with it, and
``campaign.json`` keeps it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from chaos import checker, locks, topology
from chaos.campaign.layout import TOPOLOGIES
from chaos.errors import UsageError
from chaos.nemesis import FAULTS, Fault, parse_faults

WORK_TTL_SHARE = 0.25  # a holder works a quarter of the TTL unless told otherwise


class Options(TypedDict, total=False):
    """The options ``Campaign.from_options`` passes through as they are (their defaults are
    ``Campaign``'s own, so they are written once)."""

    topology: str
    clients: int
    duration_s: float
    ttl_ms: int
    work_ms: float | None
    seed: int
    stop_on_first: bool
    fail_on: str
    allow_inconclusive: bool
    extend_during_work: bool | None
    provider: str
    server: str | None
    nest_depth: int


@dataclass(frozen=True)
class Campaign:
    """What a run is: the lock, its faults and every knob that changes what happens.

    ``campaign.json`` holds it, and the report prints the ``lockchaos run`` command that
    rebuilds it (``chaos.report.run.RunRecord.replay``)."""

    lock: str
    faults: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    topology: str = "auto"
    nodes: int | None = None
    clients: int = 5
    duration_s: float = 20.0
    ttl_ms: int = 200
    work_ms: float | None = None  # None: WORK_TTL_SHARE of the TTL
    seed: int = 1
    stop_on_first: bool = False
    fail_on: str = "hard"
    allow_inconclusive: bool = False  # exit 0, not 3, when the run did not exercise the lock
    extend_during_work: bool | None = None  # None: whenever the lock has extend()
    provider: str = "local"  # who runs the topology: local, docker or external
    provider_config: str | None = None  # the external provider's TOML file
    nest_depth: int = 1  # acquires per critical section (2+: nested, seed 003's reentrancy)
    # The Redis-compatible server (redis-7.0, redis-8.0, valkey-8.1: chaos.topology.images);
    # None: the provider's default. Other than redis-7.0 only the docker provider runs one.
    server: str | None = None

    @classmethod
    def from_options(
        cls,
        lock: str,
        faults: str = "",
        *,
        nodes: int | None = None,
        provider_config: str | os.PathLike[str] | None = None,
        **options: Unpack[Options],
    ) -> Campaign:
        """The campaign that command-line options describe, the one translation from what
        the commands, the pytest plugin and ``compare``'s cells take to a ``Campaign``:
        ``faults`` as ``--faults`` spells it (``a,b:key=value``; ``UsageError`` for an
        unknown fault), ``nodes`` 0 for "what the lock needs", ``provider_config`` a path.
        Nothing else is checked here: ``validate`` does that, before anything starts."""
        return cls(
            lock=lock,
            faults=parse_faults(faults),
            nodes=nodes or None,
            provider_config=str(provider_config) if provider_config else None,
            **options,
        )

    @property
    def holder_work_ms(self) -> float:
        """How long a holder works: ``work_ms``, or by default ``WORK_TTL_SHARE`` of the TTL,
        so a longer TTL does not shrink the window in which faults can hit a holder."""
        return self.work_ms if self.work_ms is not None else WORK_TTL_SHARE * self.ttl_ms

    def validate(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise UsageError(f"--topology must be one of {', '.join(TOPOLOGIES)}")
        if not 1 <= self.clients <= 64:
            raise UsageError(f"--clients must be between 1 and 64 (got {self.clients})")
        if not 0 < self.duration_s <= 3600:
            raise UsageError(f"--duration must be between 0 and 3600 s (got {self.duration_s})")
        if not 10 <= self.ttl_ms <= 600_000:
            raise UsageError(f"--ttl-ms must be between 10 and 600000 (got {self.ttl_ms})")
        if self.work_ms is not None and not 0 <= self.work_ms <= 600_000:
            raise UsageError(f"--work-ms must be between 0 and 600000 (got {self.work_ms})")
        if not 1 <= self.nest_depth <= 16:
            raise UsageError(f"--nest-depth must be between 1 and 16 (got {self.nest_depth})")
        checker.check_fail_on(self.fail_on)
        for name, overrides in self.faults:  # built without parse_faults (the API, compare)
            FAULTS[name].check_params(overrides)
        locks.load(self.lock)
        locks.check_faults(self.lock, self.fault_names)
        topology.check_provider(
            self.provider,
            config=self.provider_config_path,
            faults=self.fault_objects,
            server=self.server,
        )

    @property
    def provider_config_path(self) -> Path | None:
        return Path(self.provider_config) if self.provider_config else None

    @property
    def fault_objects(self) -> list[Fault]:
        return [FAULTS[name] for name in self.fault_names]

    @property
    def fault_names(self) -> list[str]:
        return [name for name, _ in self.faults]
