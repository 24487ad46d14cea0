"""Running a campaign: one lock, a set of faults, one seed → a run directory with a verdict.

It picks the topology the lock and its faults need, starts it fresh, plays a seeded schedule
of faults against the workload, and checks the history. Topology, workload and nemesis write
the history; the checker reads only the history: a verdict can always be re-derived from the
run directory with ``lockchaos check-history``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chaos import checker
from chaos.campaign import (
    HISTORY,
    SCHEDULE,
    Campaign,
    choose_layout,
    open_topology,
    run_dir_for,
    save_campaign,
)
from chaos.checker.verdict import reaches
from chaos.errors import UsageError
from chaos.history import HistoryError
from chaos.nemesis import ScheduledNemesis, generate
from chaos.nemesis.schedule import Schedule
from chaos.report import save_verdict, write_run_reports
from chaos.workload import run_workload
from chaos.workload.pool import WorkerPool

STOP_CHECK_S = 0.5


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
        campaign.faults, seed=campaign.seed, duration_s=campaign.duration_s,
        ttl_ms=campaign.ttl_ms, in_order=campaign.faults_in_order,
    )
    run_dir = run_dir_for(out, campaign)
    run_dir.mkdir(parents=True)
    schedule.save(run_dir / SCHEDULE)
    history_path = run_dir / HISTORY
    config = campaign.workload(client_clocks=_client_clocks(campaign, run_dir))
    nemesis = ScheduledNemesis(schedule)
    params = {
        "faults": campaign.fault_names,
        "schedule": schedule.to_json(),
        "provider": campaign.provider,
        "server": campaign.server,
    }
    with open_topology(campaign, layout) as topo:
        # The images the docker provider ran (name → id): what exactly was tested.
        used_images = dict(topo.images)
        watcher = (_StopOnFirst(history_path, campaign.fail_on, campaign.fault_names)
                   if campaign.stop_on_first else None)
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
    save_campaign(run_dir, campaign, layout, used_images)
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
    if not any(fault.fakes_client_clocks for fault in campaign.fault_objects):
        return None
    directory = run_dir / "clocks"
    directory.mkdir(exist_ok=True)
    return str(directory)


class _StopOnFirst:
    """Checks the history so far every half second and stops the workers at the first
    violation at or above ``fail_on`` (the checker is pure: a partial history is fine; a lock
    wedged for good is the exception, ``_stops``) once
    each of ``faults`` has had an effect on the lock: a run that stopped at a violation the
    lock made by itself, before a requested fault ever reached it, would say nothing of
    that fault (under load, check-then-set races before its pause point is reached)."""

    def __init__(self, history_path: Path, fail_on: str, faults: Sequence[str]) -> None:
        self.history_path = history_path
        self.fail_on = fail_on
        self.faults = list(faults)

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
            if self._stops(verdict) and self._each_fault_acted(verdict):
                pool.request_stop()
                return

    def _stops(self, verdict: checker.Verdict) -> bool:
        """A violation at or above ``fail_on`` — but not a lock wedged for good: that is an
        outage lasting to the history's end, and in a history still being written it is an
        outage in progress. A lock that grants again a moment later would, stopped there,
        be called wedged, which fails every gate (a late start, or five Redlock clients
        splitting the votes for 2 s on a loaded machine); it is judged when the run ends."""
        return any(not v.wedged and reaches(v.kind, self.fail_on)
                   for v in verdict.violations)

    def _each_fault_acted(self, verdict: checker.Verdict) -> bool:
        return all(name in verdict.coverage and verdict.coverage[name].effective
                   for name in self.faults)
