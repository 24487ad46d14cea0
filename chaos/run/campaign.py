"""A campaign: one lock, a set of faults, one seed → a run directory with a verdict.

It picks the topology the lock and its faults need, starts it fresh, plays a seeded schedule
of faults against the workload, and checks the history. Topology, workload and nemesis write
the history; the checker reads only the history: a verdict can always be re-derived from the
run directory with ``lockchaos check-history``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from chaos import checker, locks, topology
from chaos.errors import UsageError
from chaos.history import HistoryError
from chaos.nemesis import FAULTS, Fault, ScheduledNemesis, generate, parse_faults
from chaos.nemesis.schedule import Schedule
from chaos.report import HISTORY, save_verdict, write_run_reports
from chaos.workload import WorkloadConfig, run_workload
from chaos.workload.pool import WorkerPool

TOPOLOGIES = ("auto", *topology.SHAPES)
REDLOCK_NODES = 5
STOP_CHECK_S = 0.5
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
        locks.check_faults(self.lock, self.fault_objects)
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


@dataclass(frozen=True)
class Layout:
    """The topology a campaign runs on."""

    kind: str
    nodes: int
    persistence: str


def choose_layout(campaign: Campaign) -> Layout:
    """The topology the lock and faults need; ``UsageError`` for choices that cannot mix."""
    info = locks.info(campaign.lock)
    needs_masters = info is not None and info.topology == "standalone"
    replicated = [n for n in campaign.fault_names if FAULTS[n].needs == "replicated"]
    if replicated and needs_masters:
        raise UsageError(
            f"{replicated[0]} needs a master with replicas (sentinel or cluster), but "
            f"{campaign.lock} needs independent masters: drop {replicated[0]} or pick a "
            "single-master lock"
        )
    kind = campaign.topology
    if kind == "auto":
        kind = "sentinel" if replicated else "standalone"
    if kind == "standalone" and replicated:
        raise UsageError(
            f"{replicated[0]} needs --topology sentinel or cluster (auto picks sentinel)"
        )
    nodes = campaign.nodes or (REDLOCK_NODES if needs_masters else 1)
    locks.check_topology(campaign.lock, kind, nodes)
    persistence = "none"
    for name in campaign.fault_names:
        if FAULTS[name].persistence != "none":
            persistence = FAULTS[name].persistence
    return Layout(kind, nodes, persistence)


def open_topology(campaign: Campaign, layout: Layout) -> topology.Topology:
    """A fresh running topology in ``layout`` from the campaign's provider (which refuses,
    before starting anything, a fault it cannot do)."""
    return topology.open_provider(
        campaign.provider,
        layout.kind,
        nodes=layout.nodes,
        persistence=layout.persistence,
        config=campaign.provider_config_path,
        faults=campaign.fault_objects,
        server=campaign.server,
        clients=campaign.clients,
    )


def run_dir_for(out: Path, campaign: Campaign) -> Path:
    faults = "+".join(campaign.fault_names) or "no-faults"
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{campaign.lock}-{faults}-s{campaign.seed}")
    return stamped_path(out, slug)


def stamped_path(out: Path, slug: str) -> Path:
    """``out/<YYYYmmdd-HHMMSS>-<slug>``, or with ``-2``, ``-3``… appended where that exists
    (not created here)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out / f"{stamp}-{slug}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = out / f"{stamp}-{slug}-{suffix}"
    return path


@dataclass(frozen=True)
class Outcome:
    run_dir: Path
    verdict: checker.Verdict
    schedule: Schedule
    completed_ops: int
    nemesis_errors: list[str]
    fail_on: str = "hard"
    allow_inconclusive: bool = False

    @property
    def failed(self) -> bool:
        """A violation at or above ``fail_on`` (what a search looks for)."""
        return checker.fails(self.verdict, self.fail_on)

    @property
    def exit_status(self) -> int:
        """0 ok, 1 a violation at or above ``fail_on``, 3 inconclusive (unless allowed)."""
        return checker.exit_status(
            self.verdict, self.fail_on, allow_inconclusive=self.allow_inconclusive
        )


def run_campaign(campaign: Campaign, out: Path, schedule: Schedule | None = None) -> Outcome:
    """Run one campaign on a fresh topology; writes history.jsonl, schedule.json, verdict.json.

    ``schedule`` replaces the one the seed would generate (``run --search`` draws its own).
    A lock that could not start in any client (its factory failed in every one: the workers
    exit at once, so the run ends early) is bad input: ``UsageError``, once the run directory
    holds the evidence."""
    campaign.validate()
    layout = choose_layout(campaign)
    schedule = schedule or generate(
        campaign.faults, seed=campaign.seed, duration_s=campaign.duration_s, ttl_ms=campaign.ttl_ms
    )
    run_dir = run_dir_for(out, campaign)
    run_dir.mkdir(parents=True)
    schedule.save(run_dir / "schedule.json")
    history_path = run_dir / HISTORY
    config = WorkloadConfig(
        lock=campaign.lock,
        ttl_ms=campaign.ttl_ms,
        work_ms=campaign.holder_work_ms,
        duration_s=campaign.duration_s,
        extend_during_work=campaign.extend_during_work is not False,
        client_clocks=_client_clocks(campaign, run_dir),
        nest_depth=campaign.nest_depth,
    )
    nemesis = ScheduledNemesis(schedule)
    params = {
        "faults": campaign.fault_names,
        "schedule": schedule.to_json(),
        "provider": campaign.provider,
        "server": campaign.server,
    }
    with open_topology(campaign, layout) as topo:
        # The images the docker provider ran (name → id): what exactly was tested.
        used_images = dict(getattr(topo, "images", None) or {})
        watcher = _StopOnFirst(history_path, campaign.fail_on) if campaign.stop_on_first else None
        result = run_workload(
            topo,
            config,
            history_path,
            clients=campaign.clients,
            seed=campaign.seed,
            nemesis=nemesis,
            params=params,
            on_start=watcher.watch if watcher else None,
        )
    verdict = checker.check_file(history_path)
    save_verdict(run_dir, verdict)
    (run_dir / "campaign.json").write_text(
        json.dumps(
            # work_ms as the run used it (a quarter of the TTL when not given): the report
            # shows it and the replay command repeats it
            {**asdict(campaign), "work_ms": campaign.holder_work_ms, "layout": asdict(layout),
             "images": used_images}, indent=2
        )
        + "\n"
    )
    write_run_reports(run_dir)  # report.html + junit.xml, from the history and verdict alone
    if verdict.lock_unusable is not None:
        raise UsageError(f"{verdict.lock_unusable} (lock {campaign.lock}; run directory {run_dir})")
    return Outcome(
        run_dir, verdict, schedule, result.completed_ops, nemesis.errors, campaign.fail_on,
        campaign.allow_inconclusive,
    )


def _client_clocks(campaign: Campaign, run_dir: Path) -> str | None:
    """The directory of the clients' clock files when a fault moves client clocks (the
    clients then run under libfaketime: ``chaos.workload.clocks``), else None."""
    if not any(getattr(f, "fakes_client_clocks", False) for f in campaign.fault_objects):
        return None
    directory = run_dir / "clocks"
    directory.mkdir(exist_ok=True)
    return str(directory)


class _StopOnFirst:
    """Checks the history so far every half second and stops the workers at the first
    violation at or above ``fail_on`` (the checker is pure: a partial history is fine)."""

    def __init__(self, history_path: Path, fail_on: str) -> None:
        self.history_path = history_path
        self.fail_on = fail_on

    def watch(self, pool: WorkerPool) -> None:
        thread = threading.Thread(target=self._loop, args=(pool,), name="stop-on-first")
        thread.daemon = True
        thread.start()

    def _loop(self, pool: WorkerPool) -> None:
        deadline = time.monotonic() + pool.config.duration_s + 5
        while time.monotonic() < deadline and not pool.stopping:
            time.sleep(STOP_CHECK_S)
            try:
                verdict = checker.check_file(self.history_path)
            except (HistoryError, OSError):
                # The file or its first event is not written yet (a truncated last line
                # the checker skips itself): try again next tick. Anything else is a bug.
                continue
            if checker.fails(verdict, self.fail_on):
                pool.request_stop()
                return
